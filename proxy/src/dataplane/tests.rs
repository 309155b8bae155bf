//! The data plane in-process: a real connection task on 127.0.0.1 between a
//! test client and a fake upstream (a tokio listener the test drives by
//! hand), with raw Kafka frames made by kafka-protocol.
//!
//! - `backpressure`: pipelined requests the proxy answers itself
//! - `streaming`: large frames pass without being held, both ways
//! - `memory`: idle connections hold nothing; the process-wide budget
//! - `routing`: per-cluster connection limits, learned addresses
//! - `in_place`: limits a reload changes in place reach open connections
//! - `kip951`: Fetch v16+ responses stream with their endpoints rewritten
//! - `policy`: a topic policy split, answer, merge and filter per topic
//! - `fetch_sessions`: Fetch sessions started again when the consume rules change
//! - `policy_stream`: a Fetch of allowed and denied topics streams
//! - `policy_by_id`: Metadata and Produce naming topics by id
//! - `quota`: the quota filter: throttled Produce and Fetch, in place
//! - `faults`: what still closes a connection
//! - `lookups`: failing broker lookups do not amplify
//! - `signals`: the client signals, with a real broker and real clients

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::ApiKey;
use kafka_protocol::protocol::Encodable;
use prometheus_client::metrics::gauge::Gauge;
use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use super::cluster::ClusterRuntime;
use super::connection::{Incoming, Role, serve};
use super::cores::Accepted;
use super::splice::Splicing;
use crate::config::model::VirtualCluster;
use crate::config::{MemoryFiles, validate};
use crate::metrics::Metrics;

mod backpressure;
mod faults;
mod fetch_sessions;
mod in_place;
mod kip951;
mod lookups;
mod memory;
mod policy;
mod policy_by_id;
mod policy_fetch;
mod policy_produce;
mod policy_stream;
mod quota;
mod routing;
mod signals;
mod streaming;

/// How long a test waits for anything that should happen.
const PATIENCE: Duration = Duration::from_secs(10);

/// One virtual cluster in front of one fake upstream.
struct Rig {
    metrics: Arc<Metrics>,
    cluster: Arc<ClusterRuntime>,
    proxy: SocketAddr,
    upstream: mpsc::UnboundedReceiver<TcpStream>,
}

/// A cluster `orders` whose bootstrap server is `upstream`, with more YAML
/// (indented as a cluster's keys: `limits`, `filters`).
fn cluster_config(upstream: SocketAddr, more: &str) -> VirtualCluster {
    let yaml = format!(
        "virtualClusters:
  - name: orders
    upstream:
      bootstrapServers: [\"{upstream}\"]
    gateway:
      listenHost: 127.0.0.1
      advertisedHost: proxy.test
      bootstrapPort: 29092
      brokerPorts: {{ start: 29093, count: 3, firstNodeId: 1 }}
{more}"
    );
    let valid = validate(yaml.as_bytes(), &MemoryFiles::default())
        .unwrap_or_else(|e| panic!("test configuration: {e:?}"));
    valid.config.virtual_clusters[0].clone()
}

impl Rig {
    async fn start(more: &str) -> Rig {
        Self::start_with(Arc::new(Metrics::new()), more).await
    }

    async fn start_with(metrics: Arc<Metrics>, more: &str) -> Rig {
        // The rig's peers are on loopback, where `auto` would copy: these
        // tests cover the splicing path.
        Splicing::Always.choose();
        let upstream = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let upstream_addr = upstream.local_addr().unwrap();
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = upstream.accept().await {
                if tx.send(tcp).is_err() {
                    return;
                }
            }
        });
        let config = cluster_config(upstream_addr, more);
        let cluster = ClusterRuntime::prepare(&config, 1, &metrics, Gauge::default()).unwrap();
        let proxy = listen(Arc::clone(&cluster)).await;
        Rig {
            metrics,
            cluster,
            proxy,
            upstream: rx,
        }
    }

    /// A client connection to the proxy's bootstrap role.
    async fn client(&self) -> TcpStream {
        TcpStream::connect(self.proxy).await.unwrap()
    }

    /// The next connection the proxy made upstream.
    async fn upstream(&mut self) -> TcpStream {
        tokio::time::timeout(PATIENCE, self.upstream.recv())
            .await
            .expect("the proxy connects upstream")
            .unwrap()
    }

    /// A client connection and the upstream connection it led to.
    async fn connection(&mut self) -> (TcpStream, TcpStream) {
        let client = self.client().await;
        (client, self.upstream().await)
    }

    /// The value of a metric series, 0 when absent.
    fn metric(&self, series: &str) -> f64 {
        metric(&self.metrics, series)
    }
}

