//! Kubernetes Events, against a recorded API interaction. No kube-apiserver
//! can run here, so a local listener plays it: it answers with the response
//! a real API server gave for this request (recorded below) and keeps what
//! the watcher sent, which is what this test checks.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;

use sluice_watcher::events::{Kind, PodEvents};

/// The API server's answer to creating an Event (trimmed of managedFields).
const RECORDED_RESPONSE: &str = r#"{"kind":"Event","apiVersion":"v1","metadata":{"name":"proxy-0.18a2b3c4d5e6f708","generateName":"proxy-0.","namespace":"sluice","uid":"5d1c8f39-8a0e-4b64-9d7e-2f0b1c3a4e5f","resourceVersion":"48213","creationTimestamp":"2026-11-22T04:10:00Z"},"involvedObject":{"kind":"Pod","namespace":"sluice","name":"proxy-0","apiVersion":"v1"},"reason":"ConfigApplied","message":"proxy configuration sha256:abc applied","source":{"component":"sluice-watcher"},"firstTimestamp":"2026-11-22T04:10:00Z","lastTimestamp":"2026-11-22T04:10:00Z","count":1,"type":"Normal","eventTime":null,"reportingComponent":"sluice-watcher","reportingInstance":"proxy-0"}"#;

fn recorded_api_server() -> (String, mpsc::Receiver<(String, serde_json::Value)>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut request_line = String::new();
        reader.read_line(&mut request_line).unwrap();
        let mut len = 0;
        loop {
            let mut h = String::new();
            reader.read_line(&mut h).unwrap();
            if h == "\r\n" {
                break;
            }
            if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; len];
        reader.read_exact(&mut body).unwrap();
        let resp = format!(
            "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{RECORDED_RESPONSE}",
            RECORDED_RESPONSE.len()
        );
        stream.write_all(resp.as_bytes()).unwrap();
        let line = request_line
            .split_whitespace()
            .take(2)
            .collect::<Vec<_>>()
            .join(" ");
        tx.send((line, serde_json::from_slice(&body).unwrap()))
            .unwrap();
    });
    (url, rx)
}

#[tokio::test]
async fn an_applied_version_becomes_an_event_on_the_pod() {
    let (url, requests) = recorded_api_server();
    let config = kube::Config::new(url.parse().unwrap());
    let client = kube::Client::try_from(config).unwrap();
    let events = PodEvents::new(client, "sluice", "proxy-0");
    events
        .report(
            Kind::Normal,
            "ConfigApplied",
            "proxy configuration sha256:abc applied",
        )
        .await;
    let (line, body) = requests
        .recv_timeout(std::time::Duration::from_secs(10))
        .unwrap();
    assert_eq!(line, "POST /api/v1/namespaces/sluice/events?");
    assert_eq!(body["metadata"]["generateName"], "proxy-0.");
    assert_eq!(body["involvedObject"]["kind"], "Pod");
    assert_eq!(body["involvedObject"]["name"], "proxy-0");
    assert_eq!(body["involvedObject"]["namespace"], "sluice");
    assert_eq!(body["reason"], "ConfigApplied");
    assert_eq!(body["type"], "Normal");
    assert_eq!(body["message"], "proxy configuration sha256:abc applied");
    assert_eq!(body["reportingComponent"], "sluice-watcher");
    assert!(body["firstTimestamp"].as_str().unwrap().ends_with('Z'));
}
