//! The bounded vocabularies of the client signals, named once: why a
//! connection closed on an error, which decoded APIs' errors are counted,
//! and the Kafka error names.

use std::sync::LazyLock;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::ApiKey;

/// Why a client connection closed on an error: the `reason` label of
/// `sluice_connections_closed_on_error_total` and a key of
/// `closedOnError`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CloseReason {
    /// The client's socket failed, or it closed in the middle of a frame.
    Io,
    /// A frame over `limits.maxFrameBytes`.
    TooLarge,
    /// A frame that is not Kafka.
    Malformed,
    /// A started frame did not arrive whole within `limits.frameTimeout`.
    FrameTimeout,
    /// The client took no bytes of a frame within `limits.frameTimeout`.
    WriteTimeout,
    /// A response whose broker addresses could not be rewritten.
    Rewrite,
    /// The upstream refused the proxy's own lookup for want of SASL.
    UpstreamAuth,
    /// No upstream connection (connect, TLS, or the node's lookup failed).
    Upstream,
    /// The client's TLS handshake failed.
    Tls,
    /// The client did not authenticate with the proxy (`authentication.sasl`).
    Authentication,
    /// The upstream broke the protocol (correlation ids, unsolicited bytes,
    /// closed with requests in flight).
    UpstreamProtocol,
    /// Requests still in flight at the drain deadline (never counted as a
    /// signal: the end of a generation, not a client's failure).
    DrainDeadline,
}

impl CloseReason {
    /// Every reason, in the order of the signal's counters.
    pub(crate) const ALL: [CloseReason; 12] = [
        CloseReason::Io,
        CloseReason::TooLarge,
        CloseReason::Malformed,
        CloseReason::FrameTimeout,
        CloseReason::WriteTimeout,
        CloseReason::Rewrite,
        CloseReason::UpstreamAuth,
        CloseReason::Upstream,
        CloseReason::Tls,
        CloseReason::Authentication,
        CloseReason::UpstreamProtocol,
        CloseReason::DrainDeadline,
    ];

    /// Its name, in the metric and in `closedOnError`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            CloseReason::Io => "io",
            CloseReason::TooLarge => "too_large",
            CloseReason::Malformed => "malformed",
            CloseReason::FrameTimeout => "frame_timeout",
            CloseReason::WriteTimeout => "write_timeout",
            CloseReason::Rewrite => "rewrite",
            CloseReason::UpstreamAuth => "upstream_auth",
            CloseReason::Upstream => "upstream",
            CloseReason::Tls => "tls",
            CloseReason::Authentication => "authentication",
            CloseReason::UpstreamProtocol => "upstream_protocol",
            CloseReason::DrainDeadline => "drain_deadline",
        }
    }

    /// Its place in [`CloseReason::ALL`].
    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// The APIs whose responses the proxy decodes anyway (to rewrite broker
/// addresses) and whose error codes are counted. Produce and Fetch are
/// never decoded for this: their bodies stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DecodedApi {
    /// Metadata: the response's, its topics' and partitions' errors.
    Metadata,
    /// FindCoordinator: each coordinator's error.
    FindCoordinator,
    /// DescribeCluster: the response's error.
    DescribeCluster,
}

impl DecodedApi {
    /// Every API counted, in the order of the signal's counters.
    pub(crate) const ALL: [DecodedApi; 3] = [
        DecodedApi::Metadata,
        DecodedApi::FindCoordinator,
        DecodedApi::DescribeCluster,
    ];

    /// The API of a request's key, if its errors are counted.
    pub(crate) fn of(api_key: i16) -> Option<DecodedApi> {
        match ApiKey::try_from(api_key).ok()? {
            ApiKey::Metadata => Some(DecodedApi::Metadata),
            ApiKey::FindCoordinator => Some(DecodedApi::FindCoordinator),
            ApiKey::DescribeCluster => Some(DecodedApi::DescribeCluster),
            _ => None,
        }
    }

