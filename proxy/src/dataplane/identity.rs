//! A connection's principal from its verified client certificate: the
//! certificate's names (the subject as RFC 4514 writes it, the DNS, URI
//! and email subject alternative names) handed to the cluster's mapping
//! rules (`authentication.mtls`, [`MtlsPrincipals`]).

use std::fmt::Write as _;

use rustls_pki_types::CertificateDer;
use x509_parser::extensions::GeneralName;
use x509_parser::prelude::{FromDer, X509Certificate};
use x509_parser::x509::X509Name;

use super::direction::ConnError;
use crate::config::identity::{Authentication, CertNames, MtlsPrincipals};

/// The principal of a client that completed its handshake with `chain`
/// under `auth`; `None` when it has none and none is required. Refused
/// (the connection closes before anything goes upstream, as a broker closes
/// a connection whose certificate its mapping rules refuse) when `auth`
/// requires one.
pub(super) fn identify(
    auth: &Authentication,
    chain: Option<&[CertificateDer<'_>]>,
) -> Result<Option<String>, ConnError> {
    let Some(rules) = auth.mtls.as_ref() else {
        // Another source (SASL) finds the principal, after the handshake.
        return Ok(None);
    };
    let found = principal(rules, chain);
    match &found {
        Some(p) => tracing::debug!(principal = %p, "client identified"),
        None if auth.required => {
            let subject = chain
                .and_then(|c| c.first())
                .and_then(cert_names)
                .map_or_else(|| "no certificate".to_owned(), |n| n.subject);
            return Err(ConnError::NoPrincipal(subject));
        }
        None => {}
    }
    Ok(found)
}

/// The principal of a client that presented `chain` (its certificate
/// first, already verified by the handshake); `None` when it presented
/// none, or no rule maps it.
pub(super) fn principal(
    rules: &MtlsPrincipals,
    chain: Option<&[CertificateDer<'_>]>,
) -> Option<String> {
    let leaf = chain?.first()?;
    rules.principal(&cert_names(leaf)?)
}

/// The names mapping rules read, of a DER certificate.
pub(super) fn cert_names(der: &CertificateDer<'_>) -> Option<CertNames> {
    let (_, cert) = X509Certificate::from_der(der).ok()?;
    let mut names = CertNames {
        subject: rfc4514(cert.subject()),
        ..CertNames::default()
    };
    if let Ok(Some(san)) = cert.subject_alternative_name() {
        for name in &san.value.general_names {
            match name {
                GeneralName::DNSName(n) => names.dns.push((*n).to_owned()),
                GeneralName::URI(n) => names.uri.push((*n).to_owned()),
                GeneralName::RFC822Name(n) => names.email.push((*n).to_owned()),
                _ => {}
            }
        }
    }
    Some(names)
}

/// The short names RFC 4514 gives attribute types; others are written as
/// their dotted OID.
const SHORT_NAMES: &[(&str, &str)] = &[
    ("2.5.4.3", "CN"),
    ("2.5.4.7", "L"),
    ("2.5.4.8", "ST"),
    ("2.5.4.10", "O"),
    ("2.5.4.11", "OU"),
    ("2.5.4.6", "C"),
    ("2.5.4.9", "STREET"),
    ("0.9.2342.19200300.100.1.25", "DC"),
    ("0.9.2342.19200300.100.1.1", "UID"),
];

/// A distinguished name as RFC 4514 (and Kafka's `X500Principal.getName`)
/// writes it: the last RDN first, RDNs joined by `,` and the attributes of
/// one RDN by `+`, special characters escaped.
fn rfc4514(name: &X509Name<'_>) -> String {
    let mut out = String::new();
    let rdns: Vec<_> = name.iter_rdn().collect();
    for (i, rdn) in rdns.iter().rev().enumerate() {
        if i > 0 {
            out.push(',');
        }
        for (j, attr) in rdn.iter().enumerate() {
            if j > 0 {
                out.push('+');
            }
            let oid = attr.attr_type().to_id_string();
            match SHORT_NAMES.iter().find(|(id, _)| *id == oid) {
                Some((_, short)) => out.push_str(short),
                None => out.push_str(&oid),
            }
            out.push('=');
            match attr.as_str() {
                Ok(value) => escape(value, &mut out),
                // Not a string: its BER bytes in hex, as RFC 4514 says.
                Err(_) => {
                    out.push('#');
                    for b in attr.attr_value().data.iter() {
                        let _ = write!(out, "{b:02x}");
                    }
                }
            }
        }
    }
    out
}

/// Escapes an attribute value (RFC 4514, section 2.4).
fn escape(value: &str, out: &mut String) {
    let last = value.chars().count().saturating_sub(1);
    for (i, c) in value.chars().enumerate() {
        let special = matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';')
            || (i == 0 && (c == '#' || c == ' '))
            || (i == last && c == ' ');
        if special {
            out.push('\\');
        }
        if c == '\0' {
            out.push_str("\\00");
        } else {
            out.push(c);
        }
    }
}

#[cfg(test)]
mod tests {
    use rcgen::{CertificateParams, DistinguishedName, DnType, KeyPair, SanType};

    use super::*;
    use crate::config::identity::{Case, NameSource, PrincipalRule};

    fn cert(dn: &[(DnType, &str)], sans: Vec<SanType>) -> CertificateDer<'static> {
        let mut params = CertificateParams::default();
        let mut name = DistinguishedName::new();
        for (t, v) in dn {
            name.push(t.clone(), *v);
        }
        params.distinguished_name = name;
        params.subject_alt_names = sans;
        let key = KeyPair::generate().expect("a key");
        params
            .self_signed(&key)
            .expect("a certificate")
            .der()
            .clone()
    }

    #[test]
    fn the_subject_reads_as_rfc_4514_most_specific_first_and_sans_by_kind() {
        let der = cert(
            &[
                (DnType::OrganizationName, "Example, Inc"),
                (DnType::OrganizationalUnitName, "orders"),
                (DnType::CommonName, "alice"),
            ],
            vec![
                SanType::DnsName("alice.orders.svc".try_into().unwrap()),
                SanType::URI(
                    "spiffe://example.org/ns/orders/sa/writer"
                        .try_into()
                        .unwrap(),
                ),
                SanType::Rfc822Name("alice@example.org".try_into().unwrap()),
            ],
        );
        let names = cert_names(&der).expect("a certificate");
        assert_eq!(names.subject, "CN=alice,OU=orders,O=Example\\, Inc");
        assert_eq!(names.dns, ["alice.orders.svc"]);
        assert_eq!(names.uri, ["spiffe://example.org/ns/orders/sa/writer"]);
        assert_eq!(names.email, ["alice@example.org"]);
    }

    #[test]
    fn a_chain_maps_by_its_first_certificate_and_no_chain_to_no_principal() {
        let rules = MtlsPrincipals {
            rules: vec![
                PrincipalRule::new(
                    NameSource::Subject,
                    Some("CN=([^,]+),.*"),
                    "$1",
                    Case::Upper,
                )
                .unwrap(),
            ],
        };
        let alice = cert(
            &[
                (DnType::OrganizationName, "E"),
                (DnType::CommonName, "alice"),
            ],
            Vec::new(),
        );
        let other = cert(&[(DnType::CommonName, "bob")], Vec::new());
        assert_eq!(
            principal(&rules, Some(&[alice, other.clone()])).as_deref(),
            Some("ALICE")
        );
        // bob's subject is "CN=bob": the rule wants more after the CN.
        assert_eq!(principal(&rules, Some(&[other])), None);
        assert_eq!(principal(&rules, None), None);
        assert_eq!(principal(&rules, Some(&[])), None);
    }
}
