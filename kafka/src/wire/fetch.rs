//! The parts of a Fetch response the streamed rewrite (`streamed`) walks
//! one at a time, and the walk of the tagged fields that end a part.

use super::{Malformed, Schema, Walk, schemas};

/// The parts of a Fetch response the streamed rewrite walks one at a time
/// (`streamed`): the response itself (its own tagged fields), a topic, a
/// partition and an aborted transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FetchPart {
    Response,
    Topic,
    Partition,
    Aborted,
}

/// The layout of a part of a Fetch response.
pub(crate) fn fetch_part(part: FetchPart) -> &'static Schema {
    match part {
        FetchPart::Response => &schemas::FETCH_RESPONSE,
        FetchPart::Topic => &schemas::FETCH_RESPONSE_FETCHABLE_TOPIC_RESPONSE,
        FetchPart::Partition => &schemas::FETCH_RESPONSE_PARTITION_DATA,
        FetchPart::Aborted => &schemas::FETCH_RESPONSE_ABORTED_TRANSACTION,
    }
}

/// Walks `bytes` as the tagged fields that end a `schema` structure at
/// `version` (a flexible one), as [`check`] walks them inside a whole
/// message; returns how many bytes they take.
pub(crate) fn check_tagged(
    schema: &Schema,
    version: i16,
    bytes: &[u8],
) -> Result<usize, Malformed> {
    let mut walk = Walk {
        bytes,
        at: 0,
        // Not the message's own level: no tag is looked for.
        depth: 2,
        wanted: u32::MAX,
        seen: false,
        tagged_at: None,
    };
    walk.tagged(schema, version).map_err(|mut e| {
        e.0.path.push(schema.name);
        e
    })?;
    Ok(walk.at)
}
