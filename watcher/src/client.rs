//! The proxy's admin API, as the watcher uses it: status, validate, reload,
//! release (of a proxy started held), and a peer's configuration in force.
//! Answers are read as `sluice-admin-api`'s types, by status; problems are
//! printed with that crate's one `line:column: path: message` format.
//!
//! The bearer token goes with validate, reload and release only: a status
//! or configuration read (this pod's proxy, or a peer's) never carries it. A 401 is retried once when
//! the token file holds a new token ([`Token::after_refusal`]).

use std::sync::Arc;
use std::time::Duration;

use sluice_admin_api::{
    ConfigStatus, ConfigVersion, EffectiveVersion, Refused, Released, ReloadAnswer, ValidateAnswer,
    endpoints,
};

use crate::tls::ProxyTls;
use crate::token::Token;

/// What the watcher needs to know of an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Validate: valid. Reload: in force (applied now, or already).
    Accepted {
        /// Settings in force that the proxy applies only when it restarts
        /// (always empty for validate): someone has to restart it.
        restart_required: Vec<String>,
        /// Clusters that could not start (`startupPolicy: best-effort`: the
        /// rest is in force, the next reload retries them), as `name: error`.
        clusters_failed: Vec<String>,
    },
    /// The proxy says the configuration is invalid; each error as
    /// `line:column: path: message`.
    Invalid(Vec<String>),
}

/// A call that did not get an answer worth acting on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// Worth retrying: connection refused, timeout, 409, 412, 5xx.
    #[error("{0}")]
    Retry(String),
    /// Not worth retrying the same way: 401/403 (the token), other answers.
    #[error("{0}")]
    Fatal(String),
}

/// A client of one proxy's admin API.
#[derive(Debug, Clone)]
pub struct ProxyClient {
    http: reqwest::Client,
    base: String,
    token: Option<Arc<Token>>,
}

impl ProxyClient {
    /// `base` is e.g. `http://127.0.0.1:9190`; `token` is sent as a bearer
    /// token with validate and reload.
    pub fn new(base: &str, token: Option<String>) -> Result<ProxyClient, reqwest::Error> {
        ProxyClient::with_token(base, token.map(|t| Arc::new(Token::fixed(t))))
    }

    /// Like [`ProxyClient::new`], with a token that follows its file.
    pub fn with_token(
        base: &str,
        token: Option<Arc<Token>>,
    ) -> Result<ProxyClient, reqwest::Error> {
        ProxyClient::with_tls(base, token, &ProxyTls::default())
    }

    /// Like [`ProxyClient::with_token`], trusting `tls`'s CA for HTTPS.
    pub fn with_tls(
        base: &str,
        token: Option<Arc<Token>>,
        tls: &ProxyTls,
    ) -> Result<ProxyClient, reqwest::Error> {
        let builder = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .connect_timeout(Duration::from_secs(5));
        let http = tls.apply(builder).build()?;
        Ok(ProxyClient {
            http,
            base: base.trim_end_matches('/').to_owned(),
            token,
        })
    }

    /// A request without the token.
    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.http.request(method, format!("{}{path}", self.base))
    }

    /// Sends the request `build` makes with the token; after a 401, once
    /// more with the token file's new token if it holds one.
    async fn send_with_token(
        &self,
        build: impl Fn() -> reqwest::RequestBuilder,
    ) -> Result<(u16, Vec<u8>), CallError> {
        let Some(token) = &self.token else {
            return send(build()).await;
        };
        let sent = token.current();
        let answer = send(build().bearer_auth(&sent)).await?;
        if answer.0 != 401 {
            return Ok(answer);
        }
        match token.after_refusal(&sent).await {
            Some(fresh) => send(build().bearer_auth(fresh)).await,
            None => Ok(answer),
        }
    }

    /// The configuration version the proxy runs.
    pub async fn current_version(&self) -> Result<ConfigVersion, CallError> {
        self.status().await.map(|s| s.current_config_version)
    }

    /// `GET /admin/config/status`, without the token.
    pub async fn status(&self) -> Result<ConfigStatus, CallError> {
        let (status, body) = send(self.request(reqwest::Method::GET, endpoints::STATUS)).await?;
        status_answer(status, &body)
    }

    /// `GET /admin/config`, without the token: the exact bytes in force,
    /// and the version the proxy names them by (its `ETag`), checked: the
    /// bytes' own SHA-256 must be that version, so bytes cut or changed on
    /// the way are never applied anywhere.
    pub async fn config(&self) -> Result<(Vec<u8>, ConfigVersion), CallError> {
        let resp = self
            .request(reqwest::Method::GET, endpoints::CONFIG)
            .send()
            .await
            .map_err(|e| CallError::Retry(format!("proxy unreachable: {e}")))?;
        let status = resp.status().as_u16();
        let etag = resp
            .headers()
            .get(reqwest::header::ETAG)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.trim().trim_matches('"').to_owned());
        let body = resp
            .bytes()
            .await
            .map_err(|e| CallError::Retry(format!("reading the proxy's answer: {e}")))?;
        if status != 200 {
            return Err(classify(&Refused::new(status, &body)));
        }
        config_answer(body.to_vec(), etag.as_deref())
    }

    /// `POST /admin/config/release`, with the token: a proxy started held
    /// serves the version it holds.
    pub async fn release(&self) -> Result<Released, CallError> {
        let (status, body) = self
            .send_with_token(|| self.request(reqwest::Method::POST, endpoints::RELEASE))
            .await?;
        if status != 200 {
            return Err(classify(&Refused::new(status, &body)));
        }
        serde_json::from_slice(&body)
            .map_err(|e| CallError::Fatal(format!("unexpected release answer: {e}")))
    }

    /// The base URL, e.g. `http://127.0.0.1:9190`.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// `POST /admin/config/validate`: the answer, the files the
    /// configuration references (named in valid and invalid answers alike),
    /// and the effective version as the proxy read them.
    pub async fn validate(
        &self,
        bytes: &[u8],
    ) -> Result<(Answer, Vec<String>, EffectiveVersion), CallError> {
        let (status, body) = self
            .send_with_token(|| {
                self.request(reqwest::Method::POST, endpoints::VALIDATE)
                    .body(bytes.to_vec())
            })
            .await?;
        validate_answer(status, &body)
    }

    /// `POST /admin/config/reload`, only on top of `if_match` when given,
    /// and only with referenced files of effective version `if_effective`
    /// when given.
    pub async fn reload(
        &self,
        bytes: &[u8],
        if_match: Option<&ConfigVersion>,
        if_effective: Option<&EffectiveVersion>,
    ) -> Result<Answer, CallError> {
        let build = || {
            let mut r = self
                .request(reqwest::Method::POST, endpoints::RELOAD)
                .body(bytes.to_vec());
            if let Some(v) = if_match {
                r = r.header(endpoints::IF_MATCH, v.as_str());
            }
            if let Some(v) = if_effective {
                r = r.header(endpoints::IF_EFFECTIVE_MATCH, v.as_str());
            }
            r
        };
        let (status, body) = self.send_with_token(build).await?;
        reload_answer(status, &body)
    }
}

