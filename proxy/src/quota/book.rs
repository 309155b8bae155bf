//! The buckets of one kind of quota holder (client ids, or principals) of
//! a cluster: a bucket and metric series of its own for each of the first
//! `max` holders seen, then one, `other`, that every later holder shares,
//! so that no client can grow memory or `/metrics` by inventing ids (or a
//! CA by signing certificates).

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use tokio::time::Instant;

use super::bucket::Client;
use super::{ClientLabels, Kind, OTHER, PrincipalBytesLabels, label, read};

/// Which holders a book keeps, and the family their byte series are in.
#[derive(Debug)]
pub(super) enum Series {
    /// Client ids: `sluice_quota_bytes{cluster,client_id,kind}`.
    ClientIds(Family<ClientLabels, Counter>),
    /// Principals: `sluice_quota_principal_bytes{cluster,principal,kind}`.
    Principals(Family<PrincipalBytesLabels, Counter>),
}

/// One cluster's holders of one kind.
#[derive(Debug)]
pub(super) struct Book {
    cluster: String,
    series: Series,
    pub(super) entries: RwLock<HashMap<String, Arc<Client>>>,
    pub(super) other: Arc<Client>,
}

impl Book {
    pub(super) fn new(cluster: &str, series: Series, now: Instant) -> Self {
        let other = Arc::new(Client::new(counters(&series, cluster, OTHER), now));
        Book {
            cluster: cluster.to_owned(),
            series,
            entries: RwLock::new(HashMap::new()),
            other,
        }
    }

    /// The buckets of holder `key`: its own while fewer than `max` have
    /// one, `other`'s after.
    pub(super) fn get(&self, key: &str, max: u32) -> Arc<Client> {
        if let Some(known) = read(&self.entries).get(key) {
            return Arc::clone(known);
        }
        let mut entries = self
            .entries
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(known) = entries.get(key) {
            return Arc::clone(known);
        }
        if entries.len() >= max as usize {
            return Arc::clone(&self.other);
        }
        let series = counters(&self.series, &self.cluster, &label(key));
        let made = Arc::new(Client::new(series, Instant::now()));
        entries.insert(key.to_owned(), Arc::clone(&made));
        made
    }

    /// Calls `f` with every holder's buckets, `other`'s included.
    pub(super) fn each(&self, mut f: impl FnMut(&Client)) {
        for client in read(&self.entries).values() {
            f(client);
        }
        f(&self.other);
    }
}

/// The produce and fetch byte series of holder label `label`.
fn counters(series: &Series, cluster: &str, label: &str) -> [Counter; 2] {
    [Kind::Produce, Kind::Fetch].map(|kind| match series {
        Series::ClientIds(family) => family.get_or_create_owned(&ClientLabels {
            cluster: cluster.to_owned(),
            client_id: label.to_owned(),
            kind: kind.label(),
        }),
        Series::Principals(family) => family.get_or_create_owned(&PrincipalBytesLabels {
            cluster: cluster.to_owned(),
            principal: label.to_owned(),
            kind: kind.label(),
        }),
    })
}
