//! rustls configurations built from validated TLS material. One crypto
//! provider (ring) is used everywhere, passed explicitly.

use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::ClientCertVerifier;
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use tokio_rustls::{TlsAcceptor, TlsConnector};

use crate::config::tls::{ClientMaterial, ServerMaterial};

/// Building a TLS configuration failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TlsError {
    /// rustls refused the material.
    #[error("tls configuration: {0}")]
    Rustls(#[from] rustls::Error),
    /// The client-certificate verifier could not be built.
    #[error("client certificate verifier: {0}")]
    ClientVerifier(#[from] rustls::server::VerifierBuilderError),
    /// The configuration was validated without reading its files.
    #[error("tls material was not loaded (validated without files)")]
    NotLoaded,
    /// No CA was configured and the system has none.
    #[error("no trusted CA certificates: set upstream.tls.caFile")]
    NoRoots,
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn roots(
    certs: &[rustls_pki_types::CertificateDer<'static>],
) -> Result<Arc<RootCertStore>, TlsError> {
    let mut store = RootCertStore::empty();
    for cert in certs {
        store.add(cert.clone())?;
    }
    Ok(Arc::new(store))
}

/// The acceptor for a cluster's client-facing listeners; mTLS when client
/// CAs are set, and then the verifier of client certificates too (open
/// connections' certificates are checked again with it when it changes).
pub(crate) fn acceptor(
    material: &ServerMaterial,
) -> Result<(TlsAcceptor, Option<Arc<dyn ClientCertVerifier>>), TlsError> {
    let builder =
        ServerConfig::builder_with_provider(provider()).with_safe_default_protocol_versions()?;
    let (builder, verifier) = if material.client_roots.is_empty() {
        (builder.with_no_client_auth(), None)
    } else {
        let verifier =
            WebPkiClientVerifier::builder_with_provider(roots(&material.client_roots)?, provider())
                .build()?;
        let kept = Arc::clone(&verifier);
        (builder.with_client_cert_verifier(verifier), Some(kept))
    };
    let key = material.key.as_ref().ok_or(TlsError::NotLoaded)?;
    let config = builder.with_single_cert(material.cert_chain.clone(), key.clone_key())?;
    Ok((TlsAcceptor::from(Arc::new(config)), verifier))
}

/// The connector towards a cluster's upstream brokers.
pub(crate) fn connector(material: &ClientMaterial) -> Result<TlsConnector, TlsError> {
    let store = match &material.roots {
        Some(certs) => roots(certs)?,
        None => {
            let found = rustls_native_certs::load_native_certs();
            let mut store = RootCertStore::empty();
            let (added, _) = store.add_parsable_certificates(found.certs);
            if added == 0 {
                return Err(TlsError::NoRoots);
            }
            Arc::new(store)
        }
    };
    let verifier = WebPkiServerVerifier::builder_with_provider(store, provider())
        .build()
        .map_err(|e| TlsError::Rustls(rustls::Error::General(e.to_string())))?;
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_webpki_verifier(verifier);
    let config = match &material.identity {
        Some((chain, key)) => builder.with_client_auth_cert(chain.clone(), key.clone_key())?,
        None => builder.with_no_client_auth(),
    };
    Ok(TlsConnector::from(Arc::new(config)))
}
