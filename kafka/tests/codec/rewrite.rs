//! Address rewriting, per API and per version: the output is compared byte
//! for byte with the encoding of the expected response (the golden frame),
//! and a few literal frames pin the exact bytes across releases.
//!
//! - `per_api`: every rewritten API at every version, and literal frames
//! - `checks`: what passes unchanged, what is refused, and scale
//! - `learning`: what the proxy learns (brokers, never controllers)
//! - `errors`: the error codes handed back to be counted

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{
    ApiKey, BrokerId, DescribeClusterResponse, FetchResponse, FindCoordinatorResponse,
    MetadataResponse, ProduceResponse, describe_cluster_response, fetch_response,
    find_coordinator_response, metadata_response, produce_response,
};
use kafka_protocol::protocol::{Encodable, StrBytes};
use sluice_config::model::BrokerPorts;
use sluice_config::types::Port;
use sluice_kafka::frame::RequestHeader;
use sluice_kafka::rewrite::{Advertised, Learned, rewrite_response, rewrites};

/// A KIP-951 response's endpoints (`$ty` is its `NodeEndpoint`) from
/// `(node id, host, port)`.
macro_rules! endpoints {
    ($ty:ty, $nodes:expr) => {
        $nodes
            .iter()
            .map(|(id, host, port): &(i32, &str, i32)| {
                let mut e = <$ty>::default();
                e.node_id = BrokerId(*id);
                e.host = StrBytes::from_string((*host).to_owned());
                e.port = *port;
                e
            })
            .collect::<Vec<$ty>>()
    };
}

/// Upstream nodes 1 and 2 are in the proxy's range (ports 19093-19094 for
/// node ids 1-2); node 7 is not.
mod as_it_came;
mod checks;
mod errors;
mod learning;
mod per_api;
mod splice;
mod streamed;

fn advertised() -> Advertised {
    Advertised::new(
        "proxy.example",
        BrokerPorts {
            start: Port::new(19093).unwrap(),
            count: 2,
            first_node_id: 1,
        },
    )
}

const UPSTREAM: [(i32, &str, i32); 3] = [
    (1, "kafka-1.upstream", 9092),
    (2, "kafka-2.upstream", 9093),
    (7, "kafka-7.upstream", 9094),
];

fn frame<T: Encodable>(api: ApiKey, version: i16, body: &T) -> Bytes {
    sluice_kafka::encode::response(api, version, 42, body).unwrap()
}

fn req(api: ApiKey, version: i16) -> RequestHeader {
    RequestHeader {
        api_key: api as i16,
        api_version: version,
        correlation_id: 42,
    }
}

fn learned_all() -> Vec<Learned> {
    UPSTREAM
        .iter()
        .map(|(id, host, port)| Learned {
            node_id: *id,
            host: (*host).to_owned(),
            port: *port,
        })
        .collect()
}

fn assert_no_upstream(bytes: &[u8], what: &str) {
    assert!(
        !bytes.windows(8).any(|w| w == b"upstream"),
        "{what}: an upstream host reached the client"
    );
}

fn metadata(version: i16, nodes: &[(i32, &str, i32)]) -> MetadataResponse {
    let mut r = MetadataResponse::default();
    r.controller_id = BrokerId(1);
    r.brokers = nodes
        .iter()
        .map(|(id, host, port)| {
            let mut b = metadata_response::MetadataResponseBroker::default();
            b.node_id = BrokerId(*id);
            b.host = StrBytes::from_string((*host).to_owned());
            b.port = *port;
            if version >= 1 {
                b.rack = Some(StrBytes::from_static_str("rack-a"));
            }
            b
        })
        .collect();
    r
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