/// Serves connections of `cluster` on a fresh port, in its bootstrap role.
async fn listen(cluster: Arc<ClusterRuntime>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((tcp, peer)) = listener.accept().await {
            tokio::spawn(serve(
                Incoming::Tcp(Accepted::Here(tcp)),
                peer,
                Arc::clone(&cluster),
                Role::Bootstrap,
            ));
        }
    });
    addr
}

fn metric(metrics: &Metrics, series: &str) -> f64 {
    metrics
        .encode()
        .lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or(0.0)
}

/// A request frame, prefix included.
fn request<T: Encodable>(api: ApiKey, version: i16, correlation_id: i32, body: &T) -> Vec<u8> {
    sluice_kafka::encode::request(api, version, correlation_id, "test", body)
        .unwrap()
        .to_vec()
}

/// A response frame, prefix included.
fn response<T: Encodable>(api: ApiKey, version: i16, correlation_id: i32, body: &T) -> Vec<u8> {
    sluice_kafka::encode::response(api, version, correlation_id, body)
        .unwrap()
        .to_vec()
}

/// A frame of `len` bytes in all (prefix included) that only its first 8
/// bytes make a response: what the proxy streams without looking.
fn opaque_response(correlation_id: i32, len: usize) -> Vec<u8> {
    let mut f = Vec::with_capacity(len);
    f.extend_from_slice(&i32::try_from(len - 4).unwrap().to_be_bytes());
    f.extend_from_slice(&correlation_id.to_be_bytes());
    f.extend((8..len).map(|i| (i % 251) as u8));
    f
}

/// Reads one whole frame, prefix included.
async fn read_frame(s: &mut TcpStream) -> Vec<u8> {
    tokio::time::timeout(PATIENCE, async {
        let len = s.read_i32().await.expect("a frame's length") as usize;
        let mut f = Vec::with_capacity(4 + len);
        f.extend_from_slice(&i32::try_from(len).unwrap().to_be_bytes());
        f.resize(4 + len, 0);
        s.read_exact(&mut f[4..]).await.expect("a whole frame");
        f
    })
    .await
    .expect("a frame arrives")
}

/// The correlation id of a response frame.
fn correlation(frame: &[u8]) -> i32 {
    i32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]])
}

/// Waits until `f` holds, polling.
async fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !f() {
        assert!(tokio::time::Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Waits until `f` gives the same value for `quiet`, and returns it.
async fn settled(quiet: Duration, mut f: impl FnMut() -> f64) -> f64 {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    let mut last = f();
    let mut since = tokio::time::Instant::now();
    loop {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let now = f();
        if now != last {
            last = now;
            since = tokio::time::Instant::now();
        } else if since.elapsed() >= quiet {
            return last;
        }
        assert!(tokio::time::Instant::now() < deadline, "never settled");
    }
}

/// A Fetch v12 (its response carries no endpoints) sent by `client` with
/// `correlation_id` and read by the upstream: a response to it is awaited.
async fn fetch_in_flight(client: &mut TcpStream, upstream: &mut TcpStream, correlation_id: i32) {
    use tokio::io::AsyncWriteExt;
    let fetch = request(
        ApiKey::Fetch,
        12,
        correlation_id,
        &kafka_protocol::messages::FetchRequest::default(),
    );
    client.write_all(&fetch).await.unwrap();
    read_frame(upstream).await;
}

/// Whether the peer closed `s` within `within` (what it sent before is
/// read and dropped).
async fn closed(s: &mut TcpStream, within: Duration) -> bool {
    let mut sink = vec![0u8; 64 * 1024];
    let end = async {
        loop {
            match s.read(&mut sink).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    };
    tokio::time::timeout(within, end).await.is_ok()
}

/// Bytes made for tests.
fn pattern(len: usize) -> Bytes {
    (0..len).map(|i| (i % 253) as u8).collect()
}
