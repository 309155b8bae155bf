//! ApiVersions before authentication, answered by the proxy: the
//! upstream's versions (asked once per generation on a connection of the
//! proxy's own, which needs no SASL: brokers answer ApiVersions first),
//! capped as every ApiVersions answer is, with SaslHandshake offered from
//! v1 (v0 sends the SASL tokens unframed) and SaslAuthenticate listed.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{ApiKey, ApiVersionsResponse};
use sluice_kafka::encode;
use sluice_kafka::versions::{cap_api_versions, unsupported_api_versions};

use crate::dataplane::client;
use crate::dataplane::cluster::ClusterRuntime;
use crate::dataplane::direction::ConnError;
use crate::dataplane::upstream::{self, UpstreamError};

/// The answer to an ApiVersions of `version` (correlation id `corr`).
pub(super) async fn answer(
    cluster: &ClusterRuntime,
    version: i16,
    corr: i32,
) -> Result<Bytes, ConnError> {
    let range = ApiKey::ApiVersions.valid_versions();
    if !(range.min..=range.max).contains(&version) {
        return Ok(unsupported_api_versions(corr));
    }
    let upstream = cluster
        .upstream_versions
        .get_or_try_init(|| fetch(cluster))
        .await?;
    let mut versions: ApiVersionsResponse = (**upstream).clone();
    offer(&mut versions, ApiKey::SaslHandshake, 1, 1);
    offer(&mut versions, ApiKey::SaslAuthenticate, 0, 2);
    let frame = encode::response(ApiKey::ApiVersions, version, corr, &versions)?;
    Ok(cap_api_versions(&frame, version, &|key| {
        cluster.decodes(key)
    })?)
}

/// Lists `api` from `min` (raised to it where the upstream lists it lower)
/// up to what the upstream lists, or to `max` where it does not list it.
fn offer(versions: &mut ApiVersionsResponse, api: ApiKey, min: i16, max: i16) {
    let key = api as i16;
    match versions.api_keys.iter_mut().find(|k| k.api_key == key) {
        Some(k) => k.min_version = k.min_version.max(min),
        None => {
            let mut k = ApiVersion::default();
            k.api_key = key;
            k.min_version = min;
            k.max_version = max;
            versions.api_keys.push(k);
        }
    }
}

/// Asks a bootstrap server its versions.
async fn fetch(cluster: &ClusterRuntime) -> Result<Arc<ApiVersionsResponse>, UpstreamError> {
    let (stream, server) = upstream::connect_bootstrap(cluster).await?;
    let mut io = stream.boxed();
    let versions = client::api_versions(&mut io)
        .await
        .map_err(|e| UpstreamError::Metadata(format!("{server}: {e}")))?;
    Ok(Arc::new(versions))
}
