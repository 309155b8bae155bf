//! A stand-in for kube-apiserver that answers exactly the calls the
//! self-signed mode makes: GET, PUT and POST of one Secret, GET and merge
//! PATCH of one ValidatingWebhookConfiguration. It starts from objects in
//! `tests/fixtures/apiserver/` in the form kube-apiserver returns them: the
//! Secret as `kubectl apply` of the overlay leaves it, the configuration
//! with the defaults the API server fills in, the 404 and 409 `Status`
//! bodies word for word (managedFields left out; no API server can run on
//! this machine, so they were transcribed, not captured here), and
//! keeps the API server's rules that matter here: every write bumps the
//! `resourceVersion`; a PUT or PATCH naming an older one gets 409 Conflict.
//! It can be stopped (connections refused and cut) and started again.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::routing::{get, post};
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::Barrier;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

mod handlers;

use handlers::{get_config, get_secret, patch_config, post_secret, put_secret};

const SECRET: &str = "/api/v1/namespaces/{ns}/secrets/{name}";
const SECRETS: &str = "/api/v1/namespaces/{ns}/secrets";
const CONFIG: &str = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/{name}";

/// A recorded body from `tests/fixtures/apiserver/`.
pub(crate) fn recorded(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/apiserver")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("a recorded body is JSON")
}

/// The objects and what happened to them.
#[derive(Debug)]
pub(crate) struct Cluster {
    secret: Option<Value>,
    config: Value,
    version: u64,
    /// 409s answered to Secret writes.
    secret_conflicts: usize,
    /// 409s answered to configuration patches.
    config_conflicts: usize,
    /// Secret reads still to hold at the barrier.
    held: usize,
    /// Secret writes are refused (403), as RBAC without `update` would.
    read_only: bool,
}

#[derive(Clone)]
pub(crate) struct Shared {
    cluster: Arc<Mutex<Cluster>>,
    barrier: Arc<Mutex<Option<Arc<Barrier>>>>,
}

