//! A tenant's namespace in the data plane (`virtualClusters[].tenancy`):
//! the requests that name topics, groups or transactional ids are held
//! whole and prefixed before they go upstream (after the filters judged
//! them by the names the client gave), their responses held whole and
//! unprefixed (before the address rewrite and the policy see them); the
//! cluster's own administration is refused. Fetch responses from v13 on
//! name topics by id only, and stream as ever.

use bytes::Bytes;
use sluice_kafka::frame::RequestHeader;
use sluice_kafka::tenancy::{self, Tenant};

use super::block::charged;
use super::cluster::ClusterRuntime;
use super::direction::ConnError;

/// Kafka's CLUSTER_AUTHORIZATION_FAILED: what a tenant's request for the
/// cluster's administration gets.
pub(super) const CLUSTER_AUTHORIZATION_FAILED: i16 = 31;

/// The cluster's tenant, when it is one.
pub(super) fn of(cluster: &ClusterRuntime) -> Option<Tenant> {
    (cluster.config.tenancy.as_ref()).map(|t| Tenant::new(&t.prefix))
}

/// Whether a request to `header` on `cluster` is renamed (held whole).
pub(super) fn renames_request(cluster: &ClusterRuntime, header: &RequestHeader) -> bool {
    cluster.config.tenancy.is_some() && tenancy::renames_request(header.api_key, header.api_version)
}

/// Whether the response to `header` on `cluster` is renamed (held whole).
pub(super) fn renames_response(cluster: &ClusterRuntime, header: &RequestHeader) -> bool {
    cluster.config.tenancy.is_some()
        && tenancy::renames_response(header.api_key, header.api_version)
}

/// Whether a request of `api_key` to `cluster` is refused.
pub(super) fn refuses(cluster: &ClusterRuntime, api_key: i16) -> bool {
    cluster.config.tenancy.is_some() && tenancy::refuses(api_key)
}

/// The request `frame` with its names prefixed, charged to the budget.
pub(super) fn request(
    cluster: &ClusterRuntime,
    frame: Bytes,
    header: &RequestHeader,
) -> Result<Bytes, ConnError> {
    let Some(tenant) = of(cluster).filter(|_| renames_request(cluster, header)) else {
        return Ok(frame);
    };
    let out = tenant.request(&frame, header)?;
    drop(frame);
    let charge = cluster.budget().force(out.len());
    Ok(charged(out, charge))
}

/// The response `frame` with its names unprefixed (others' entries
/// dropped), when the cluster is a tenant and the API names any.
pub(super) fn response(
    cluster: &ClusterRuntime,
    frame: &Bytes,
    header: &RequestHeader,
) -> Result<Option<Bytes>, ConnError> {
    match of(cluster).filter(|_| renames_response(cluster, header)) {
        Some(tenant) => Ok(Some(tenant.response(frame, header)?)),
        None => Ok(None),
    }
}
