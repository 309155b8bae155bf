//! Certificates made for one test run with rcgen: a CA, a server pair for
//! `localhost`/127.0.0.1, and a client pair, written as PEM files.

use std::path::{Path, PathBuf};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};

/// PEM files in a directory.
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
/// (it goes into the server certificate's common name).
pub fn make(dir: &Path, tag: &str) -> Pki {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, format!("sluice test CA {tag}"));
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);

    let leaf = |names: Vec<String>, cn: &str| {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(names).unwrap();
        params.distinguished_name.push(DnType::CommonName, cn);
        let cert = params.signed_by(&key, &issuer).unwrap();
        (cert.pem(), key.serialize_pem())
    };
    let (server_cert, server_key) = leaf(
        vec!["localhost".into(), "127.0.0.1".into()],
        &format!("server {tag}"),
    );
    let (client_cert, client_key) = leaf(vec!["client.local".into()], "client");
    let write = |name: &str, pem: &str| {
        let path = dir.join(name);
        std::fs::write(&path, pem).unwrap();
        path
    };
    Pki {
        ca: write("ca.pem", &ca_cert.pem()),
        server_cert: write("server.crt", &server_cert),
        server_key: write("server.key", &server_key),
        client_cert: write("client.crt", &client_cert),
        client_key: write("client.key", &client_key),
    }
}
