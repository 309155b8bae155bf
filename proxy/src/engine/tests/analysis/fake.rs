//! A fake [`Observe`] for the analysis tests, and their configurations.
//!
//! A cluster's front door is "broken" when its `limits.maxConnections` is
//! one of the values the test names; each check can be held until the test
//! lets it go; the signals are what the test sets.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use sluice_admin_api::{ClientSignals, DoorStep, Finding, FrontDoor};
use tokio::sync::{Semaphore, mpsc};

use crate::config::model::{FrontDoorSettings, SignalSettings, VirtualCluster};
use crate::engine::Observe;

/// `maxConnections` values whose front door fails.
pub(super) const BROKEN: [u32; 2] = [13, 14];

/// The fake.
pub(super) struct Fake {
    /// Every front-door check, as `cluster@maxConnections`.
    pub(super) calls: Mutex<Vec<String>>,
    /// Checks (by `cluster@maxConnections`) held until a permit is added.
    gates: Mutex<HashMap<String, Arc<Semaphore>>>,
    /// Told `cluster@maxConnections` as each check starts.
    entered: mpsc::UnboundedSender<String>,
    /// Told the cluster of each comparison.
    compared: mpsc::UnboundedSender<String>,
    /// The cumulative signals, by cluster.
    signals: Mutex<BTreeMap<String, ClientSignals>>,
    /// Clusters with a finding in every signal judgement from now on.
    failing: Mutex<HashSet<String>>,
}

/// What the test hears from the fake.
pub(super) struct Heard {
    pub(super) entered: mpsc::UnboundedReceiver<String>,
    pub(super) compared: mpsc::UnboundedReceiver<String>,
}

impl Fake {
    pub(super) fn new() -> (Arc<Fake>, Heard) {
        let (entered, entered_rx) = mpsc::unbounded_channel();
        let (compared, compared_rx) = mpsc::unbounded_channel();
        let fake = Fake {
            calls: Mutex::default(),
            gates: Mutex::default(),
            entered,
            compared,
            signals: Mutex::default(),
            failing: Mutex::default(),
        };
        let heard = Heard {
            entered: entered_rx,
            compared: compared_rx,
        };
        (Arc::new(fake), heard)
    }

    /// Holds every check of `key` (`cluster@maxConnections`) until
    /// [`Fake::release`].
    pub(super) fn hold(&self, key: &str) {
        let gate = Arc::new(Semaphore::new(0));
        self.gates.lock().unwrap().insert(key.to_owned(), gate);
    }

    /// Lets every check of `key`, held or to come, go on.
    pub(super) fn release(&self, key: &str) {
        if let Some(gate) = self.gates.lock().unwrap().get(key) {
            gate.close();
        }
    }

    /// From now on, `cluster`'s signals regress.
    pub(super) fn fail_signals(&self, cluster: &str) {
        let mut signals = self.signals.lock().unwrap();
        let s = signals.entry(cluster.to_owned()).or_default();
        s.upstream_connect_failures += 10;
        self.failing.lock().unwrap().insert(cluster.to_owned());
    }
}

fn key(cluster: &VirtualCluster) -> String {
    format!("{}@{}", cluster.name, cluster.limits.max_connections)
}

impl Observe for Fake {
    fn front_door<'a>(
        &'a self,
        cluster: &'a VirtualCluster,
        _: &'a FrontDoorSettings,
    ) -> BoxFuture<'a, FrontDoor> {
        Box::pin(async move {
            let key = key(cluster);
            self.calls.lock().unwrap().push(key.clone());
            let _ = self.entered.send(key.clone());
            let gate = self.gates.lock().unwrap().get(&key).cloned();
            if let Some(gate) = gate {
                let _ = gate.acquire().await;
            }
            let ok = !BROKEN.contains(&cluster.limits.max_connections);
            FrontDoor {
                steps: vec![DoorStep {
                    step: "bootstrap".into(),
                    address: key,
                    ok,
                    error: (!ok).then(|| "connection refused".into()),
                    advertised: Vec::new(),
                }],
            }
        })
    }

    fn compare(
        &self,
        cluster: &str,
        before: Option<&FrontDoor>,
        after: &FrontDoor,
    ) -> (Vec<Finding>, Vec<String>) {
        let _ = self.compared.send(cluster.to_owned());
        let mut findings = Vec::new();
        let mut notes = Vec::new();
        for step in after.steps.iter().filter(|s| !s.ok) {
            let was = before.and_then(|b| b.steps.iter().find(|s| s.step == step.step));
            match was {
                Some(was) if was.ok => findings.push(Finding {
                    cluster: cluster.to_owned(),
                    step: step.step.clone(),
                    before: format!("{} worked", was.address),
                    after: format!(
                        "{}: {}",
                        step.address,
                        step.error.clone().unwrap_or_default()
                    ),
                }),
                _ => notes.push(format!("{} never worked", step.step)),
            }
        }
        (findings, notes)
    }

    fn signals(&self, cluster: &str) -> ClientSignals {
        self.signals
            .lock()
            .unwrap()
            .get(cluster)
            .cloned()
            .unwrap_or_default()
    }

    fn judge(
        &self,
        cluster: &str,
        before: &ClientSignals,
        during: &ClientSignals,
        settings: &SignalSettings,
    ) -> Vec<Finding> {
        if !self.failing.lock().unwrap().contains(cluster)
            || during.upstream_connect_failures < settings.min_events
        {
            return Vec::new();
        }
        vec![Finding {
            cluster: cluster.to_owned(),
            step: "upstream_connect_failures".into(),
            before: format!("{} events", before.upstream_connect_failures),
            after: format!("{} events", during.upstream_connect_failures),
        }]
    }
}

/// One cluster `name` on 127.0.0.1:`port` (and `port + 1`), with this
/// `maxConnections` and `extra` lines (TLS, analysis).
pub(super) fn cluster(name: &str, port: u16, max_connections: u32, extra: &str) -> String {
    format!(
        "  - name: {name}\n    upstream: {{ bootstrapServers: [127.0.0.1:9], checkOnReload: false }}\n    gateway:\n      listenHost: 127.0.0.1\n      advertisedHost: localhost\n      bootstrapPort: {port}\n      brokerPorts: {{ start: {}, count: 1 }}\n{extra}    limits: {{ maxConnections: {max_connections} }}\n",
        port + 1
    )
}

/// A configuration of these clusters.
pub(super) fn config(clusters: &[String]) -> String {
    format!(
        "admin: {{ listen: 127.0.0.1:1 }}\nvirtualClusters:\n{}",
        clusters.concat()
    )
}
