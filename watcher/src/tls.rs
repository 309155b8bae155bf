//! HTTPS towards admin APIs (the proxy's with `admin.tls`): which CA to
//! trust (`--proxy-ca`, else the platform's roots) and which scheme peers
//! found by DNS are asked with. One crypto provider (ring), passed
//! explicitly; TLS 1.2 and 1.3.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::RootCertStore;
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;

/// Why `--proxy-ca` cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ProxyCaError {
    /// The file cannot be read.
    #[error("cannot read the proxy CA file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// It holds no certificate rustls accepts as a trust anchor.
    #[error("{path}: no usable PEM CA certificate{reason}")]
    NoCertificate {
        /// The file.
        path: PathBuf,
        /// What the parser said, if anything.
        reason: String,
    },
    /// rustls refused the settings.
    #[error("tls client settings: {0}")]
    Rustls(#[from] rustls::Error),
}

/// How admin APIs are reached: the CA trusted for HTTPS and whether peers
/// found by DNS are asked over HTTPS. The default: plain HTTP for DNS
/// peers, the platform's roots for `https://` URLs.
#[derive(Debug, Clone, Default)]
pub struct ProxyTls {
    client: Option<Arc<rustls::ClientConfig>>,
    https: bool,
}

impl ProxyTls {
    /// For `--proxy URL` and `--proxy-ca FILE`: HTTPS for DNS peers when
    /// `proxy` is `https://…` or a CA is given; the CA, when given, is the
    /// only one trusted.
    pub fn new(proxy: &str, ca: Option<&Path>) -> Result<ProxyTls, ProxyCaError> {
        let https = proxy.starts_with("https://") || ca.is_some();
        let client = match ca {
            None => None,
            Some(path) => Some(Arc::new(client_config(path)?)),
        };
        Ok(ProxyTls { client, https })
    }

    /// The scheme of a peer known only by its address.
    pub fn scheme(&self) -> &'static str {
        if self.https { "https" } else { "http" }
    }

    /// `builder` trusting the CA, when one is given; else the platform's
    /// roots through the process's default provider, ring, installed here
    /// if no one installed it yet (so a library caller never meets
    /// reqwest's panic for want of a provider).
    pub(crate) fn apply(&self, builder: reqwest::ClientBuilder) -> reqwest::ClientBuilder {
        match &self.client {
            Some(config) => builder.tls_backend_preconfigured(rustls::ClientConfig::clone(config)),
            None => {
                // Err only when a provider is installed already: fine.
                let _ = rustls::crypto::ring::default_provider().install_default();
                builder
            }
        }
    }
}

fn client_config(path: &Path) -> Result<rustls::ClientConfig, ProxyCaError> {
    let pem = std::fs::read(path).map_err(|source| ProxyCaError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let no_cert = |reason: String| ProxyCaError::NoCertificate {
        path: path.to_path_buf(),
        reason,
    };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<_, _>>()
        .map_err(|e| no_cert(format!(": {e}")))?;
    let mut roots = RootCertStore::empty();
    for cert in certs {
        roots.add(cert).map_err(|e| no_cert(format!(": {e}")))?;
    }
    if roots.is_empty() {
        return Err(no_cert(String::new()));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn https_for_dns_peers_follows_the_proxy_url_or_a_ca() {
        assert_eq!(ProxyTls::default().scheme(), "http");
        let plain = ProxyTls::new("http://127.0.0.1:9190", None).expect("no CA");
        assert_eq!(plain.scheme(), "http");
        let https = ProxyTls::new("https://127.0.0.1:9190", None).expect("no CA");
        assert_eq!(https.scheme(), "https");
    }

    #[test]
    fn a_ca_file_must_hold_a_pem_certificate() {
        let dir = tempfile::tempdir().expect("dir");
        let missing = dir.path().join("missing.pem");
        let e = ProxyTls::new("https://a:1", Some(&missing)).unwrap_err();
        assert!(matches!(e, ProxyCaError::Read { .. }), "{e}");
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "no PEM here\n").expect("write");
        let e = ProxyTls::new("https://a:1", Some(&empty)).unwrap_err();
        assert!(
            e.to_string().contains("no usable PEM CA certificate"),
            "{e}"
        );
        let ca = dir.path().join("ca.pem");
        let pem = sluice_testkit::certs::Ca::new("admin CA").pem;
        std::fs::write(&ca, pem).expect("write");
        let tls = ProxyTls::new("", Some(&ca)).expect("a CA");
        assert_eq!(tls.scheme(), "https");
        assert!(tls.client.is_some());
    }
}
