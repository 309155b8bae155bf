//! The client signals with real parts: the data plane in front of a real
//! broker (tansu, node id 111, in-memory), with real clients on loopback
//! (kcat, and Kafka frames made by kafka-protocol).

use std::net::SocketAddr;
use std::process::Command;

use kafka_protocol::messages::{MetadataRequest, metadata_request::MetadataRequestTopic};
use kafka_protocol::protocol::StrBytes;
use sluice_testkit::ports::port;
use sluice_testkit::process::Proc;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpSocket;

use super::backpressure::{DENY_DELETE_TOPICS, delete_topics};
use super::*;
use crate::signals::{ClientSignals, Thresholds, judge, since};

/// tansu's node id.
const NODE: i32 = 111;

/// A tansu broker; stopped when dropped.
struct Tansu {
    addr: SocketAddr,
    _proc: Proc,
}

fn tansu() -> Tansu {
    let addr: SocketAddr = format!("127.0.0.1:{}", port()).parse().unwrap();
    let url = format!("tcp://{addr}");
    let mut cmd = Command::new("tansu");
    cmd.args([
        "broker",
        "--listener-url",
        &url,
        "--advertised-listener-url",
        &url,
    ])
    .args(["--storage-engine", "memory://tansu/"]);
    let mut proc = Proc::spawn("tansu", cmd);
    proc.wait_for_line("ready in", Duration::from_secs(30));
    Tansu { addr, _proc: proc }
}

