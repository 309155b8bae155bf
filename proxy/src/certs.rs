//! Certificate expiry you can alert on: the gauge
//! `sluice_tls_certificate_expiry_timestamp_seconds{cluster,role}` (notAfter
//! as Unix time, the earliest of a bundle), a warning in the log from
//! [`WARN_BEFORE`] before expiry, and the same warning from `check`.
//! Validation stays free of the clock: only these look at the time.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use rustls_pki_types::CertificateDer;

use crate::config::model::VirtualCluster;
use crate::metrics::Metrics;

/// How long before expiry a certificate is warned about.
pub(crate) const WARN_BEFORE: Duration = Duration::from_secs(14 * 24 * 3600);

/// Which certificate of a cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// The gateway's own certificate.
    Gateway,
    /// The CAs client certificates must chain to (mTLS).
    ClientCa,
    /// The CAs the upstream brokers must chain to.
    UpstreamCa,
    /// The proxy's client certificate towards the upstream.
    UpstreamClient,
}

impl Role {
    /// The `role` label value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Role::Gateway => "gateway",
            Role::ClientCa => "client-ca",
            Role::UpstreamCa => "upstream-ca",
            Role::UpstreamClient => "upstream-client",
        }
    }

    const ALL: [Role; 4] = [
        Role::Gateway,
        Role::ClientCa,
        Role::UpstreamCa,
        Role::UpstreamClient,
    ];
}

/// The notAfter (Unix seconds) of the certificate in each role a cluster has
/// loaded; for a bundle, the earliest.
pub(crate) fn expiries(cluster: &VirtualCluster) -> Vec<(Role, i64)> {
    let mut out = Vec::new();
    if let Some(tls) = &cluster.gateway.tls {
        let m = &tls.material.0;
        out.extend(earliest(m.cert_chain.first()).map(|t| (Role::Gateway, t)));
        out.extend(earliest(m.client_roots.iter()).map(|t| (Role::ClientCa, t)));
    }
    if let Some(tls) = &cluster.upstream.tls {
        let m = &tls.material.0;
        if let Some(roots) = &m.roots {
            out.extend(earliest(roots.iter()).map(|t| (Role::UpstreamCa, t)));
        }
        if let Some((chain, _)) = &m.identity {
            out.extend(earliest(chain.first()).map(|t| (Role::UpstreamClient, t)));
        }
    }
    out
}

fn earliest<'a>(certs: impl IntoIterator<Item = &'a CertificateDer<'static>>) -> Option<i64> {
    certs
        .into_iter()
        .filter_map(|der| x509_parser::parse_x509_certificate(der).ok())
        .map(|(_, cert)| cert.validity().not_after.timestamp())
        .min()
}

/// `Some(text)` when a certificate expiring at `not_after` deserves a
/// warning at `now`: within [`WARN_BEFORE`], or past.
pub(crate) fn warning(not_after: i64, now: SystemTime) -> Option<String> {
    let left = not_after.saturating_sub(unix_secs(now));
    let warn = i64::try_from(WARN_BEFORE.as_secs()).unwrap_or(i64::MAX);
    let at = rfc3339(not_after);
    if left <= 0 {
        Some(format!("certificate expired at {at}"))
    } else if left < warn {
        Some(format!(
            "certificate expires at {at}, in {} day(s)",
            left / 86_400
        ))
    } else {
        None
    }
}

/// The first certificate `new` presents (the gateway's, or its client
/// certificate towards the upstream) that is new material compared with
/// `old` and already expired at `now`: a reload refuses it, nothing changed.
/// Material already in force is never refused for its age.
pub(crate) fn expired_new(
    old: Option<&VirtualCluster>,
    new: &VirtualCluster,
    now: SystemTime,
) -> Option<String> {
    let before = old.map(expiries).unwrap_or_default();
    let now = unix_secs(now);
    expiries(new)
        .into_iter()
        .filter(|(role, _)| matches!(role, Role::Gateway | Role::UpstreamClient))
        .find(|(role, not_after)| *not_after <= now && !before.contains(&(*role, *not_after)))
        .map(|(role, not_after)| {
            format!(
                "the new {} certificate expired at {}",
                role.as_str(),
                rfc3339(not_after)
            )
        })
}

/// `t` as Unix seconds.
fn unix_secs(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// Unix seconds as RFC 3339.
fn rfc3339(unix: i64) -> humantime::Rfc3339Timestamp {
    humantime::format_rfc3339_seconds(
        UNIX_EPOCH + Duration::from_secs(u64::try_from(unix).unwrap_or(0)),
    )
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ExpiryLabels {
    cluster: String,
    role: &'static str,
}

/// The expiry gauge of every cluster in force.
#[derive(Debug, Clone, Default)]
pub(crate) struct Expiry {
    gauge: Family<ExpiryLabels, Gauge>,
}

impl Expiry {
    /// Registers the gauge.
    pub(crate) fn new(metrics: &Metrics) -> Expiry {
        let e = Expiry::default();
        metrics.register(
            "tls_certificate_expiry_timestamp_seconds",
            "When each loaded certificate expires (notAfter, Unix seconds; the earliest of a bundle), by cluster and role (gateway, client-ca, upstream-ca, upstream-client)",
            e.gauge.clone(),
        );
        e
    }

    /// Shows `cluster`'s certificates (replacing what it showed before) and
    /// warns about those close to expiry.
    pub(crate) fn set(&self, cluster: &VirtualCluster) {
        self.forget(cluster.name.as_str());
        for (role, not_after) in expiries(cluster) {
            let labels = ExpiryLabels {
                cluster: cluster.name.to_string(),
                role: role.as_str(),
            };
            self.gauge.get_or_create(&labels).set(not_after);
            warn(cluster.name.as_str(), role, not_after);
        }
    }

    /// Warns again about every certificate of `cluster` close to expiry.
    pub(crate) fn recheck(&self, cluster: &VirtualCluster) {
        for (role, not_after) in expiries(cluster) {
            warn(cluster.name.as_str(), role, not_after);
        }
    }

    /// Drops `cluster`'s series (removed, or failed).
    pub(crate) fn forget(&self, cluster: &str) {
        for role in Role::ALL {
            self.gauge.remove(&ExpiryLabels {
                cluster: cluster.to_owned(),
                role: role.as_str(),
            });
        }
    }
}

fn warn(cluster: &str, role: Role, not_after: i64) {
    if let Some(w) = warning(not_after, SystemTime::now()) {
        tracing::warn!(
            cluster,
            role = role.as_str(),
            "{w}: renew it (the watcher applies a renewed certificate without a restart)"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_start_fourteen_days_before_expiry() {
        let now = UNIX_EPOCH + Duration::from_secs(1_000_000_000);
        let at = |days: i64| 1_000_000_000 + days * 86_400;
        assert_eq!(warning(at(15), now), None);
        assert!(warning(at(13), now).unwrap().contains("in 13 day(s)"));
        assert!(warning(at(0), now).unwrap().contains("expired"));
        assert!(warning(at(-3), now).unwrap().contains("expired"));
    }
}
