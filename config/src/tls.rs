//! TLS settings, with their certificates and keys loaded and checked during
//! validation, so a reload never discovers a broken file after committing.

use std::fmt;
use std::sync::Arc;

use rustls::RootCertStore;
use rustls::crypto::ring;
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::{self, PemObject};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use serde::Serialize;

use super::files::FileRef;
use super::read::{Cx, Fields, string};
use super::yaml::{Mark, Node};

/// Material loaded from files. Equality is decided by the files' digests
/// (kept beside it), so two `Loaded` values always compare equal.
pub struct Loaded<T>(pub Arc<T>);

impl<T> Clone for Loaded<T> {
    fn clone(&self) -> Self {
        Loaded(Arc::clone(&self.0))
    }
}

impl<T> PartialEq for Loaded<T> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl<T> fmt::Debug for Loaded<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Loaded(..)")
    }
}

/// TLS termination for clients (`gateway.tls`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GatewayTls {
    /// Certificate chain presented to clients, leaf first.
    pub cert_file: FileRef,
    /// Private key of the leaf certificate.
    pub key_file: FileRef,
    /// When set, clients must present a certificate signed by one of these CAs.
    pub client_ca_file: Option<FileRef>,
    /// The parsed material.
    #[serde(skip)]
    pub material: Loaded<ServerMaterial>,
}

/// HTTPS on the admin listener (`admin.tls`): the same certificate and key
/// files as a gateway's, without client certificates (callers present the
/// admin token).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AdminTls {
    /// Certificate chain served to admin callers, leaf first.
    pub cert_file: FileRef,
    /// Private key of the leaf certificate.
    pub key_file: FileRef,
    /// The parsed material (`client_roots` always empty).
    #[serde(skip)]
    pub material: Loaded<ServerMaterial>,
}

/// What a TLS server needs, parsed.
#[derive(Debug)]
pub struct ServerMaterial {
    /// Leaf first.
    pub cert_chain: Vec<CertificateDer<'static>>,
    /// Matches the leaf; `None` when files were not read ([`super::files::PathsOnly`]).
    pub key: Option<PrivateKeyDer<'static>>,
    /// CAs that sign acceptable client certificates; empty when mTLS is off.
    pub client_roots: Vec<CertificateDer<'static>>,
}

/// TLS towards the upstream brokers (`upstream.tls`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UpstreamTls {
    /// CAs that sign the brokers' certificates; the system's when absent.
    pub ca_file: Option<FileRef>,
    /// Name checked against the brokers' certificates instead of each
    /// broker's host name.
    pub server_name: Option<String>,
    /// Client certificate chain, for brokers that require mTLS.
    pub cert_file: Option<FileRef>,
    /// Its private key.
    pub key_file: Option<FileRef>,
    /// The parsed material.
    #[serde(skip)]
    pub material: Loaded<ClientMaterial>,
}

/// What a TLS client needs, parsed.
#[derive(Debug)]
pub struct ClientMaterial {
    /// Trusted CAs; `None` means the platform's trust store.
    pub roots: Option<Vec<CertificateDer<'static>>>,
    /// Client certificate chain and key, when configured.
    pub identity: Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>,
}

const GATEWAY_KEYS: &[&str] = &["certFile", "keyFile", "clientCaFile"];
const ADMIN_KEYS: &[&str] = &["certFile", "keyFile"];
const UPSTREAM_KEYS: &[&str] = &["caFile", "serverName", "certFile", "keyFile"];

pub(crate) fn gateway_tls(cx: &mut Cx<'_>, node: &Node, path: &str) -> Option<GatewayTls> {
    let f = Fields::of(cx, node, path, GATEWAY_KEYS)?;
    let cert = f.required(cx, "certFile", certificates);
    let key = f.required(cx, "keyFile", private_key);
    let client_ca = f.optional(cx, "clientCaFile", ca_certificates);
    let (cert_file, cert_chain) = cert?;
    let (key_file, key, key_mark) = key?;
    check_pair(cx, &f, &cert_file, &cert_chain, key.as_ref(), key_mark)?;
    let (client_ca_file, client_roots) = match client_ca {
        Some((file, roots)) => (Some(file), roots),
        None if f.has("clientCaFile") => return None,
        None => (None, Vec::new()),
    };
    Some(GatewayTls {
        cert_file,
        key_file,
        client_ca_file,
        material: Loaded(Arc::new(ServerMaterial {
            cert_chain,
            key,
            client_roots,
        })),
    })
}

