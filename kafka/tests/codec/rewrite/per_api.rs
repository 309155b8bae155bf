//! Every rewritten API, per version, against golden frames.

use super::*;

#[test]
fn metadata_every_version() {
    let range = ApiKey::Metadata.valid_versions();
    for v in range.min..=range.max {
        assert!(rewrites(ApiKey::Metadata as i16, v));
        let input = frame(ApiKey::Metadata, v, &metadata(v, &UPSTREAM));
        let out = rewrite_response(&input, &req(ApiKey::Metadata, v), &advertised()).unwrap();
        let golden = frame(
            ApiKey::Metadata,
            v,
            &metadata(
                v,
                &[(1, "proxy.example", 19093), (2, "proxy.example", 19094)],
            ),
        );
        assert_eq!(out.frame.to_bytes(), golden, "Metadata v{v}");
        assert_eq!(out.learned, learned_all(), "Metadata v{v}");
        assert_eq!(out.unmapped, [7], "Metadata v{v}");
        assert_no_upstream(&out.frame.to_bytes(), &format!("Metadata v{v}"));
    }
}

fn coordinator(version: i16, node: (i32, &str, i32), error: i16) -> FindCoordinatorResponse {
    let mut r = FindCoordinatorResponse::default();
    if version < 4 {
        r.node_id = BrokerId(node.0);
        r.host = StrBytes::from_string(node.1.to_owned());
        r.port = node.2;
        r.error_code = error;
    } else {
        let mut c = find_coordinator_response::Coordinator::default();
        c.key = StrBytes::from_static_str("group-1");
        c.node_id = BrokerId(node.0);
        c.host = StrBytes::from_string(node.1.to_owned());
        c.port = node.2;
        c.error_code = error;
        r.coordinators = vec![c];
    }
    r
}

fn not_available(version: i16) -> FindCoordinatorResponse {
    let mut r = coordinator(version, (-1, "", -1), 15);
    let msg = Some(StrBytes::from_static_str(
        "coordinator is outside the proxy's broker port range",
    ));
    if version < 4 {
        if version >= 1 {
            r.error_message = msg;
        }
    } else {
        r.coordinators[0].error_message = msg;
    }
    r
}

#[test]
fn find_coordinator_every_version_single_and_batched() {
    let range = ApiKey::FindCoordinator.valid_versions();
    for v in range.min..=range.max {
        let input = frame(ApiKey::FindCoordinator, v, &coordinator(v, UPSTREAM[1], 0));
        let out =
            rewrite_response(&input, &req(ApiKey::FindCoordinator, v), &advertised()).unwrap();
        let golden = frame(
            ApiKey::FindCoordinator,
            v,
            &coordinator(v, (2, "proxy.example", 19094), 0),
        );
        assert_eq!(out.frame.to_bytes(), golden, "FindCoordinator v{v}");
        assert_no_upstream(&out.frame.to_bytes(), &format!("FindCoordinator v{v}"));

        // A coordinator outside the range becomes COORDINATOR_NOT_AVAILABLE.
        let input = frame(ApiKey::FindCoordinator, v, &coordinator(v, UPSTREAM[2], 0));
        let out =
            rewrite_response(&input, &req(ApiKey::FindCoordinator, v), &advertised()).unwrap();
        assert_eq!(
            out.frame.to_bytes(),
            frame(ApiKey::FindCoordinator, v, &not_available(v)),
            "FindCoordinator v{v}"
        );
        assert_eq!(out.unmapped, [7]);
    }
}

fn cluster(nodes: &[(i32, &str, i32)]) -> DescribeClusterResponse {
    let mut r = DescribeClusterResponse::default();
    r.cluster_id = StrBytes::from_static_str("cluster-a");
    r.brokers = nodes
        .iter()
        .map(|(id, host, port)| {
            let mut b = describe_cluster_response::DescribeClusterBroker::default();
            b.broker_id = BrokerId(*id);
            b.host = StrBytes::from_string((*host).to_owned());
            b.port = *port;
            b
        })
        .collect();
    r
}

