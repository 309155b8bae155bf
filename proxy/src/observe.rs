//! What the engine's analysis observes in production ([`Observe`]): the
//! front-door check ([`crate::frontdoor`]) and the client signals the data
//! plane counts ([`crate::signals`]). The engine's own tests give fakes.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use sluice_admin_api::{ClientSignals, DoorStep, Finding, FrontDoor};

use crate::config::model::{FrontDoorSettings, SignalSettings, VirtualCluster};
use crate::engine::Observe;
use crate::frontdoor::{self, Door};
use crate::signals::{self, Signals, Thresholds};

/// The real eyes: a client's view of each gateway, and the counters.
#[derive(Debug, Clone)]
pub struct Observed {
    signals: Arc<Signals>,
}

impl Observed {
    /// Observes the clusters whose clients `signals` counts (the metrics'
    /// registry the engine's data plane counts into).
    pub fn new(signals: Arc<Signals>) -> Self {
        Observed { signals }
    }
}

impl Observe for Observed {
    fn front_door<'a>(
        &'a self,
        cluster: &'a VirtualCluster,
        settings: &'a FrontDoorSettings,
    ) -> BoxFuture<'a, FrontDoor> {
        Box::pin(async move {
            match Door::with_roots(cluster, &settings.ca.0, settings.timeout) {
                Ok(door) => frontdoor::check(&door).await,
                // No trust to check the gateway's TLS with: the first step
                // cannot run (the same before and after: a note, never a
                // finding).
                Err(e) => FrontDoor {
                    steps: vec![DoorStep {
                        step: "bootstrap".to_owned(),
                        address: String::new(),
                        ok: false,
                        error: Some(e.to_string()),
                        advertised: Vec::new(),
                    }],
                },
            }
        })
    }

    fn compare(
        &self,
        cluster: &str,
        before: Option<&FrontDoor>,
        after: &FrontDoor,
    ) -> (Vec<Finding>, Vec<String>) {
        frontdoor::compare(cluster, before, after)
    }

    fn signals(&self, cluster: &str) -> ClientSignals {
        self.signals.signals(cluster)
    }

    fn judge(
        &self,
        cluster: &str,
        before: &ClientSignals,
        during: &ClientSignals,
        settings: &SignalSettings,
    ) -> Vec<Finding> {
        let thresholds = Thresholds {
            min_events: settings.min_events,
            ratio: settings.ratio,
            ignore: settings.ignore.clone(),
        };
        signals::judge(cluster, before, during, &thresholds)
    }
}
