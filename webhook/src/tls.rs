//! The serving certificate. rustls asks [`CertResolver`] for the pair on
//! every handshake, so swapping it there changes what new handshakes get
//! while connections already open keep theirs. One crypto provider (ring) is
//! used, passed explicitly; TLS 1.2 and 1.3 only.
//!
//! - `rotate`: watching the files and swapping in a new pair that works

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};

use rustls::ServerConfig;
use rustls::crypto::CryptoProvider;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

mod rotate;

pub use rotate::{CertWatch, Rotation, Rotator};

/// Why a certificate and key cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum CertError {
    /// The file cannot be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The certificate file holds no usable certificate.
    #[error("{path}: no PEM certificate: {reason}")]
    NoCertificate {
        /// The file.
        path: PathBuf,
        /// What the PEM parser said.
        reason: String,
    },
    /// The key file holds no usable private key.
    #[error("{path}: no PEM private key: {reason}")]
    NoKey {
        /// The file.
        path: PathBuf,
        /// What the PEM parser said.
        reason: String,
    },
    /// The key is of a kind the crypto provider cannot sign with.
    #[error("{path}: unsupported private key: {source}")]
    UnsupportedKey {
        /// The file.
        path: PathBuf,
        /// What rustls said.
        #[source]
        source: rustls::Error,
    },
    /// The leaf certificate is not X.509 that can be read.
    #[error("{path}: certificate cannot be parsed: {reason}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What the parser said.
        reason: String,
    },
    /// Certificate and key belong to different pairs (caught half-way
    /// through a renewal that writes one file before the other, say).
    #[error(
        "{cert} and {key} do not belong together: the private key does not match the \
         certificate's public key"
    )]
    Mismatch {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
        /// What rustls said.
        #[source]
        source: rustls::Error,
    },
}

/// A certificate chain and its key, checked to match, ready to serve.
#[derive(Clone)]
pub struct LoadedCert {
    /// What rustls serves.
    pub key: Arc<CertifiedKey>,
    /// The leaf's notAfter, in Unix seconds.
    pub not_after: i64,
    /// The leaf's serial number, hex, for logs.
    pub serial: String,
}

impl fmt::Debug for LoadedCert {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoadedCert")
            .field("not_after", &self.not_after)
            .field("serial", &self.serial)
            .finish_non_exhaustive()
    }
}

/// The crypto provider of the whole workspace.
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Reads and checks a pair from files.
pub fn load(cert: &Path, key: &Path) -> Result<LoadedCert, CertError> {
    let read = |path: &Path| {
        std::fs::read(path).map_err(|source| CertError::Read {
            path: path.to_path_buf(),
            source,
        })
    };
    parse(cert, &read(cert)?, key, &read(key)?)
}

/// Checks a pair given as PEM; the paths only name the files in errors.
pub fn parse(
    cert_path: &Path,
    cert_pem: &[u8],
    key_path: &Path,
    key_pem: &[u8],
) -> Result<LoadedCert, CertError> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|e| CertError::NoCertificate {
            path: cert_path.to_path_buf(),
            reason: e.to_string(),
        })?;
    let Some(leaf) = chain.first() else {
        return Err(CertError::NoCertificate {
            path: cert_path.to_path_buf(),
            reason: "the file has no CERTIFICATE section".to_owned(),
        });
    };
    let (_, x509) = x509_parser::parse_x509_certificate(leaf).map_err(|e| CertError::Parse {
        path: cert_path.to_path_buf(),
        reason: e.to_string(),
    })?;
    let not_after = x509.validity().not_after.timestamp();
    let serial = x509.raw_serial_as_string();
    let key_der = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| CertError::NoKey {
        path: key_path.to_path_buf(),
        reason: e.to_string(),
    })?;
    let signing_key = provider()
        .key_provider
        .load_private_key(key_der)
        .map_err(|source| CertError::UnsupportedKey {
            path: key_path.to_path_buf(),
            source,
        })?;
    let certified = CertifiedKey::new(chain, signing_key);
    certified
        .keys_match()
        .map_err(|source| CertError::Mismatch {
            cert: cert_path.to_path_buf(),
            key: key_path.to_path_buf(),
            source,
        })?;
    Ok(LoadedCert {
        key: Arc::new(certified),
        not_after,
        serial,
    })
}

/// Hands rustls the pair in use; [`CertResolver::swap`] replaces it.
#[derive(Debug)]
pub struct CertResolver {
    current: RwLock<Arc<CertifiedKey>>,
}

impl CertResolver {
    /// Serves `key` until swapped.
    pub fn new(key: Arc<CertifiedKey>) -> Self {
        CertResolver {
            current: RwLock::new(key),
        }
    }

    /// New handshakes get `key` from now on.
    pub fn swap(&self, key: Arc<CertifiedKey>) {
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = key;
    }

    /// The pair in use.
    pub fn current(&self) -> Arc<CertifiedKey> {
        Arc::clone(&self.current.read().unwrap_or_else(PoisonError::into_inner))
    }
}

impl ResolvesServerCert for CertResolver {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current())
    }
}

/// The server configuration: TLS 1.2 and 1.3 with ring, no client
/// certificates, HTTP/1.1 offered by ALPN, certificate from `resolver`.
pub fn server_config(resolver: Arc<CertResolver>) -> Result<Arc<ServerConfig>, rustls::Error> {
    let mut config = ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])?
        .with_no_client_auth()
        .with_cert_resolver(resolver);
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests;
