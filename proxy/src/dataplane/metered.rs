//! What the response to a request the quota filter metered needs (`throttle`
//! does the counting and the holding).

use sluice_config::filter::QuotaSpec;

use crate::quota::Holders;

/// What the response to a metered request needs.
#[derive(Debug)]
pub(super) enum Metered {
    /// A Produce that left its bucket owing: the response carries the
    /// throttle time, until the client's next request conforms.
    Produce { throttle_ms: i32 },
    /// A Fetch: its response counts against the client's quota.
    Fetch { spec: QuotaSpec, client: Holders },
}