impl Shared {
    fn with<T>(&self, f: impl FnOnce(&mut Cluster) -> T) -> T {
        f(&mut self.cluster.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// The fake API server.
pub(crate) struct ApiServer {
    addr: SocketAddr,
    shared: Shared,
    stop: Mutex<CancellationToken>,
    /// With [`ApiServer::start_https`]: its TLS configuration, and the CA
    /// that signed its certificate (for a kubeconfig).
    tls: Option<(Arc<rustls::ServerConfig>, String)>,
}

impl ApiServer {
    /// Serves the recorded empty Secret and webhook configuration on a port
    /// of the test kit's.
    pub(crate) async fn start() -> ApiServer {
        ApiServer::start_with(None).await
    }

    /// [`ApiServer::start`] over HTTPS, as a real API server serves, with a
    /// certificate for 127.0.0.1 from a test CA.
    pub(crate) async fn start_https() -> ApiServer {
        use rustls_pki_types::pem::PemObject as _;
        use rustls_pki_types::{CertificateDer, PrivateKeyDer};
        let ca = sluice_testkit::certs::Ca::new("kubernetes");
        let leaf = ca.server("kube-apiserver", 1);
        let chain = CertificateDer::pem_slice_iter(leaf.cert.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .expect("certificate");
        let key = PrivateKeyDer::from_pem_slice(leaf.key.as_bytes()).expect("key");
        let config = rustls::ServerConfig::builder_with_provider(sluice_webhook::tls::provider())
            .with_safe_default_protocol_versions()
            .expect("protocols")
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .expect("server configuration");
        ApiServer::start_with(Some((Arc::new(config), ca.pem.clone()))).await
    }

    async fn start_with(tls: Option<(Arc<rustls::ServerConfig>, String)>) -> ApiServer {
        let port = sluice_testkit::ports::port();
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let cluster = Cluster {
            secret: Some(recorded("secret-empty.json")),
            config: recorded("validatingwebhookconfiguration.json"),
            version: 4102,
            secret_conflicts: 0,
            config_conflicts: 0,
            held: 0,
            read_only: false,
        };
        let shared = Shared {
            cluster: Arc::new(Mutex::new(cluster)),
            barrier: Arc::new(Mutex::new(None)),
        };
        let server = ApiServer {
            addr,
            shared,
            stop: Mutex::new(CancellationToken::new()),
            tls,
        };
        server.listen().await;
        server
    }

    /// `http://127.0.0.1:PORT`, or `https://`.
    pub(crate) fn url(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// The CA a client must trust, with [`ApiServer::start_https`].
    pub(crate) fn ca_pem(&self) -> Option<&str> {
        self.tls.as_ref().map(|(_, ca)| ca.as_str())
    }

    /// A kube client pointed at this server.
    pub(crate) fn client(&self) -> kube::Client {
        let config = kube::Config::new(self.url().parse().expect("url"));
        kube::Client::try_from(config).expect("kube client")
    }

    /// The Secret does not exist at all.
    pub(crate) fn delete_secret(&self) {
        self.shared.with(|c| c.secret = None);
    }

    /// The next `n` Secret reads wait for each other, so `n` replicas read
    /// the same version before any of them writes.
    pub(crate) fn hold_secret_reads(&self, n: usize) {
        self.shared.with(|c| c.held = n);
        *self
            .shared
            .barrier
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(Barrier::new(n)));
    }

    /// Refuse Secret writes from now on (403 Forbidden).
    pub(crate) fn refuse_writes(&self) {
        self.shared.with(|c| c.read_only = true);
    }

    /// Replaces one key of the Secret's data.
    pub(crate) fn set_secret_data(&self, key: &str, value: &str) {
        use base64::Engine as _;
        let encoded = base64::engine::general_purpose::STANDARD.encode(value);
        self.shared.with(|c| {
            let secret = c.secret.as_mut().expect("a Secret");
            secret["data"][key] = encoded.into();
        });
    }

    /// 409 answers given so far to Secret writes and configuration patches.
    pub(crate) fn conflicts(&self) -> (usize, usize) {
        self.shared
            .with(|c| (c.secret_conflicts, c.config_conflicts))
    }

    /// The Secret's `data`, decoded (empty when it has none).
    pub(crate) fn secret_data(&self, key: &str) -> Option<String> {
        use base64::Engine as _;
        let value = self.shared.with(|c| c.secret.clone())?;
        let encoded = value["data"][key].as_str()?.to_owned();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .expect("base64");
        Some(String::from_utf8(bytes).expect("PEM text"))
    }

    /// The caBundle of every webhook in the configuration, decoded.
    pub(crate) fn ca_bundles(&self) -> Vec<Option<String>> {
        use base64::Engine as _;
        let config = self.shared.with(|c| c.config.clone());
        config["webhooks"]
            .as_array()
            .expect("webhooks")
            .iter()
            .map(|w| {
                let encoded = w["clientConfig"]["caBundle"].as_str()?;
                let pem = base64::engine::general_purpose::STANDARD
                    .decode(encoded)
                    .ok()?;
                String::from_utf8(pem).ok()
            })
            .collect()
    }

    /// The configuration as it is now.
    pub(crate) fn configuration(&self) -> Value {
        self.shared.with(|c| c.config.clone())
    }

    fn token(&self) -> std::sync::MutexGuard<'_, CancellationToken> {
        self.stop.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Refuses connections and cuts the open ones.
    pub(crate) fn stop(&self) {
        self.token().cancel();
    }

    /// Listens again on the same port.
    pub(crate) async fn restart(&self) {
        *self.token() = CancellationToken::new();
        self.listen().await;
    }

    async fn listen(&self) {
        let listener = TcpListener::bind(self.addr)
            .await
            .expect("bind the API server");
        let app = Router::new()
            .route(SECRET, get(get_secret).put(put_secret))
            .route(SECRETS, post(post_secret))
            .route(CONFIG, get(get_config).patch(patch_config))
            .with_state(self.shared.clone());
        let stop = self.token().clone();
        let tls = self
            .tls
            .as_ref()
            .map(|(c, _)| TlsAcceptor::from(Arc::clone(c)));
        tokio::spawn(async move {
            loop {
                let (tcp, _) = tokio::select! {
                    accepted = listener.accept() => match accepted {
                        Ok(a) => a,
                        Err(_) => continue,
                    },
                    () = stop.cancelled() => return,
                };
                let (app, stop, tls) = (app.clone(), stop.clone(), tls.clone());
                tokio::spawn(async move {
                    match tls {
                        None => serve(tcp, app, stop).await,
                        Some(tls) => {
                            if let Ok(stream) = tls.accept(tcp).await {
                                serve(stream, app, stop).await;
                            }
                        }
                    }
                });
            }
        });
    }
}

/// One connection, until it ends or the server stops.
async fn serve<I>(io: I, app: Router, stop: CancellationToken)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let conn = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(io), TowerToHyperService::new(app));
    tokio::select! {
        _ = conn => {}
        () = stop.cancelled() => {}
    }
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        self.stop();
    }
}