async fn send(r: reqwest::RequestBuilder) -> Result<(u16, Vec<u8>), CallError> {
    let resp = r
        .send()
        .await
        .map_err(|e| CallError::Retry(format!("proxy unreachable: {e}")))?;
    let status = resp.status().as_u16();
    let body = resp
        .bytes()
        .await
        .map_err(|e| CallError::Retry(format!("reading the proxy's answer: {e}")))?;
    Ok((status, body.to_vec()))
}

fn status_answer(status: u16, body: &[u8]) -> Result<ConfigStatus, CallError> {
    if status != 200 {
        return Err(classify(&Refused::new(status, body)));
    }
    serde_json::from_slice(body)
        .map_err(|e| CallError::Fatal(format!("unexpected status answer: {e}")))
}

/// The bytes of `GET /admin/config`, if their SHA-256 is the version the
/// proxy names them by.
fn config_answer(
    bytes: Vec<u8>,
    etag: Option<&str>,
) -> Result<(Vec<u8>, ConfigVersion), CallError> {
    let version = sluice_volume::config_version(&bytes);
    match etag {
        Some(named) if named == version.as_str() => Ok((bytes, version)),
        Some(named) => Err(CallError::Retry(format!(
            "the configuration read is {version}, not the version its ETag names ({})",
            sluice_admin_api::echoed(named)
        ))),
        None => Err(CallError::Fatal(
            "the configuration read has no ETag naming its version".to_owned(),
        )),
    }
}

fn validate_answer(
    status: u16,
    body: &[u8],
) -> Result<(Answer, Vec<String>, EffectiveVersion), CallError> {
    match ValidateAnswer::from_http(status, body).map_err(|r| classify(&r))? {
        ValidateAnswer::Valid(valid) => Ok((
            Answer::Accepted {
                restart_required: Vec::new(),
                clusters_failed: Vec::new(),
            },
            valid.files,
            valid.effective_version,
        )),
        ValidateAnswer::Invalid(invalid) => Ok((
            Answer::Invalid(lines(&invalid.errors)),
            invalid.files,
            invalid.effective_version,
        )),
    }
}

fn reload_answer(status: u16, body: &[u8]) -> Result<Answer, CallError> {
    let retry = |error: &str| CallError::Retry(format!("HTTP {status}: {error}"));
    match ReloadAnswer::from_http(status, body).map_err(|r| classify(&r))? {
        ReloadAnswer::Applied(applied) => Ok(Answer::Accepted {
            restart_required: applied.restart_required,
            clusters_failed: applied
                .clusters_failed
                .iter()
                .map(|c| format!("{}: {}", c.name, c.error))
                .collect(),
        }),
        ReloadAnswer::Rejected(rejected) => Ok(Answer::Invalid(lines(&rejected.errors))),
        ReloadAnswer::Busy(busy) => Err(retry(&busy.error)),
        // An upstream-check failure is final for this version: a retry of
        // the same bytes cannot help, a new version can.
        ReloadAnswer::Failed(n) if n.is_final() => {
            Err(CallError::Fatal(format!("HTTP {status}: {}", n.error)))
        }
        // Stopping: the pod is going away; a retry finds its successor.
        ReloadAnswer::PreconditionFailed(n)
        | ReloadAnswer::Failed(n)
        | ReloadAnswer::ShuttingDown(n) => Err(retry(&n.error)),
    }
}

/// Whether an answer the watcher cannot act on is worth retrying.
fn classify(refused: &Refused) -> CallError {
    match refused.status {
        409 | 412 | 500..=599 => CallError::Retry(refused.to_string()),
        _ => CallError::Fatal(refused.to_string()),
    }
}

/// The proxy's errors as `line:column: path: message`.
fn lines(errors: &[sluice_admin_api::ConfigProblem]) -> Vec<String> {
    errors.iter().map(ToString::to_string).collect()
}

#[cfg(test)]
mod tests;
