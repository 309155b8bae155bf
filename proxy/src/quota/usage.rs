//! `sluice_quota_usage_ratio{cluster,kind}`: measured at each scrape (not
//! when bytes pass), so it falls back to 0 when traffic stops instead of
//! keeping its last value.

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, RwLock};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use tokio::time::Instant;

use super::{ClusterQuota, Kind, KindLabels};

/// The collector over every cluster's usage.
#[derive(Debug)]
pub(super) struct Usage(Arc<RwLock<HashMap<String, Arc<ClusterQuota>>>>);

impl Usage {
    pub(super) fn new(clusters: Arc<RwLock<HashMap<String, Arc<ClusterQuota>>>>) -> Self {
        Usage(clusters)
    }
}

impl Collector for Usage {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let now = Instant::now();
        let family = Family::<KindLabels, Gauge<f64, AtomicU64>>::default();
        for (name, quota) in super::read(&self.0).iter() {
            for kind in [Kind::Produce, Kind::Fetch] {
                let Some(ratio) = quota.usage(kind, now) else {
                    continue;
                };
                let labels = KindLabels {
                    cluster: name.clone(),
                    kind: kind.label(),
                };
                family.get_or_create(&labels).set(ratio);
            }
        }
        let metric = encoder.encode_descriptor(
            "quota_usage_ratio",
            "Highest observed byte rate over its quota (kind: produce, fetch), of the cluster's quota and of every client id's, over Kafka's 11 one-second windows; above 1 clients are being throttled",
            None,
            family.metric_type(),
        )?;
        family.encode(metric)
    }
}
