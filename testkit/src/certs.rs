//! A test CA and the certificates it signs, made with rcgen for one test
//! run: server pairs for `localhost`/127.0.0.1 (with a chosen serial number,
//! so a test can tell which pair a server presents), client pairs, and
//! self-signed pairs.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose, SanType,
    SerialNumber,
};

/// A certificate and its private key, PEM.
#[derive(Debug, Clone)]
pub struct Leaf {
    /// The certificate.
    pub cert: String,
    /// Its private key.
    pub key: String,
}

impl Leaf {
    /// Writes both to `dir` under these names; returns their paths.
    pub fn write(&self, dir: &Path, cert: &str, key: &str) -> (PathBuf, PathBuf) {
        (write(dir, cert, &self.cert), write(dir, key, &self.key))
    }
}

/// A CA that signs leaf certificates.
pub struct Ca {
    issuer: Issuer<'static, KeyPair>,
    /// The CA certificate, PEM.
    pub pem: String,
}

impl std::fmt::Debug for Ca {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ca").finish_non_exhaustive()
    }
}

impl Ca {
    /// A new CA named `name` (its common name).
    pub fn new(name: &str) -> Ca {
        let key = KeyPair::generate().expect("CA key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let cert = params.self_signed(&key).expect("CA certificate");
        Ca {
            pem: cert.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    /// A certificate for `names` (DNS names or IP addresses) with this
    /// common name, and this serial number when one is given.
    pub fn sign(&self, names: &[&str], common_name: &str, serial: Option<u64>) -> Leaf {
        self.issue(leaf_params(names, serial), common_name)
    }

    fn issue(&self, mut params: CertificateParams, common_name: &str) -> Leaf {
        let key = KeyPair::generate().expect("leaf key");
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        let cert = params
            .signed_by(&key, &self.issuer)
            .expect("leaf certificate");
        Leaf {
            cert: cert.pem(),
            key: key.serialize_pem(),
        }
    }

    /// A server certificate for `localhost` and 127.0.0.1 with this serial,
    /// valid from an hour ago until `lifetime` from now.
    pub fn server_expiring(&self, common_name: &str, serial: u64, lifetime: Duration) -> Leaf {
        let mut params = leaf_params(&["localhost", "127.0.0.1"], Some(serial));
        let now = time::OffsetDateTime::now_utc();
        params.not_before = now - time::Duration::HOUR;
        params.not_after = now + lifetime;
        self.issue(params, common_name)
    }

    /// A client certificate whose subject is `CN=common_name,OU=unit,O=Sluice
    /// tests` (RFC 4514 order), with `uris` as URI subject alternative names
    /// (SPIFFE ids, say).
    pub fn client(&self, common_name: &str, unit: &str, uris: &[&str]) -> Leaf {
        let mut params = CertificateParams::default();
        // Most general first in the certificate: O, OU, then the CN.
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(DnType::OrganizationName, "Sluice tests");
        params
            .distinguished_name
            .push(DnType::OrganizationalUnitName, unit);
        params.subject_alt_names = uris
            .iter()
            .map(|u| SanType::URI((*u).try_into().expect("a URI")))
            .collect();
        self.issue(params, common_name)
    }

    /// A server certificate for `localhost` and 127.0.0.1 with this serial.
    pub fn server(&self, common_name: &str, serial: u64) -> Leaf {
        self.sign(&["localhost", "127.0.0.1"], common_name, Some(serial))
    }

    /// Writes the CA certificate to `dir/name`; returns its path.
    pub fn write(&self, dir: &Path, name: &str) -> PathBuf {
        write(dir, name, &self.pem)
    }
}

/// A self-signed certificate for `names`, with this serial when one is given.
pub fn self_signed(names: &[&str], serial: Option<u64>) -> Leaf {
    let key = KeyPair::generate().expect("key");
    let cert = leaf_params(names, serial)
        .self_signed(&key)
        .expect("certificate");
    Leaf {
        cert: cert.pem(),
        key: key.serialize_pem(),
    }
}

fn leaf_params(names: &[&str], serial: Option<u64>) -> CertificateParams {
    let names = names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>();
    let mut params = CertificateParams::new(names).expect("certificate params");
    params.serial_number = serial.map(SerialNumber::from);
    params
}

fn write(dir: &Path, name: &str, pem: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, pem).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    path
}

/// A CA, a server pair and a client pair, as PEM files in a directory.
#[derive(Debug, Clone)]
pub struct Pki {
    /// The CA certificate.
    pub ca: PathBuf,
    /// Server certificate (SANs localhost, 127.0.0.1).
    pub server_cert: PathBuf,
    /// Its key.
    pub server_key: PathBuf,
    /// Client certificate signed by the CA.
    pub client_cert: PathBuf,
    /// Its key.
    pub client_key: PathBuf,
}

/// Makes a CA and two leaf pairs in `dir`; `tag` distinguishes generations
/// (it goes into the CA's and the server certificate's common names).
pub fn make(dir: &Path, tag: &str) -> Pki {
    let ca = Ca::new(&format!("sluice test CA {tag}"));
    let server = ca.sign(&["localhost", "127.0.0.1"], &format!("server {tag}"), None);
    let client = ca.sign(&["client.local"], "client", None);
    let (server_cert, server_key) = server.write(dir, "server.crt", "server.key");
    let (client_cert, client_key) = client.write(dir, "client.crt", "client.key");
    Pki {
        ca: ca.write(dir, "ca.pem"),
        server_cert,
        server_key,
        client_cert,
        client_key,
    }
}