/// Cluster `orders` in front of `upstream`, its one broker (node 111)
/// advertised at 127.0.0.1:`broker_port`, with more YAML.
fn config(upstream: SocketAddr, broker_port: u16, more: &str) -> VirtualCluster {
    let yaml = format!(
        "virtualClusters:
  - name: orders
    upstream:
      bootstrapServers: [\"{upstream}\"]
    gateway:
      listenHost: 127.0.0.1
      advertisedHost: 127.0.0.1
      bootstrapPort: {bootstrap}
      brokerPorts: {{ start: {broker_port}, count: 1, firstNodeId: {NODE} }}
{more}",
        bootstrap = port(),
    );
    let valid = validate(yaml.as_bytes(), &MemoryFiles::default())
        .unwrap_or_else(|e| panic!("test configuration: {e:?}"));
    valid.config.virtual_clusters[0].clone()
}

/// Serves `cluster`'s broker port of node 111 on 127.0.0.1:`port`.
async fn listen_broker(cluster: Arc<ClusterRuntime>, port: u16) {
    let listener = TcpListener::bind(("127.0.0.1", port)).await.unwrap();
    tokio::spawn(async move {
        while let Ok((tcp, peer)) = listener.accept().await {
            let role = Role::Broker(NODE);
            tokio::spawn(serve(
                Incoming::Tcp(Accepted::Here(tcp)),
                peer,
                Arc::clone(&cluster),
                role,
            ));
        }
    });
}

/// A client connection to `to` from the loopback address `from`.
async fn connect_from(from: &str, to: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
    socket.connect(to).await.unwrap()
}

/// Asks `to` for the Metadata of `topics` (all with `None`) from `from`,
/// and returns the connection once answered.
async fn metadata(from: &str, to: SocketAddr, topics: Option<&[&str]>) -> TcpStream {
    let mut client = connect_from(from, to).await;
    let mut body = MetadataRequest::default();
    body.topics = topics.map(|names| {
        names
            .iter()
            .map(|n| {
                let mut t = MetadataRequestTopic::default();
                t.name = Some(StrBytes::from_string((*n).to_owned()).into());
                t
            })
            .collect()
    });
    body.allow_auto_topic_creation = false;
    client
        .write_all(&request(ApiKey::Metadata, 12, 1, &body))
        .await
        .unwrap();
    read_frame(&mut client).await;
    client
}

/// A real client (confluent-kafka, the Python clients' venv) asks for the
/// Metadata of one topic through `bootstrap`; prints its error.
async fn list_topic(bootstrap: SocketAddr, topic: &str) -> String {
    let venv = std::env::var_os("SLUICE_VENV").map_or_else(
        || std::path::PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache/sluice/venv"),
        std::path::PathBuf::from,
    );
    let script = "import sys\n\
from confluent_kafka.admin import AdminClient\n\
md = AdminClient({'bootstrap.servers': sys.argv[1]}).list_topics(topic=sys.argv[2], timeout=10)\n\
print([str(t.error) for t in md.topics.values()])\n";
    let args = [script.to_owned(), bootstrap.to_string(), topic.to_owned()];
    let out = tokio::task::spawn_blocking(move || {
        Command::new(venv.join("bin/python"))
            .arg("-c")
            .args(&args)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn signals(metrics: &Metrics) -> ClientSignals {
    metrics.signals().signals("orders")
}

/// tansu creates any topic asked for by a valid name, whatever the request
/// says: its own Metadata topic error is for a name Kafka refuses.
const INVALID_TOPIC: &str = "metadata:INVALID_TOPIC_EXCEPTION";
const BAD_NAME: &str = "bad name!";

#[tokio::test]
async fn metadata_errors_are_counted_per_cluster_across_generations() {
    let broker = tansu();
    let metrics = Arc::new(Metrics::new());
    let config = config(broker.addr, port(), "");
    let first = ClusterRuntime::prepare(&config, 1, &metrics, Gauge::default()).unwrap();
    let bootstrap = listen(first).await;

    let said = list_topic(bootstrap, BAD_NAME).await;
    assert!(said.contains("Invalid topic"), "the client said: {said}");
    eventually("the client's invalid topic is counted", || {
        signals(&metrics)
            .response_errors
            .get(INVALID_TOPIC)
            .copied()
            >= Some(1)
    })
    .await;
    let after_first = signals(&metrics);
    assert!(after_first.connections >= 1 && after_first.requests >= 2);
    let series = "sluice_response_errors_total{cluster=\"orders\",api=\"Metadata\",error=\"INVALID_TOPIC_EXCEPTION\"}";
    assert_eq!(
        metric(&metrics, series),
        after_first.response_errors[INVALID_TOPIC] as f64
    );

    // A reload restarts the cluster: the next generation counts on.
    let second = ClusterRuntime::prepare(&config, 2, &metrics, Gauge::default()).unwrap();
    let bootstrap = listen(second).await;
    metadata("127.0.0.1", bootstrap, Some(&[BAD_NAME])).await;
    let now = signals(&metrics);
    assert_eq!(
        now.response_errors[INVALID_TOPIC],
        after_first.response_errors[INVALID_TOPIC] + 1
    );
    assert_eq!(now.connections, after_first.connections + 1);
    assert!(now.window_ms >= after_first.window_ms);
    // Every topic's Metadata (tansu has made none) carries no error.
    metadata("127.0.0.1", bootstrap, None).await;
    assert_eq!(signals(&metrics).response_errors, now.response_errors);
}

#[tokio::test]
async fn a_client_told_the_brokers_that_never_reaches_one_is_counted() {
    let broker = tansu();
    let metrics = Arc::new(Metrics::new());
    let broker_port = port();
    let config = config(broker.addr, broker_port, "");
    let cluster = ClusterRuntime::prepare(&config, 1, &metrics, Gauge::default()).unwrap();
    let bootstrap = listen(Arc::clone(&cluster)).await;
    listen_broker(Arc::clone(&cluster), broker_port).await;

    // 127.0.0.1 is told node 111 at 127.0.0.1:broker_port, and goes there.
    let _told = metadata("127.0.0.1", bootstrap, None).await;
    let broker_addr: SocketAddr = ([127, 0, 0, 1], broker_port).into();
    let mut reached = connect_from("127.0.0.1", broker_addr).await;
    reached
        .write_all(&request(
            ApiKey::Metadata,
            12,
            1,
            &MetadataRequest::default(),
        ))
        .await
        .unwrap();
    read_frame(&mut reached).await;
    // 127.0.0.2 is told too, and never comes.
    let _stranded = metadata("127.0.0.2", bootstrap, None).await;

    eventually("the stranded client is counted after the grace", || {
        signals(&metrics).bootstrap_only_clients >= 1
    })
    .await;
    // Both were told at about the same time: the one that reached the
    // broker would have been counted with it.
    assert_eq!(signals(&metrics).bootstrap_only_clients, 1);
}

/// The node-id case: `brokerPorts.firstNodeId` maps no port to the
/// broker's node id.
#[tokio::test]
async fn a_node_id_the_gateway_maps_to_no_port_is_counted() {
    use kafka_protocol::messages::FindCoordinatorRequest;
    let broker = tansu();
    let metrics = Arc::new(Metrics::new());
    let mut config = config(broker.addr, port(), "");
    if let crate::config::model::Routing::Ports(p) = &mut config.gateway.routing {
        p.broker_ports.first_node_id = 1;
    }
    let cluster = ClusterRuntime::prepare(&config, 1, &metrics, Gauge::default()).unwrap();
    let bootstrap = listen(cluster).await;
    let mut client = metadata("127.0.0.1", bootstrap, None).await;
    let mut find = FindCoordinatorRequest::default();
    find.key = StrBytes::from_static_str("group-1");
    client
        .write_all(&request(ApiKey::FindCoordinator, 3, 2, &find))
        .await
        .unwrap();
    read_frame(&mut client).await;
    let s = signals(&metrics);
    assert!(s.unknown_node_ids >= 2, "{s:?}");
    assert_eq!(
        s.response_errors
            .get("find_coordinator:COORDINATOR_NOT_AVAILABLE")
            .copied(),
        Some(1),
        "{s:?}"
    );
}

#[tokio::test]
async fn a_deny_apis_filters_refusals_are_no_signal() {
    let broker = tansu();
    let metrics = Arc::new(Metrics::new());
    let config = config(broker.addr, port(), DENY_DELETE_TOPICS);
    let cluster = ClusterRuntime::prepare(&config, 1, &metrics, Gauge::default()).unwrap();
    let bootstrap = listen(cluster).await;
    let before = signals(&metrics);
    let mut client = connect_from("127.0.0.1", bootstrap).await;
    for id in 0..20 {
        client.write_all(&delete_topics(id)).await.unwrap();
        read_frame(&mut client).await;
    }
    let denied = "sluice_denied_requests_total{cluster=\"orders\",api=\"DeleteTopics\"}";
    assert_eq!(metric(&metrics, denied), 20.0);
    let during = since(&signals(&metrics), &before);
    assert_eq!(during.requests, 0, "refused requests are not forwarded");
    assert!(during.response_errors.is_empty());
    assert!(during.closed_on_error.is_empty());
    let quiet = ClientSignals {
        window_ms: 300_000,
        ..ClientSignals::default()
    };
    assert_eq!(judge("orders", &quiet, &during, &Thresholds::default()), []);
}