pub(crate) fn admin_tls(cx: &mut Cx<'_>, node: &Node, path: &str) -> Option<AdminTls> {
    let f = Fields::of(cx, node, path, ADMIN_KEYS)?;
    let cert = f.required(cx, "certFile", certificates);
    let key = f.required(cx, "keyFile", private_key);
    let (cert_file, cert_chain) = cert?;
    let (key_file, key, key_mark) = key?;
    check_pair(cx, &f, &cert_file, &cert_chain, key.as_ref(), key_mark)?;
    Some(AdminTls {
        cert_file,
        key_file,
        material: Loaded(Arc::new(ServerMaterial {
            cert_chain,
            key,
            client_roots: Vec::new(),
        })),
    })
}

pub(crate) fn upstream_tls(cx: &mut Cx<'_>, node: &Node, path: &str) -> Option<UpstreamTls> {
    let f = Fields::of(cx, node, path, UPSTREAM_KEYS)?;
    let ca = f.optional(cx, "caFile", ca_certificates);
    let server_name = f.optional(cx, "serverName", |cx, node, path| {
        let name = string(cx, node, path)?;
        match ServerName::try_from(name) {
            Ok(_) => Some(name.to_owned()),
            Err(_) => cx.fail(
                path,
                node.mark,
                format_args!("{name:?} is not a valid TLS server name"),
            ),
        }
    });
    let cert = f.optional(cx, "certFile", certificates);
    let key = f.optional(cx, "keyFile", private_key);
    let mut ok = (ca.is_some() || !f.has("caFile"))
        && (server_name.is_some() || !f.has("serverName"))
        && (cert.is_some() || !f.has("certFile"))
        && (key.is_some() || !f.has("keyFile"));
    if f.has("certFile") != f.has("keyFile") {
        let missing = if f.has("certFile") {
            "keyFile"
        } else {
            "certFile"
        };
        cx.error(
            &format!("{path}.{missing}"),
            f.mark(),
            "certFile and keyFile must be given together",
        );
        ok = false;
    }
    let identity = match (cert, key) {
        (Some((cert_file, chain)), Some((key_file, key, key_mark))) => {
            check_pair(cx, &f, &cert_file, &chain, key.as_ref(), key_mark)?;
            Some((cert_file, key_file, chain, key))
        }
        _ => None,
    };
    if !ok {
        return None;
    }
    let (ca_file, roots) = ca.map_or((None, None), |(file, roots)| (Some(file), Some(roots)));
    let (cert_file, key_file, identity) = match identity {
        Some((c, k, chain, key)) => (Some(c), Some(k), key.map(|key| (chain, key))),
        None => (None, None, None),
    };
    Some(UpstreamTls {
        ca_file,
        server_name,
        cert_file,
        key_file,
        material: Loaded(Arc::new(ClientMaterial { roots, identity })),
    })
}

/// Reads a referenced file, reporting why it cannot be read. The bytes are
/// `None` when the file source does not read files.
pub(crate) fn read_file(
    cx: &mut Cx<'_>,
    node: &Node,
    path: &str,
) -> Option<(FileRef, Option<Vec<u8>>)> {
    let name = string(cx, node, path)?;
    if name.is_empty() {
        return cx.fail(path, node.mark, "file path is empty");
    }
    if !cx.files.loads() {
        return Some((FileRef::unread(name), None));
    }
    match cx.files.read(name) {
        Ok(bytes) => Some((FileRef::new(name, &bytes), Some(bytes))),
        Err(e) => cx.fail(path, node.mark, format_args!("cannot read {name:?}: {e}")),
    }
}

