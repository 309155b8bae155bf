//! Every metric family of the data plane, and their registration.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::labels::{
    ApiLabels, CauseLabels, ClusterLabel, DirectionLabels, OperationLabels, ReasonLabels,
    ResultLabels, UnroutedLabel,
};

/// Every metric family of the data plane.
#[derive(Debug, Default, Clone)]
pub(super) struct Families {
    pub(super) connections_active: Family<ClusterLabel, Gauge>,
    pub(super) connections_total: Family<ClusterLabel, Counter>,
    pub(super) connections_rejected: Family<ReasonLabels, Counter>,
    pub(super) bytes: Family<DirectionLabels, Counter>,
    pub(super) spliced: Family<DirectionLabels, Counter>,
    pub(super) requests: Family<ApiLabels, Counter>,
    pub(super) rewrites: Family<ApiLabels, Counter>,
    pub(super) denied: Family<ApiLabels, Counter>,
    pub(super) policy_denied: Family<OperationLabels, Counter>,
    pub(super) fetch_sessions_reset: Family<ClusterLabel, Counter>,
    pub(super) upstream_connect_failures: Family<ClusterLabel, Counter>,
    pub(super) connections_closed_on_error: Family<ReasonLabels, Counter>,
    pub(super) client_errors: Family<CauseLabels, Counter>,
    pub(super) unknown_nodes: Family<ClusterLabel, Counter>,
    pub(super) drained: Family<ResultLabels, Counter>,
    pub(super) broker_lookups: Family<ResultLabels, Counter>,
    pub(super) sni_unrouted: Family<UnroutedLabel, Counter>,
}

impl Families {
    /// Registers every family of the data plane in `r`.
    pub(super) fn register(&self, r: &mut Registry) {
        r.register(
            "connections_active",
            "Client connections open now",
            self.connections_active.clone(),
        );
        r.register(
            "connections",
            "Client connections accepted",
            self.connections_total.clone(),
        );
        r.register(
            "connections_rejected",
            "Client connections closed at once (reason: max_connections, connection_rate: over the quota filter's connectionsPerSecond, no_route)",
            self.connections_rejected.clone(),
        );
        r.register(
            "bytes",
            "Bytes forwarded (direction: to_upstream, to_client)",
            self.bytes.clone(),
        );
        r.register(
            "spliced_bytes",
            "Bytes of sluice_bytes_total moved by splice(2) between two plaintext sockets, never copied into the proxy (direction: to_upstream, to_client)",
            self.spliced.clone(),
        );
        self.register_outcomes(r);
    }

    /// The families of what became of requests and connections.
    fn register_outcomes(&self, r: &mut Registry) {
        r.register(
            "requests",
            "Requests received from clients, by Kafka API",
            self.requests.clone(),
        );
        r.register(
            "rewrites",
            "Responses whose broker addresses were rewritten",
            self.rewrites.clone(),
        );
        r.register(
            "denied_requests",
            "Requests answered by a filter with an error",
            self.denied.clone(),
        );
        r.register(
            "policy_denied",
            "Topics a topic policy refused, one per topic of each request (operation: produce, consume, describe, create, delete, alter, describe-configs, alter-configs); never counted as errors in the client signals",
            self.policy_denied.clone(),
        );
        r.register(
            "fetch_sessions_reset",
            "Incremental Fetch requests (KIP-227) the proxy answered INVALID_FETCH_SESSION_EPOCH because the topic policy's consume rules changed since the session's full Fetch: the client fetches in full again, judged by the rules in force, with no error for the application",
            self.fetch_sessions_reset.clone(),
        );
        r.register(
            "upstream_connect_failures",
            "Failed attempts to connect to an upstream broker",
            self.upstream_connect_failures.clone(),
        );
        r.register(
            "connections_closed_on_error",
            "Connections closed because of a protocol error (reason: too_large, malformed, frame_timeout, write_timeout, rewrite, upstream, upstream_auth: the upstream refused the proxy's own lookup for want of SASL)",
            self.connections_closed_on_error.clone(),
        );
        r.register(
            "client_errors",
            "Errors clients caused, each closing its connection (cause: malformed, too_large, unsupported_version: a version the proxy does not serve, frame_timeout); warned about at most once per cause per 10 s per cluster",
            self.client_errors.clone(),
        );
        r.register(
            "unknown_nodes",
            "Upstream node ids seen outside the cluster's broker port range",
            self.unknown_nodes.clone(),
        );
        r.register(
            "drained_connections",
            "Connections of draining generations that ended (result: clean at a request boundary, or before they were served; forced at drainTimeout while served)",
            self.drained.clone(),
        );
        r.register(
            "broker_lookups",
            "The proxy's own lookups of a cluster's brokers, for connections to broker ports of nodes it does not know yet (result: ok, failed, cached_failure: failed at once from a failure remembered for 1 s, shared: the outcome of another connection's lookup in flight)",
            self.broker_lookups.clone(),
        );
        r.register(
            "sni_unrouted_connections",
            "Connections on an SNI port closed because no cluster has their TLS server name (reason: unknown, missing: none sent or not TLS)",
            self.sni_unrouted.clone(),
        );
        for reason in ["unknown", "missing"] {
            self.sni_unrouted
                .get_or_create_owned(&UnroutedLabel { reason });
        }
    }
}
