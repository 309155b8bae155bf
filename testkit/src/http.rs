//! A tiny HTTP/1.1 client for the admin API and metrics endpoints (one
//! request per connection, raw enough to send what a real client would not).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// A response: status code and body.
#[derive(Debug, Clone)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// Body, as text.
    pub body: String,
}

impl Response {
    /// The body read as `T` (an answer type of `sluice-admin-api`, say).
    pub fn parse<T: serde::de::DeserializeOwned>(&self) -> T {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not a {} ({e}): {}", std::any::type_name::<T>(), self.body))
    }

    /// The body parsed as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

/// Sends one request and reads the whole response.
pub fn request(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<Response> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(60)))?;
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes())?;
    s.write_all(body)?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_owned()
    };
    Ok(Response { status, body })
}

/// `GET`.
pub fn get(addr: &str, path: &str) -> Response {
    request(addr, "GET", path, &[], b"").unwrap_or_else(|e| panic!("GET {addr}{path}: {e}"))
}

/// Polls `GET path` every 20 ms until it answers `status`, at most
/// `timeout` (a server that is still starting, or not ready yet); panics
/// with the last answer otherwise.
pub fn wait_for_status(addr: &str, path: &str, status: u16, timeout: Duration) -> Response {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let last = match request(addr, "GET", path, &[], b"") {
            Ok(r) if r.status == status => return r,
            other => other,
        };
        assert!(
            std::time::Instant::now() < deadline,
            "GET {addr}{path} never answered {status}: {last:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The value of one series in a Prometheus exposition served at `addr`
/// (0 when absent), e.g. `sluice_connections_total{cluster="a"}`.
pub fn metric(addr: &str, series: &str) -> f64 {
    get(addr, "/metrics")
        .body
        .lines()
        .find_map(|l| {
            l.strip_prefix(series)
                .and_then(|rest| rest.trim().parse().ok())
        })
        .unwrap_or(0.0)
}

/// The sum of every series of the metric `name` whose labels contain
/// `labels` (e.g. `principal="bob"`); 0 when there is none.
pub fn metric_sum(addr: &str, name: &str, labels: &str) -> f64 {
    get(addr, "/metrics")
        .body
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix(name)?.strip_prefix('{')?;
            let (set, value) = rest.split_once("} ")?;
            set.contains(labels)
                .then(|| value.trim().parse::<f64>().ok())?
        })
        .sum()
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].trim_start_matches("\r\n");
    }
    out
}
