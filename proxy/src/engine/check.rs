//! The reload's upstream check, between diff and prepare: every cluster the
//! reload adds, and every modified or rotated cluster whose `upstream`
//! changed (a new CA must still verify the brokers) (unless
//! it says `checkOnReload: false`), is checked against its new upstream at
//! once, outside the engine's lock, so status and other admin reads never
//! wait on it. A failure fails the reload with nothing changed.

use std::future::Future;

use crate::config::model::VirtualCluster;
use crate::config::{Changes, ProxyConfig};
use crate::dataplane::check::{CheckFailed, Passed, check};

/// The clusters of `config` a reload with `changes` must check.
fn to_check<'a>(config: &'a ProxyConfig, changes: &Changes) -> Vec<&'a VirtualCluster> {
    config
        .virtual_clusters
        .iter()
        .filter(|c| c.upstream.check_on_reload)
        .filter(|c| {
            let name = c.name.as_str();
            changes.added.iter().any(|a| a == name)
                || changes
                    .modified
                    .iter()
                    .chain(&changes.rotated)
                    .any(|m| m.name == name && m.reasons.iter().any(|r| r.starts_with("upstream.")))
        })
        .collect()
}

/// Checks what a reload to `config` with `changes` must check; every
/// failure, or none.
pub(super) fn upstreams(config: &ProxyConfig, changes: &Changes) -> Result<(), Vec<CheckFailed>> {
    let clusters = to_check(config, changes);
    if clusters.is_empty() {
        return Ok(());
    }
    let results = match detached(futures_util::future::join_all(
        clusters.iter().map(|c| check(c)),
    )) {
        Ok(results) => results,
        Err(e) => {
            let failed = clusters
                .iter()
                .map(|c| CheckFailed::internal(c.name.as_str(), &e))
                .collect();
            return Err(failed);
        }
    };
    let mut failures = Vec::new();
    for (cluster, result) in clusters.iter().zip(results) {
        match result {
            Ok(Passed::Brokers { server, brokers }) => {
                tracing::info!(cluster = %cluster.name, %server, brokers, "upstream check passed");
            }
            Ok(Passed::SaslRequired { server }) if !cluster.upstream.nodes.is_empty() => {
                tracing::info!(cluster = %cluster.name, %server, "upstream check passed at ApiVersions: the broker requires SASL, and upstream.nodes lists the brokers");
            }
            Ok(Passed::SaslRequired { server }) => tracing::warn!(
                cluster = %cluster.name,
                %server,
                "upstream check ended after ApiVersions: the broker closed the connection at Metadata, so it requires SASL authentication; without upstream.sasl or upstream.nodes, clients whose first connection is to a broker port fail"
            ),
            Err(failed) => {
                let error = sluice_admin_api::echoed_within(
                    &failed.to_string(),
                    crate::engine::MAX_REASON_CHARS,
                );
                tracing::warn!(cluster = %cluster.name, %error, "upstream check failed");
                failures.push(failed);
            }
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures)
    }
}

/// Runs `f` to completion on a runtime of its own, on a thread of its own:
/// the reload runs on a blocking thread (or, in tests, inside an async
/// task), where the process's runtime cannot be entered again. The
/// analysis' baseline front-door checks run so too.
pub(in crate::engine) fn detached<F>(f: F) -> Result<F::Output, String>
where
    F: Future + Send,
    F::Output: Send,
{
    std::thread::scope(|s| {
        s.spawn(|| {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| format!("cannot start the check's runtime: {e}"))?;
            Ok(runtime.block_on(f))
        })
        .join()
        .unwrap_or_else(|_| Err("the upstream check panicked".to_owned()))
    })
}
