//! `quota`: byte rates (produce, fetch) per cluster, per client id and per
//! principal, and
//! a rate of new connections, enforced the way brokers do (KIP-219: the
//! response carries `throttle_time_ms` and the proxy stops reading that
//! connection for as long). This file reads and validates the settings;
//! `sluice-proxy` measures and enforces them.

use std::num::{NonZeroU32, NonZeroU64};

use super::FilterSpec;
use crate::read::{Cx, Fields, integer};
use crate::yaml::{Mark, Node};

/// The type name used in the configuration.
pub(crate) const NAME: &str = "quota";

/// Client ids tracked (own bucket, own metric series) when `maxClientIds`
/// is not written; later ones share `other`.
pub const DEFAULT_MAX_CLIENT_IDS: u32 = 100;
/// Most client ids `maxClientIds` may ask to track.
pub const MAX_CLIENT_IDS: u32 = 10_000;
/// Principals tracked (own bucket, own metric series) when
/// `maxPrincipals` is not written; later ones share `other`.
pub const DEFAULT_MAX_PRINCIPALS: u32 = 100;
/// Most principals `maxPrincipals` may ask to track.
pub const MAX_PRINCIPALS: u32 = 10_000;
/// Highest byte rate accepted (1 TiB/s): beyond any link, and small enough
/// that rates times windows never overflow.
pub const MAX_BYTES_PER_SECOND: u64 = 1 << 40;
/// Highest connection rate accepted.
pub const MAX_CONNECTIONS_PER_SECOND: u32 = 1_000_000;

const KEYS: &[&str] = &[
    "produceBytesPerSecond",
    "fetchBytesPerSecond",
    "perClientId",
    "perPrincipal",
    "connectionsPerSecond",
    "maxClientIds",
    "maxPrincipals",
];
const RATE_KEYS: &[&str] = &["produceBytesPerSecond", "fetchBytesPerSecond"];

/// Produce and fetch byte rates; either may be absent (not limited).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ByteRates {
    /// Produce request bytes (whole frames) per second.
    pub produce: Option<NonZeroU64>,
    /// Fetch response bytes (whole frames) per second.
    pub fetch: Option<NonZeroU64>,
}

impl ByteRates {
    /// Whether neither rate is set.
    pub fn is_empty(&self) -> bool {
        self.produce.is_none() && self.fetch.is_none()
    }
}

/// A validated `quota` filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuotaSpec {
    /// The cluster's rates: all its clients together.
    pub cluster: ByteRates,
    /// Each client id's own rates (`perClientId`).
    pub per_client_id: ByteRates,
    /// Each principal's own rates (`perPrincipal`); connections without a
    /// principal share one bucket.
    pub per_principal: ByteRates,
    /// New connections accepted per second on the cluster.
    pub connections_per_second: Option<NonZeroU32>,
    /// Client ids with their own bucket and metric series; the rest share
    /// `other`.
    pub max_client_ids: u32,
    /// Principals with their own bucket and metric series; the rest share
    /// `other`.
    pub max_principals: u32,
}

pub(crate) fn build(
    cx: &mut Cx<'_>,
    config: Option<&Node>,
    path: &str,
    mark: Mark,
) -> Option<FilterSpec> {
    let Some(config) = config else {
        return cx.fail(path, mark, "required field is missing");
    };
    let f = Fields::of(cx, config, path, KEYS)?;
    let cluster = rates(cx, &f);
    let own_rates = |cx: &mut Cx<'_>, node: &Node, path: &str| {
        let f = Fields::of(cx, node, path, RATE_KEYS)?;
        let rates = rates(cx, &f)?;
        if rates.is_empty() {
            return cx.fail(
                path,
                node.mark,
                "sets no rate: give produceBytesPerSecond, fetchBytesPerSecond or both",
            );
        }
        Some(rates)
    };
    let per_client_id = f.optional(cx, "perClientId", own_rates);
    let per_principal = f.optional(cx, "perPrincipal", own_rates);
    let connections = f.optional(cx, "connectionsPerSecond", |cx, node, path| {
        let max = i64::from(MAX_CONNECTIONS_PER_SECOND);
        let n = integer(cx, node, path, 1, max)?;
        u32::try_from(n).ok().and_then(NonZeroU32::new)
    });
    let max_client_ids = f.optional(cx, "maxClientIds", |cx, node, path| {
        let n = integer(cx, node, path, 1, i64::from(MAX_CLIENT_IDS))?;
        u32::try_from(n).ok()
    });
    let max_principals = f.optional(cx, "maxPrincipals", |cx, node, path| {
        let n = integer(cx, node, path, 1, i64::from(MAX_PRINCIPALS))?;
        u32::try_from(n).ok()
    });
    let bad = (per_client_id.is_none() && f.has("perClientId"))
        || (per_principal.is_none() && f.has("perPrincipal"))
        || (connections.is_none() && f.has("connectionsPerSecond"))
        || (max_client_ids.is_none() && f.has("maxClientIds"))
        || (max_principals.is_none() && f.has("maxPrincipals"));
    let spec = QuotaSpec {
        cluster: cluster?,
        per_client_id: per_client_id.unwrap_or_default(),
        per_principal: per_principal.unwrap_or_default(),
        connections_per_second: connections,
        max_client_ids: max_client_ids.unwrap_or(DEFAULT_MAX_CLIENT_IDS),
        max_principals: max_principals.unwrap_or(DEFAULT_MAX_PRINCIPALS),
    };
    if bad {
        return None;
    }
    let rates = [spec.cluster, spec.per_client_id, spec.per_principal];
    if rates.iter().all(ByteRates::is_empty) && connections.is_none() {
        return cx.fail(
            path,
            f.mark(),
            "sets no quota: give produceBytesPerSecond, fetchBytesPerSecond, perClientId, perPrincipal or connectionsPerSecond",
        );
    }
    Some(FilterSpec::Quota(spec))
}

/// `produceBytesPerSecond` and `fetchBytesPerSecond` of one mapping;
/// `None` when either is invalid (recorded).
fn rates(cx: &mut Cx<'_>, f: &Fields<'_>) -> Option<ByteRates> {
    let read = |cx: &mut Cx<'_>, node: &Node, path: &str| {
        let max = i64::try_from(MAX_BYTES_PER_SECOND).unwrap_or(i64::MAX);
        let n = integer(cx, node, path, 1, max)?;
        u64::try_from(n).ok().and_then(NonZeroU64::new)
    };
    let produce = f.optional(cx, "produceBytesPerSecond", read);
    let fetch = f.optional(cx, "fetchBytesPerSecond", read);
    let bad = (produce.is_none() && f.has("produceBytesPerSecond"))
        || (fetch.is_none() && f.has("fetchBytesPerSecond"));
    (!bad).then_some(ByteRates { produce, fetch })
}
