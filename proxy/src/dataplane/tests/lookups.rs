//! Broker lookups that do not amplify: clients retrying against a broker
//! port whose lookup fails cause at most one upstream lookup per second.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::metadata_response::MetadataResponseBroker;
use kafka_protocol::messages::{ApiVersionsResponse, BrokerId, MetadataResponse};
use kafka_protocol::protocol::StrBytes;
use tokio::io::AsyncWriteExt;

use super::*;
use crate::dataplane::lookup::FAILURE_MEMORY;

/// A bootstrap server that counts the proxy's conversations with it: it
/// answers ApiVersions with an error until `answering`, then names node 1
/// at `broker`.
struct Fake {
    accepted: Arc<AtomicUsize>,
    answering: Arc<AtomicBool>,
    addr: SocketAddr,
}

impl Fake {
    async fn start(broker: SocketAddr) -> Fake {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let fake = Fake {
            accepted: Arc::default(),
            answering: Arc::default(),
            addr: listener.local_addr().unwrap(),
        };
        let (accepted, answering) = (Arc::clone(&fake.accepted), Arc::clone(&fake.answering));
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                accepted.fetch_add(1, Ordering::SeqCst);
                let answering = answering.load(Ordering::SeqCst);
                tokio::spawn(converse(tcp, answering, broker));
            }
        });
        fake
    }

    fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

/// ApiVersions v0, then (when answering) Metadata v1.
async fn converse(mut tcp: TcpStream, answering: bool, broker: SocketAddr) {
    let frame = read_frame(&mut tcp).await;
    let mut versions = ApiVersionsResponse::default();
    if !answering {
        versions.error_code = 35;
        let _ = tcp
            .write_all(&response(
                ApiKey::ApiVersions,
                0,
                request_id(&frame),
                &versions,
            ))
            .await;
        return;
    }
    let mut metadata = ApiVersion::default();
    metadata.api_key = ApiKey::Metadata as i16;
    metadata.max_version = 1;
    versions.api_keys.push(metadata);
    let answer = response(ApiKey::ApiVersions, 0, request_id(&frame), &versions);
    tcp.write_all(&answer).await.unwrap();
    let frame = read_frame(&mut tcp).await;
    let mut node = MetadataResponseBroker::default();
    node.node_id = BrokerId(1);
    node.host = StrBytes::from_string(broker.ip().to_string());
    node.port = i32::from(broker.port());
    let mut brokers = MetadataResponse::default();
    brokers.brokers.push(node);
    let answer = response(ApiKey::Metadata, 1, request_id(&frame), &brokers);
    tcp.write_all(&answer).await.unwrap();
}

/// The correlation id of a request frame.
fn request_id(frame: &[u8]) -> i32 {
    i32::from_be_bytes([frame[8], frame[9], frame[10], frame[11]])
}

/// Serves connections of `cluster` on a fresh port as node 1's broker port.
async fn broker_port(cluster: Arc<ClusterRuntime>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((tcp, peer)) = listener.accept().await {
            let cluster = Arc::clone(&cluster);
            tokio::spawn(serve(
                Incoming::Tcp(Accepted::Here(tcp)),
                peer,
                cluster,
                Role::Broker(1),
            ));
        }
    });
    addr
}

fn lookups(metrics: &Metrics, result: &str) -> f64 {
    let series = format!("sluice_broker_lookups_total{{cluster=\"orders\",result=\"{result}\"}}");
    metric(metrics, &series)
}

#[tokio::test]
async fn clients_retrying_a_failing_lookup_cause_one_upstream_lookup_per_second() {
    let broker = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let fake = Fake::start(broker.local_addr().unwrap()).await;
    let metrics = Arc::new(Metrics::new());
    let config = cluster_config(fake.addr, "");
    let cluster = ClusterRuntime::prepare(&config, 1, &metrics, Gauge::default()).unwrap();
    let port = broker_port(Arc::clone(&cluster)).await;

    // 50 clients at once, each closed without reaching a broker.
    let start = tokio::time::Instant::now();
    let clients = (0..50).map(|_| async move {
        let mut client = TcpStream::connect(port).await.unwrap();
        assert!(closed(&mut client, PATIENCE).await, "closed at once");
    });
    futures_util::future::join_all(clients).await;
    let elapsed = start.elapsed();
    let allowed = 1 + usize::try_from(elapsed.as_secs()).unwrap();
    assert!(
        fake.accepted() <= allowed,
        "{} upstream lookups for 50 clients in {elapsed:?}",
        fake.accepted()
    );
    let failed = lookups(&metrics, "failed");
    assert_eq!(failed, fake.accepted() as f64);
    let spared = lookups(&metrics, "shared") + lookups(&metrics, "cached_failure");
    assert_eq!(failed + spared, 50.0);

    // The upstream recovers: once the failure is forgotten, one lookup
    // learns node 1 and clients reach it.
    fake.answering.store(true, Ordering::SeqCst);
    let before = fake.accepted();
    eventually("node 1 learned", || {
        if cluster.node(1).is_none() {
            let retry = TcpStream::connect(port);
            tokio::spawn(async move { drop(retry.await) });
        }
        cluster.node(1).is_some()
    })
    .await;
    let _client = TcpStream::connect(port).await.unwrap();
    tokio::time::timeout(PATIENCE, broker.accept())
        .await
        .unwrap()
        .unwrap();
    assert!(fake.accepted() <= before + 1, "one lookup to recover");
    assert_eq!(lookups(&metrics, "ok"), 1.0);
    assert!(
        start.elapsed() >= FAILURE_MEMORY,
        "the failure was remembered"
    );
}
