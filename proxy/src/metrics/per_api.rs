//! A family's counters by Kafka API key, resolved once each.

use std::sync::OnceLock;

use prometheus_client::metrics::counter::Counter;

/// One counter of a family per Kafka API, each made at its API's first
/// count: the data path finds a request's counter by its key, where the
/// family's own lookup cloned the cluster's name and hashed both labels
/// under a lock for every request.
#[derive(Debug)]
pub(super) struct PerApi {
    /// By key, for the keys from 0 to the highest Kafka defines.
    known: Box<[OnceLock<Counter>]>,
    /// Every other key (`Unknown`).
    unknown: OnceLock<Counter>,
}

impl Default for PerApi {
    fn default() -> Self {
        let highest = sluice_config::apis::KAFKA_APIS
            .iter()
            .map(|a| a.key)
            .max()
            .unwrap_or(0);
        PerApi {
            known: (0..=highest).map(|_| OnceLock::new()).collect(),
            unknown: OnceLock::new(),
        }
    }
}

impl PerApi {
    /// The counter of API `key`, made with `make` (from the API's name) at
    /// its first use. A key in range that Kafka does not define has a slot
    /// of its own, holding the `Unknown` series as the others do.
    pub(super) fn get(&self, key: i16, make: impl FnOnce(&'static str) -> Counter) -> &Counter {
        let slot = usize::try_from(key).ok().and_then(|i| self.known.get(i));
        slot.unwrap_or(&self.unknown)
            .get_or_init(|| make(sluice_kafka::api_name(key)))
    }
}

#[cfg(test)]
mod tests {
    use prometheus_client::metrics::family::Family;

    use super::*;
    use crate::metrics::ApiLabels;

    #[test]
    fn each_api_has_its_series_made_once_and_other_keys_count_as_unknown() {
        let family = Family::<ApiLabels, Counter>::default();
        let per = PerApi::default();
        let made = std::cell::Cell::new(0);
        let count = |key: i16| {
            per.get(key, |api| {
                made.set(made.get() + 1);
                family.get_or_create_owned(&ApiLabels {
                    cluster: "c".into(),
                    api: api.into(),
                })
            })
            .inc();
        };
        // Produce twice, Fetch once; 89 is no API, nor are -1 and 500.
        for key in [0, 0, 1, 89, -1, 500, i16::MAX] {
            count(key);
        }
        let series = |api: &str| {
            family
                .get_or_create(&ApiLabels {
                    cluster: "c".into(),
                    api: api.into(),
                })
                .get()
        };
        assert_eq!(series("Produce"), 2);
        assert_eq!(series("Fetch"), 1);
        assert_eq!(series("Unknown"), 4);
        // One lookup in the family per key seen (89's slot and the one for
        // keys out of range), not per request.
        assert_eq!(made.get(), 4);
    }
}
