//! The proxy's admin API, as the watcher uses it: status, validate, reload.

use std::time::Duration;

use serde_json::Value;

/// What the watcher needs to know of an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Validate: valid. Reload: applied (or nothing to do).
    Accepted,
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
    token: Option<String>,
}

impl ProxyClient {
    /// `base` is e.g. `http://127.0.0.1:9190`; `token` is sent as a bearer token.
    pub fn new(base: &str, token: Option<String>) -> Result<ProxyClient, reqwest::Error> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .connect_timeout(Duration::from_secs(5))
            .build()?;
        Ok(ProxyClient {
            http,
            base: base.trim_end_matches('/').to_owned(),
            token,
        })
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let mut r = self.http.request(method, format!("{}{path}", self.base));
        if let Some(t) = &self.token {
            r = r.bearer_auth(t);
        }
        r
    }

    /// The configuration version the proxy runs.
    pub async fn current_version(&self) -> Result<String, CallError> {
        let (status, body) =
            send(self.request(reqwest::Method::GET, "/admin/config/status")).await?;
        match status {
            200 => body["currentConfigVersion"]
                .as_str()
                .map(str::to_owned)
                .ok_or_else(|| CallError::Fatal("status has no currentConfigVersion".into())),
            _ => Err(classify(status, &body)),
        }
    }

    /// `POST /admin/config/validate`.
    pub async fn validate(&self, bytes: &[u8]) -> Result<Answer, CallError> {
        let (status, body) = send(
            self.request(reqwest::Method::POST, "/admin/config/validate")
                .body(bytes.to_vec()),
        )
        .await?;
        answer(status, &body)
    }

    /// `POST /admin/config/reload`, only on top of `if_match` when given.
    pub async fn reload(&self, bytes: &[u8], if_match: Option<&str>) -> Result<Answer, CallError> {
        let mut r = self
            .request(reqwest::Method::POST, "/admin/config/reload")
            .body(bytes.to_vec());
        if let Some(v) = if_match {
            r = r.header(reqwest::header::IF_MATCH, v);
        }
        let (status, body) = send(r).await?;
        answer(status, &body)
    }
}

async fn send(r: reqwest::RequestBuilder) -> Result<(u16, Value), CallError> {
    let resp = r
        .send()
        .await
        .map_err(|e| CallError::Retry(format!("proxy unreachable: {e}")))?;
    let status = resp.status().as_u16();
    let text = resp
        .text()
        .await
        .map_err(|e| CallError::Retry(format!("reading the proxy's answer: {e}")))?;
    Ok((
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    ))
}

fn answer(status: u16, body: &Value) -> Result<Answer, CallError> {
    match status {
        200 => Ok(Answer::Accepted),
        400 => Ok(Answer::Invalid(errors(body))),
        _ => Err(classify(status, body)),
    }
}

fn classify(status: u16, body: &Value) -> CallError {
    let message = body["error"]
        .as_str()
        .map_or_else(|| body.to_string(), str::to_owned);
    match status {
        409 | 412 | 500..=599 => CallError::Retry(format!("HTTP {status}: {message}")),
        _ => CallError::Fatal(format!("HTTP {status}: {message}")),
    }
}

/// The proxy's errors as `line:column: path: message`.
fn errors(body: &Value) -> Vec<String> {
    body["errors"]
        .as_array()
        .map(|errors| {
            errors
                .iter()
                .map(|e| {
                    let mut out = String::new();
                    if let (Some(l), Some(c)) = (e["line"].as_u64(), e["column"].as_u64()) {
                        out.push_str(&format!("{l}:{c}: "));
                    }
                    if let Some(p) = e["path"].as_str().filter(|p| !p.is_empty()) {
                        out.push_str(&format!("{p}: "));
                    }
                    out.push_str(e["message"].as_str().unwrap_or_default());
                    out
                })
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_classified_by_status() {
        let invalid = serde_json::json!({"valid": false, "errors": [{"line": 3, "column": 5, "path": "a.b", "message": "bad"}, {"line": null, "column": null, "path": "", "message": "file is empty"}]});
        assert_eq!(
            answer(400, &invalid),
            Ok(Answer::Invalid(vec![
                "3:5: a.b: bad".into(),
                "file is empty".into()
            ]))
        );
        assert_eq!(answer(200, &Value::Null), Ok(Answer::Accepted));
        for retry in [409, 412, 500, 503] {
            assert!(matches!(
                answer(retry, &serde_json::json!({"error": "x"})),
                Err(CallError::Retry(_))
            ));
        }
        for fatal in [401, 403, 404] {
            assert!(matches!(
                answer(fatal, &serde_json::json!({"error": "x"})),
                Err(CallError::Fatal(_))
            ));
        }
    }
}
