//! A hostile broker for tests, on 127.0.0.1: it answers ApiVersions and
//! SaslHandshake as a broker does, then answers the first SaslAuthenticate
//! with words chosen to hurt wherever they are echoed.

use bytes::{BufMut, BytesMut};
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{ApiKey, ApiVersionsResponse, ResponseHeader};
use kafka_protocol::protocol::Encodable;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// The proxy's credentials in these tests, which must never be echoed.
pub(crate) const USERNAME: &str = "proxy-user";
/// See [`USERNAME`].
pub(crate) const PASSWORD: &str = "hunter2-secret";

/// How the broker answers the SaslAuthenticate.
#[derive(Debug, Clone)]
pub(crate) enum Answer {
    /// Error code 58 with this message (at most 32767 bytes: an INT16).
    Refuse(String),
    /// No error; these bytes as the SCRAM server-first message.
    ServerFirst(Vec<u8>),
}

/// A message with a forged log line, ANSI escapes, the credentials in
/// clear and in base64, and `padding` bytes more.
pub(crate) fn words(padding: usize) -> String {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD.encode(PASSWORD);
    format!(
        "denied\n2026-01-01T00:00:00Z ERROR forged: all is lost\x1b[2J\x1b[31m user {USERNAME} password {PASSWORD} ({b64}) {}",
        "A".repeat(padding)
    )
}

/// Serves one connection with `answer`; the listener's port.
pub(crate) async fn broker(answer: Answer) -> (u16, JoinHandle<()>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let task = tokio::spawn(async move {
        let (mut s, _) = l.accept().await.unwrap();
        let c = request(&mut s).await;
        let mut header = ResponseHeader::default();
        header.correlation_id = c;
        let mut versions = ApiVersionsResponse::default();
        for (key, max) in [(ApiKey::Metadata, 12), (ApiKey::SaslHandshake, 1)] {
            let mut v = ApiVersion::default();
            v.api_key = key as i16;
            v.max_version = max;
            versions.api_keys.push(v);
        }
        let mut body = BytesMut::new();
        header.encode(&mut body, 0).unwrap();
        versions.encode(&mut body, 0).unwrap();
        reply(&mut s, &body).await;
        // SaslHandshake: no error (the mechanisms list is not read then).
        let c = request(&mut s).await;
        let mut body = BytesMut::new();
        body.put_i32(c);
        body.put_i16(0);
        body.put_i32(0);
        reply(&mut s, &body).await;
        let c = request(&mut s).await;
        let mut body = BytesMut::new();
        body.put_i32(c);
        match answer {
            Answer::Refuse(message) => {
                body.put_i16(58);
                body.put_i16(i16::try_from(message.len()).unwrap());
                body.put_slice(message.as_bytes());
                body.put_i32(0);
            }
            Answer::ServerFirst(bytes) => {
                body.put_i16(0);
                body.put_i16(-1);
                body.put_i32(i32::try_from(bytes.len()).unwrap());
                body.put_slice(&bytes);
            }
        }
        body.put_i64(0);
        reply(&mut s, &body).await;
        let _ = s.read_i32().await;
    });
    (port, task)
}

/// Reads one request; its correlation id.
async fn request(s: &mut TcpStream) -> i32 {
    let len = s.read_i32().await.unwrap();
    let mut request = vec![0; usize::try_from(len).unwrap()];
    s.read_exact(&mut request).await.unwrap();
    i32::from_be_bytes(request[4..8].try_into().unwrap())
}

async fn reply(s: &mut TcpStream, body: &[u8]) {
    let mut frame = BytesMut::new();
    frame.put_i32(i32::try_from(body.len()).unwrap());
    frame.put_slice(body);
    s.write_all(&frame).await.unwrap();
}

/// What every echo of the broker's words must hold to: no control
/// character, no credential in any form, and a bounded length.
pub(crate) fn assert_harmless(text: &str, max_chars: usize) {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD.encode(PASSWORD);
    assert!(!text.chars().any(char::is_control), "{text:?}");
    for secret in [USERNAME, PASSWORD, b64.as_str()] {
        assert!(!text.contains(secret), "{secret} in {text:?}");
    }
    assert!(
        text.chars().count() <= max_chars,
        "{} chars",
        text.chars().count()
    );
}

#[cfg(test)]
mod tests {
    use sluice_admin_api::MAX_ECHO_CHARS;
    use sluice_config::{MemoryFiles, validate};

    use super::*;
    use crate::dataplane::check::check;

    async fn cause(answer: Answer) -> String {
        let (port, broker) = broker(answer).await;
        let files = MemoryFiles::default()
            .with("user", USERNAME.as_bytes())
            .with("pass", PASSWORD.as_bytes());
        let yaml = format!(
            "virtualClusters:\n  - name: orders\n    upstream: {{ bootstrapServers: [\"127.0.0.1:{port}\"], sasl: {{ mechanism: SCRAM-SHA-256, usernameFile: user, passwordFile: pass }} }}\n    gateway: {{ listenHost: 127.0.0.1, advertisedHost: localhost, bootstrapPort: 19092, brokerPorts: {{ start: 19093, count: 1 }} }}\n"
        );
        let valid = validate(yaml.as_bytes(), &files).unwrap_or_else(|e| panic!("{e:?}"));
        let failed = check(&valid.config.virtual_clusters[0]).await.unwrap_err();
        broker.abort();
        assert_eq!(failed.servers.len(), 1);
        failed.servers[0].1.to_string()
    }

    /// Finding 8: a refusal keeps Kafka's code and its name; the broker's
    /// prose (a forged log line, ANSI escapes, the credentials) stays out.
    #[tokio::test]
    async fn a_refusal_echoes_the_code_not_the_brokers_words() {
        let cause = cause(Answer::Refuse(words(20_000))).await;
        assert_eq!(
            cause,
            "SASL SCRAM-SHA-256 authentication of the proxy failed: the broker refused the credentials (SaslAuthenticationFailed, error code 58)"
        );
    }

    /// Finding 8: 100 KB in a SCRAM `e=` come out escaped, cut, scrubbed.
    #[tokio::test]
    async fn a_scram_error_is_escaped_cut_and_scrubbed() {
        let first = format!("e={}", words(100 * 1024));
        let cause = cause(Answer::ServerFirst(first.into_bytes())).await;
        assert_harmless(&cause, MAX_ECHO_CHARS);
        assert!(
            cause.starts_with(
                "SASL SCRAM-SHA-256 authentication of the proxy failed: the broker refused: denied\\n2026-01-01T00:00:00Z ERROR forged: all is lost\\u{1b}[2J"
            ),
            "{cause}"
        );
        assert!(cause.ends_with(" more bytes)"), "{cause}");
    }
}
