//! HTTPS on the admin listener (`admin.tls`). The mode (HTTPS or plain
//! HTTP) is fixed when the proxy starts; the certificate is not: rustls asks
//! [`AdminCert`] for it on every handshake, and it follows the configuration
//! in force, so a renewed certificate applied by a reload (new file content,
//! a new effective version) is served to new handshakes at once, while open
//! connections keep theirs. TLS 1.2 and 1.3 with ring, whose suites are all
//! AEAD (the webhook's settings); no client certificates (callers present
//! the admin token); HTTP/1.1 by ALPN.

use std::sync::{Arc, PoisonError, RwLock};

use rustls::ServerConfig;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

use crate::config::tls::ServerMaterial;
use crate::engine::Engine;

/// Why HTTPS cannot be served on the admin listener.
#[derive(Debug, thiserror::Error)]
pub enum AdminTlsError {
    /// rustls refused the material or the settings.
    #[error("admin tls: {0}")]
    Rustls(#[from] rustls::Error),
    /// The configuration was validated without reading its files.
    #[error("admin tls: the certificate and key were not loaded")]
    NotLoaded,
}

/// The certificate of the configuration in force, built once per version
/// of the material.
#[derive(Debug)]
pub(super) struct AdminCert {
    engine: Arc<Engine>,
    current: RwLock<(Arc<ServerMaterial>, Arc<CertifiedKey>)>,
}

fn certified(material: &ServerMaterial) -> Result<Arc<CertifiedKey>, AdminTlsError> {
    let key = material.key.as_ref().ok_or(AdminTlsError::NotLoaded)?;
    let signing = provider().key_provider.load_private_key(key.clone_key())?;
    Ok(Arc::new(CertifiedKey::new(
        material.cert_chain.clone(),
        signing,
    )))
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

impl AdminCert {
    /// The material of `admin.tls` now in force in `engine`, if any.
    fn in_force(engine: &Engine) -> Option<Arc<ServerMaterial>> {
        let config = engine.config().config;
        config.admin.tls.as_ref().map(|t| Arc::clone(&t.material.0))
    }

    /// The TLS settings of the admin listener, or `None` when the
    /// configuration in force has no `admin.tls` (plain HTTP).
    pub(super) fn server_config(
        engine: &Arc<Engine>,
    ) -> Result<Option<Arc<ServerConfig>>, AdminTlsError> {
        let Some(material) = Self::in_force(engine) else {
            return Ok(None);
        };
        let key = certified(&material)?;
        let resolver = Arc::new(AdminCert {
            engine: Arc::clone(engine),
            current: RwLock::new((material, key)),
        });
        let mut config = ServerConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])?
            .with_no_client_auth()
            .with_cert_resolver(resolver);
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Some(Arc::new(config)))
    }
}

impl ResolvesServerCert for AdminCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let (served, key) = self
            .current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        // `admin.tls` removed by a reload: the last certificate until a restart.
        let Some(now) = Self::in_force(&self.engine) else {
            return Some(key);
        };
        if Arc::ptr_eq(&now, &served) {
            return Some(key);
        }
        match certified(&now) {
            Ok(fresh) => {
                *self.current.write().unwrap_or_else(PoisonError::into_inner) =
                    (now, Arc::clone(&fresh));
                tracing::info!("admin api: serving the certificate of the configuration in force");
                Some(fresh)
            }
            Err(e) => {
                tracing::warn!(error = %e, "admin api: the new certificate cannot be served; keeping the previous one");
                Some(key)
            }
        }
    }
}
