//! The certificates and keys the Secret holds, read from and written to its
//! `data`, checked, and summarised as a [`View`] for planning. No I/O: the
//! Secret's data comes in and goes out as a map.
//!
//! | key | what |
//! |---|---|
//! | `tls.crt`, `tls.key` | the serving certificate and its key |
//! | `ca.crt` | the caBundle: every CA a client must trust now (written, never read) |
//! | `signing-ca.crt`, `signing-ca.key` | the CA that signs serving certificates |
//! | `next-ca.crt`, `next-ca.key` | a CA in the bundle that signs from the next renewal on |
//! | `previous-ca.crt`, `previous-tls.crt` | the CA rotated out, still in the bundle until the last serving certificate it signed (`previous-tls.crt`) expires |

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::GeneralName;

use super::plan::{self, Validity, View};

mod issue;

pub use issue::{Lifetimes, check_hosts};

/// A certificate and its private key, PEM.
#[derive(Clone, PartialEq, Eq)]
pub struct Pem {
    /// The certificate.
    pub cert: String,
    /// Its private key.
    pub key: String,
}

impl std::fmt::Debug for Pem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pem").finish_non_exhaustive()
    }
}

/// A CA rotated out, and the last serving certificate it signed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retired {
    /// The CA certificate, PEM.
    pub ca_cert: String,
    /// The serving certificate, PEM; the CA is trusted until it expires.
    pub serving_cert: String,
}

/// Everything the Secret holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Material {
    /// The CA that signs serving certificates.
    pub ca: Pem,
    /// The serving certificate and key.
    pub serving: Pem,
    /// An announced CA.
    pub next_ca: Option<Pem>,
    /// The CA rotated out, while still trusted.
    pub previous: Option<Retired>,
}