    /// Its name in `responseErrors` keys (`metadata:…`).
    pub(crate) fn key(self) -> &'static str {
        match self {
            DecodedApi::Metadata => "metadata",
            DecodedApi::FindCoordinator => "find_coordinator",
            DecodedApi::DescribeCluster => "describe_cluster",
        }
    }

    /// Its `api` label, as `sluice_requests_total` names it.
    pub(crate) fn label(self) -> &'static str {
        match self {
            DecodedApi::Metadata => "Metadata",
            DecodedApi::FindCoordinator => "FindCoordinator",
            DecodedApi::DescribeCluster => "DescribeCluster",
        }
    }

    /// Its place in [`DecodedApi::ALL`].
    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// Error codes from -1 up to this one (excluded) have a slot of their own
/// (Kafka 4.1 ends at 133); any other code is counted as [`OTHER`].
const CODES_END: i16 = 160;

/// The `error` label of codes Kafka (as the proxy knows it) does not name.
pub(crate) const OTHER: &str = "OTHER";

/// Slots of error codes per API: one per code from -1 below [`CODES_END`],
/// and [`OTHER`].
pub(crate) const ERROR_SLOTS: usize = (CODES_END + 1) as usize + 1;

/// The slot of an error code other than 0.
pub(crate) fn error_slot(code: i16) -> usize {
    let named = !matches!(
        ResponseError::try_from_code(code),
        None | Some(ResponseError::Unknown(_))
    );
    if named && (-1..CODES_END).contains(&code) {
        // In range: -1 is slot 0.
        (code + 1) as usize
    } else {
        ERROR_SLOTS - 1
    }
}

/// The Kafka name of each slot's error (`UNKNOWN_TOPIC_OR_PARTITION`),
/// made once.
static ERROR_NAMES: LazyLock<Vec<String>> = LazyLock::new(|| {
    (0..ERROR_SLOTS)
        .map(|slot| {
            let code = i16::try_from(slot).unwrap_or(i16::MAX) - 1;
            match ResponseError::try_from_code(code) {
                Some(e) if slot + 1 < ERROR_SLOTS && !matches!(e, ResponseError::Unknown(_)) => {
                    screaming_snake(&format!("{e:?}"))
                }
                _ => OTHER.to_owned(),
            }
        })
        .collect()
});

/// The name of a slot's error.
pub(crate) fn error_name(slot: usize) -> &'static str {
    ERROR_NAMES.get(slot).map_or(OTHER, String::as_str)
}

/// `UnknownTopicOrPartition` → `UNKNOWN_TOPIC_OR_PARTITION`.
fn screaming_snake(camel: &str) -> String {
    let mut out = String::with_capacity(camel.len() + 8);
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_have_their_kafka_names() {
        assert_eq!(error_name(error_slot(3)), "UNKNOWN_TOPIC_OR_PARTITION");
        assert_eq!(error_name(error_slot(-1)), "UNKNOWN_SERVER_ERROR");
        assert_eq!(error_name(error_slot(15)), "COORDINATOR_NOT_AVAILABLE");
        assert_eq!(error_name(error_slot(133)), "SHARE_SESSION_LIMIT_REACHED");
        // Unnamed or out of range: one bounded label.
        for code in [-2, 150, 159, 160, i16::MAX, i16::MIN] {
            assert_eq!(error_name(error_slot(code)), OTHER, "code {code}");
        }
    }

    #[test]
    fn reasons_and_apis_sit_at_their_index() {
        for (i, r) in CloseReason::ALL.iter().enumerate() {
            assert_eq!(r.index(), i);
        }
        for (i, a) in DecodedApi::ALL.iter().enumerate() {
            assert_eq!(a.index(), i);
        }
        assert_eq!(DecodedApi::of(3), Some(DecodedApi::Metadata));
        assert_eq!(DecodedApi::of(0), None);
    }
}