/// Reads a text file and parses it with `parse` (an error is reported at
/// the file's key, naming the file); the content is `None` where files
/// are not read.
pub(crate) fn read_parsed<T>(
    cx: &mut Cx<'_>,
    node: &Node,
    path: &str,
    parse: fn(&str) -> Result<T, String>,
) -> Option<(FileRef, Option<T>)> {
    let (file, bytes) = read_file(cx, node, path)?;
    let Some(bytes) = bytes else {
        return Some((file, None));
    };
    let read = std::str::from_utf8(&bytes)
        .map_err(|_| "not UTF-8 text".to_owned())
        .and_then(parse);
    match read {
        Ok(value) => Some((file, Some(value))),
        Err(why) => cx.fail(path, node.mark, format_args!("{:?}: {why}", file.path)),
    }
}

fn certificates(
    cx: &mut Cx<'_>,
    node: &Node,
    path: &str,
) -> Option<(FileRef, Vec<CertificateDer<'static>>)> {
    let (file, bytes) = read_file(cx, node, path)?;
    let Some(bytes) = bytes else {
        return Some((file, Vec::new()));
    };
    let certs: Result<Vec<_>, _> = CertificateDer::pem_slice_iter(&bytes).collect();
    match certs {
        Ok(certs) if certs.is_empty() => cx.fail(
            path,
            node.mark,
            format_args!("{:?} contains no PEM certificate", file.path),
        ),
        Ok(certs) => Some((file, certs)),
        Err(e) => cx.fail(
            path,
            node.mark,
            format_args!("{:?} is not valid PEM: {}", file.path, pem_error(&e)),
        ),
    }
}

pub(crate) fn ca_certificates(
    cx: &mut Cx<'_>,
    node: &Node,
    path: &str,
) -> Option<(FileRef, Vec<CertificateDer<'static>>)> {
    let (file, certs) = certificates(cx, node, path)?;
    let mut store = RootCertStore::empty();
    for cert in &certs {
        if store.add(cert.clone()).is_err() {
            return cx.fail(
                path,
                node.mark,
                format_args!("{:?} holds a certificate that cannot be parsed", file.path),
            );
        }
    }
    Some((file, certs))
}

fn private_key(
    cx: &mut Cx<'_>,
    node: &Node,
    path: &str,
) -> Option<(FileRef, Option<PrivateKeyDer<'static>>, Mark)> {
    let (file, bytes) = read_file(cx, node, path)?;
    let Some(bytes) = bytes else {
        return Some((file, None, node.mark));
    };
    match PrivateKeyDer::from_pem_slice(&bytes) {
        Ok(key) => Some((file, Some(key), node.mark)),
        Err(pem::Error::NoItemsFound) => cx.fail(
            path,
            node.mark,
            format_args!("{:?} contains no PEM private key", file.path),
        ),
        Err(e) => cx.fail(
            path,
            node.mark,
            format_args!("{:?} is not valid PEM: {}", file.path, pem_error(&e)),
        ),
    }
}

/// Checks that the key is usable and belongs to the chain's leaf.
fn check_pair(
    cx: &mut Cx<'_>,
    f: &Fields<'_>,
    cert_file: &FileRef,
    chain: &[CertificateDer<'static>],
    key: Option<&PrivateKeyDer<'static>>,
    key_mark: Mark,
) -> Option<()> {
    let Some(key) = key.filter(|_| !chain.is_empty()) else {
        // Files were not read: nothing to compare.
        return Some(());
    };
    let key_path = format!("{}.keyFile", f.path());
    let provider = ring::default_provider();
    let Ok(signing_key) = provider.key_provider.load_private_key(key.clone_key()) else {
        return cx.fail(
            &key_path,
            key_mark,
            "the private key is not a supported RSA, ECDSA or Ed25519 key",
        );
    };
    match CertifiedKey::new(chain.to_vec(), signing_key).keys_match() {
        Ok(()) => Some(()),
        Err(_) => cx.fail(
            &key_path,
            key_mark,
            format_args!(
                "the private key does not match the certificate in {:?}",
                cert_file.path
            ),
        ),
    }
}

fn pem_error(e: &pem::Error) -> String {
    match e {
        pem::Error::MissingSectionEnd { .. } => "a section has no END line".to_owned(),
        pem::Error::IllegalSectionStart { .. } => "a BEGIN line is malformed".to_owned(),
        pem::Error::Base64Decode(_) => "the base64 content is malformed".to_owned(),
        other => other.to_string(),
    }
}