/// Why the Secret's content cannot be used (it is then replaced).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MaterialError {
    /// A key the other keys need is missing.
    #[error("the Secret has no {0:?}")]
    Missing(&'static str),
    /// A value is not UTF-8 PEM.
    #[error("{0:?} is not PEM text")]
    NotText(&'static str),
    /// A certificate cannot be parsed.
    #[error("{key:?}: {reason}")]
    Certificate {
        /// The Secret's key.
        key: &'static str,
        /// What the parser said.
        reason: String,
    },
    /// A private key does not belong to its certificate, or cannot be used.
    #[error("{key:?}: {reason}")]
    Key {
        /// The Secret's key.
        key: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// rcgen could not make a certificate.
    #[error("cannot make a certificate: {0}")]
    Issue(String),
}

/// The key of the caBundle in the Secret (the `kubernetes.io/tls` convention).
pub const BUNDLE_KEY: &str = "ca.crt";

impl Material {
    /// Reads the Secret's data; `Ok(None)` when it holds no serving
    /// certificate at all (the empty Secret the manifests create).
    pub fn from_data(
        data: &BTreeMap<String, ByteString>,
    ) -> Result<Option<Material>, MaterialError> {
        if !data.contains_key("tls.crt") {
            return Ok(None);
        }
        let text = |key: &'static str| -> Result<Option<String>, MaterialError> {
            data.get(key)
                .map(|v| String::from_utf8(v.0.clone()).map_err(|_| MaterialError::NotText(key)))
                .transpose()
        };
        let need = |key: &'static str| text(key)?.ok_or(MaterialError::Missing(key));
        let pair = |cert: &'static str, key: &'static str| -> Result<Pem, MaterialError> {
            Ok(Pem {
                cert: need(cert)?,
                key: need(key)?,
            })
        };
        let next_ca = match text("next-ca.crt")? {
            Some(_) => Some(pair("next-ca.crt", "next-ca.key")?),
            None => None,
        };
        let previous = match text("previous-ca.crt")? {
            Some(ca_cert) => Some(Retired {
                ca_cert,
                serving_cert: need("previous-tls.crt")?,
            }),
            None => None,
        };
        Ok(Some(Material {
            ca: pair("signing-ca.crt", "signing-ca.key")?,
            serving: pair("tls.crt", "tls.key")?,
            next_ca,
            previous,
        }))
    }

    /// The Secret's data for this material, the caBundle included.
    pub fn to_data(&self) -> BTreeMap<String, ByteString> {
        let mut data = BTreeMap::new();
        let mut put = |key: &str, value: &str| {
            data.insert(key.to_owned(), ByteString(value.as_bytes().to_vec()));
        };
        put("tls.crt", &self.serving.cert);
        put("tls.key", &self.serving.key);
        put("signing-ca.crt", &self.ca.cert);
        put("signing-ca.key", &self.ca.key);
        if let Some(next) = &self.next_ca {
            put("next-ca.crt", &next.cert);
            put("next-ca.key", &next.key);
        }
        if let Some(previous) = &self.previous {
            put("previous-ca.crt", &previous.ca_cert);
            put("previous-tls.crt", &previous.serving_cert);
        }
        put(BUNDLE_KEY, &self.bundle());
        data
    }

    /// The caBundle: every CA a client must trust now.
    pub fn bundle(&self) -> String {
        plan::bundle(
            &self.ca.cert,
            self.next_ca.as_ref().map(|n| n.cert.as_str()),
            self.previous.as_ref().map(|p| p.ca_cert.as_str()),
        )
    }

    /// Checks every certificate and key and summarises them for [`plan::plan`].
    /// The serving certificate fits when the signing CA signed it for
    /// exactly `hosts`.
    pub fn view(&self, hosts: &[String]) -> Result<View, MaterialError> {
        let ca_der = der("signing-ca.crt", &self.ca.cert)?;
        let ca = x509("signing-ca.crt", &ca_der)?;
        issue::check_key("signing-ca.key", &ca, &self.ca.key)?;
        let serving_der = der("tls.crt", &self.serving.cert)?;
        let serving = x509("tls.crt", &serving_der)?;
        issue::check_key("tls.key", &serving, &self.serving.key)?;
        let signed = serving.verify_signature(Some(ca.public_key())).is_ok();
        let next_ca = match &self.next_ca {
            Some(next) => {
                let next_der = der("next-ca.crt", &next.cert)?;
                let cert = x509("next-ca.crt", &next_der)?;
                issue::check_key("next-ca.key", &cert, &next.key)?;
                Some(validity(&cert))
            }
            None => None,
        };
        let previous_until = match &self.previous {
            Some(previous) => {
                x509(
                    "previous-ca.crt",
                    &der("previous-ca.crt", &previous.ca_cert)?,
                )?;
                let old = der("previous-tls.crt", &previous.serving_cert)?;
                Some(validity(&x509("previous-tls.crt", &old)?).not_after)
            }
            None => None,
        };
        Ok(View {
            ca: validity(&ca),
            serving: validity(&serving),
            serving_fits: signed && names(&serving) == sorted(hosts),
            next_ca,
            previous_until,
        })
    }
}

fn der(key: &'static str, pem: &str) -> Result<Vec<u8>, MaterialError> {
    use rustls_pki_types::CertificateDer;
    use rustls_pki_types::pem::PemObject as _;
    CertificateDer::from_pem_slice(pem.as_bytes())
        .map(|c| c.to_vec())
        .map_err(|e| MaterialError::Certificate {
            key,
            reason: e.to_string(),
        })
}

fn x509<'a>(key: &'static str, der: &'a [u8]) -> Result<X509Certificate<'a>, MaterialError> {
    x509_parser::parse_x509_certificate(der)
        .map(|(_, c)| c)
        .map_err(|e| MaterialError::Certificate {
            key,
            reason: e.to_string(),
        })
}

fn validity(cert: &X509Certificate<'_>) -> Validity {
    Validity {
        not_before: cert.validity().not_before.timestamp(),
        not_after: cert.validity().not_after.timestamp(),
    }
}

/// The DNS names and IP addresses a certificate is for, sorted.
fn names(cert: &X509Certificate<'_>) -> Vec<String> {
    let mut out: Vec<String> = match cert.subject_alternative_name() {
        Ok(Some(san)) => san
            .value
            .general_names
            .iter()
            .filter_map(|n| match n {
                GeneralName::DNSName(d) => Some((*d).to_owned()),
                GeneralName::IPAddress(ip) => ip_text(ip),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    out.sort();
    out
}

fn ip_text(bytes: &[u8]) -> Option<String> {
    let ip: std::net::IpAddr = match bytes.len() {
        4 => <[u8; 4]>::try_from(bytes).ok()?.into(),
        16 => <[u8; 16]>::try_from(bytes).ok()?.into(),
        _ => return None,
    };
    Some(ip.to_string())
}

fn sorted(hosts: &[String]) -> Vec<String> {
    let mut out = hosts.to_vec();
    out.sort();
    out
}

#[cfg(test)]
mod tests;