#[test]
fn describe_cluster_every_version() {
    let range = ApiKey::DescribeCluster.valid_versions();
    for v in range.min..=range.max {
        let input = frame(ApiKey::DescribeCluster, v, &cluster(&UPSTREAM));
        let out =
            rewrite_response(&input, &req(ApiKey::DescribeCluster, v), &advertised()).unwrap();
        let golden = frame(
            ApiKey::DescribeCluster,
            v,
            &cluster(&[(1, "proxy.example", 19093), (2, "proxy.example", 19094)]),
        );
        assert_eq!(out.frame.to_bytes(), golden, "DescribeCluster v{v}");
        assert_eq!(out.learned, learned_all());
    }
}

#[test]
fn produce_node_endpoints_from_v10() {
    let endpoints = |nodes: &[(i32, &str, i32)]| endpoints!(produce_response::NodeEndpoint, nodes);
    let range = ApiKey::Produce.valid_versions();
    for v in range.min..=range.max {
        assert_eq!(rewrites(ApiKey::Produce as i16, v), v >= 10, "Produce v{v}");
        if v < 10 {
            continue;
        }
        let mut r = ProduceResponse::default();
        r.node_endpoints = endpoints(&UPSTREAM);
        let out = rewrite_response(
            &frame(ApiKey::Produce, v, &r),
            &req(ApiKey::Produce, v),
            &advertised(),
        )
        .unwrap();
        let mut g = ProduceResponse::default();
        g.node_endpoints = endpoints(&[(1, "proxy.example", 19093), (2, "proxy.example", 19094)]);
        assert_eq!(
            out.frame.to_bytes(),
            frame(ApiKey::Produce, v, &g),
            "Produce v{v}"
        );
        assert_no_upstream(&out.frame.to_bytes(), &format!("Produce v{v}"));
    }
}

#[test]
fn fetch_node_endpoints_from_v16() {
    let endpoints = |nodes: &[(i32, &str, i32)]| endpoints!(fetch_response::NodeEndpoint, nodes);
    let range = ApiKey::Fetch.valid_versions();
    for v in range.min..=range.max {
        assert_eq!(rewrites(ApiKey::Fetch as i16, v), v >= 16, "Fetch v{v}");
        if v < 16 {
            continue;
        }
        let mut r = FetchResponse::default();
        r.node_endpoints = endpoints(&UPSTREAM);
        let out = rewrite_response(
            &frame(ApiKey::Fetch, v, &r),
            &req(ApiKey::Fetch, v),
            &advertised(),
        )
        .unwrap();
        let mut g = FetchResponse::default();
        g.node_endpoints = endpoints(&[(1, "proxy.example", 19093), (2, "proxy.example", 19094)]);
        assert_eq!(
            out.frame.to_bytes(),
            frame(ApiKey::Fetch, v, &g),
            "Fetch v{v}"
        );
    }
}

#[test]
fn literal_golden_frames_pin_the_bytes() {
    // Metadata v1 with node 1 at kafka-1.upstream:9092, correlation id 42.
    let input = frame(ApiKey::Metadata, 1, &metadata(1, &UPSTREAM[..1]));
    let out = rewrite_response(&input, &req(ApiKey::Metadata, 1), &advertised()).unwrap();
    assert_eq!(
        hex(&out.frame.to_bytes()),
        "0000002f0000002a0000000100000001000d70726f78792e6578616d706c6500004a9500067261636b2d61\
         0000000100000000"
    );
    // FindCoordinator v3 (flexible) pointing at node 2.
    let input = frame(ApiKey::FindCoordinator, 3, &coordinator(3, UPSTREAM[1], 0));
    let out = rewrite_response(&input, &req(ApiKey::FindCoordinator, 3), &advertised()).unwrap();
    assert_eq!(
        hex(&out.frame.to_bytes()),
        "000000230000002a0000000000000001000000020e70726f78792e6578616d706c6500004a9600"
    );
}

#[test]
fn rewriting_is_deterministic_and_idempotent() {
    let input = frame(ApiKey::Metadata, 12, &metadata(12, &UPSTREAM));
    let a = rewrite_response(&input, &req(ApiKey::Metadata, 12), &advertised()).unwrap();
    let b = rewrite_response(&input, &req(ApiKey::Metadata, 12), &advertised()).unwrap();
    assert_eq!(a.frame.to_bytes(), b.frame.to_bytes());
    let again = rewrite_response(
        &a.frame.to_bytes(),
        &req(ApiKey::Metadata, 12),
        &advertised(),
    )
    .unwrap();
    assert_eq!(again.frame.to_bytes(), a.frame.to_bytes());
}
