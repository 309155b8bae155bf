//! Making certificates with rcgen, and carrying out a planned [`Step`]:
//! a pure function of the material, the hosts, the lifetimes and the time.

use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use x509_parser::certificate::X509Certificate;
use x509_parser::time::ASN1Time;

use super::{Material, MaterialError, Pem, Retired, der, validity, x509};
use crate::selfsigned::plan::Step;

/// How long certificates live. Each is renewed at two thirds of its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lifetimes {
    serving: Duration,
    ca: Duration,
}

/// The shortest serving lifetime: renewals must not come faster than the
/// API server can take them.
const MIN_SERVING: Duration = Duration::from_secs(3);

impl Lifetimes {
    /// Checks the pair: serving at least 3 s, and the CA at least
    /// three serving lifetimes, so that the last serving certificate an old
    /// CA signs expires before that CA does.
    pub fn try_new(serving: Duration, ca: Duration) -> Result<Lifetimes, String> {
        if serving < MIN_SERVING {
            return Err(format!(
                "the serving certificate's lifetime must be at least {}s",
                MIN_SERVING.as_secs()
            ));
        }
        if ca < serving.saturating_mul(3) {
            return Err(
                "the CA's lifetime must be at least three times the serving certificate's"
                    .to_owned(),
            );
        }
        Ok(Lifetimes { serving, ca })
    }

    /// The serving certificate's lifetime.
    pub fn serving(&self) -> Duration {
        self.serving
    }

    /// The CA's lifetime.
    pub fn ca(&self) -> Duration {
        self.ca
    }
}

/// Fails unless every host can go into a certificate (a DNS name or an IP
/// address), so a typo stops the start instead of every renewal.
pub fn check_hosts(hosts: &[String]) -> Result<(), String> {
    if hosts.is_empty() || hosts.iter().any(|h| h.trim().is_empty()) {
        return Err("give at least one host name, and no empty ones".to_owned());
    }
    CertificateParams::new(hosts.to_vec())
        .map(|_| ())
        .map_err(|e| format!("{hosts:?} cannot name a certificate: {e}"))
}

impl Material {
    /// A new CA and a serving certificate it signs for `hosts`.
    pub fn create(
        hosts: &[String],
        lifetimes: Lifetimes,
        now: i64,
    ) -> Result<Material, MaterialError> {
        let ca = new_ca(now, lifetimes.ca)?;
        let serving = sign(&ca, hosts, now, lifetimes.serving)?;
        Ok(Material {
            ca,
            serving,
            next_ca: None,
            previous: None,
        })
    }

    /// The material after `step`.
    pub fn apply(
        &self,
        step: Step,
        hosts: &[String],
        lifetimes: Lifetimes,
        now: i64,
    ) -> Result<Material, MaterialError> {
        let mut out = self.clone();
        match step {
            Step::Create => return Material::create(hosts, lifetimes, now),
            Step::RenewServing => out.serving = sign(&self.ca, hosts, now, lifetimes.serving)?,
            Step::AnnounceCa => out.next_ca = Some(new_ca(now, lifetimes.ca)?),
            Step::PromoteCa => {
                let next = self
                    .next_ca
                    .clone()
                    .ok_or(MaterialError::Missing("next-ca.crt"))?;
                out.serving = sign(&next, hosts, now, lifetimes.serving)?;
                out.previous = Some(Retired {
                    ca_cert: self.ca.cert.clone(),
                    serving_cert: self.serving.cert.clone(),
                });
                out.ca = next;
                out.next_ca = None;
            }
            Step::RetirePrevious => out.previous = None,
        }
        Ok(out)
    }
}

/// Fails unless `key_pem` is the private key of `cert`.
pub(super) fn check_key(
    key: &'static str,
    cert: &X509Certificate<'_>,
    key_pem: &str,
) -> Result<(), MaterialError> {
    let pair = KeyPair::from_pem(key_pem).map_err(|e| MaterialError::Key {
        key,
        reason: e.to_string(),
    })?;
    if pair.public_key_raw() != cert.public_key().subject_public_key.data.as_ref() {
        return Err(MaterialError::Key {
            key,
            reason: "the key does not belong to the certificate".to_owned(),
        });
    }
    Ok(())
}

fn issue_error(e: impl std::fmt::Display) -> MaterialError {
    MaterialError::Issue(e.to_string())
}

/// Until `now + lifetime` (never past `cap`), as certificate times (x509
/// counts seconds). Valid from a little before `now`, a tenth of the
/// lifetime and at most a minute, so that a caller whose clock is a little
/// behind does not see a certificate that is not valid yet.
fn period(
    now: i64,
    lifetime: Duration,
    cap: Option<i64>,
) -> Result<CertificateParams, MaterialError> {
    let secs = i64::try_from(lifetime.as_secs()).map_err(issue_error)?;
    let end = now.saturating_add(secs).min(cap.unwrap_or(i64::MAX));
    let start = now.saturating_sub((secs / 10).min(60));
    let mut params = CertificateParams::default();
    params.not_before = ASN1Time::from_timestamp(start)
        .map_err(issue_error)?
        .to_datetime();
    params.not_after = ASN1Time::from_timestamp(end)
        .map_err(issue_error)?
        .to_datetime();
    Ok(params)
}

fn new_ca(now: i64, lifetime: Duration) -> Result<Pem, MaterialError> {
    let key = KeyPair::generate().map_err(issue_error)?;
    let mut params = period(now, lifetime, None)?;
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params
        .distinguished_name
        .push(DnType::CommonName, format!("sluice-webhook CA {now}"));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let cert = params.self_signed(&key).map_err(issue_error)?;
    Ok(Pem {
        cert: cert.pem(),
        key: key.serialize_pem(),
    })
}

/// A serving certificate signed by `ca` for `hosts`; it never outlives `ca`.
fn sign(ca: &Pem, hosts: &[String], now: i64, lifetime: Duration) -> Result<Pem, MaterialError> {
    let ca_der = der("signing-ca.crt", &ca.cert)?;
    let ca_end = validity(&x509("signing-ca.crt", &ca_der)?).not_after;
    let ca_key = KeyPair::from_pem(&ca.key).map_err(issue_error)?;
    let issuer = Issuer::from_ca_cert_pem(&ca.cert, ca_key).map_err(issue_error)?;
    let key = KeyPair::generate().map_err(issue_error)?;
    let mut params = period(now, lifetime, Some(ca_end))?;
    let named = CertificateParams::new(hosts.to_vec()).map_err(issue_error)?;
    params.subject_alt_names = named.subject_alt_names;
    let common_name = hosts.first().map_or("sluice-webhook", String::as_str);
    params
        .distinguished_name
        .push(DnType::CommonName, common_name);
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.use_authority_key_identifier_extension = true;
    let cert = params.signed_by(&key, &issuer).map_err(issue_error)?;
    Ok(Pem {
        cert: cert.pem(),
        key: key.serialize_pem(),
    })
}
