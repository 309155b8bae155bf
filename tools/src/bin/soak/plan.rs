//! What each reload changes: the kinds of change, the shape of the
//! configuration they act on, and the YAML each produces. Pure: no I/O.

use sluice_tests::config::{tansu_cluster as cluster, with_drain};

/// What the soak expects the watcher and proxy to make of a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expect {
    /// The proxy runs the new version.
    Applied,
    /// `validate` refuses it: the watcher never sends a reload.
    Rejected,
    /// `validate` accepts it but the reload fails when binding: nothing changes.
    Failed,
}

impl Expect {
    /// The word used in the report.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Expect::Applied => "applied",
            Expect::Rejected => "rejected",
            Expect::Failed => "failed",
        }
    }
}

/// A kind of change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Kind {
    /// A third cluster, `extra`, appears.
    AddCluster,
    /// `extra` goes away.
    RemoveCluster,
    /// `limits.maxConnections` of the modified cluster (applied in place:
    /// the generation and its connections stay).
    ModifyLimits,
    /// The modified cluster's `deny-apis` filter (none, one API, two).
    ModifyFilters,
    /// The modified cluster's broker port count (1 to 3, same start and
    /// first node id, so tansu's node keeps its port).
    ModifyBrokerPorts,
    /// The proxy-wide `drainTimeout` (no cluster is touched).
    ModifyDrainTimeout,
    /// Content `validate` refuses (several variants).
    Invalid,
    /// A new cluster claiming a port of the configuration itself.
    ConflictConfigPort,
    /// A new cluster on a port another process holds.
    ConflictOccupiedPort,
    /// Back to the starting shape, so the end is comparable with the start.
    Restore,
}

impl Kind {
    /// Every kind, in report order.
    pub(crate) const ALL: [Kind; 10] = [
        Kind::AddCluster,
        Kind::RemoveCluster,
        Kind::ModifyLimits,
        Kind::ModifyFilters,
        Kind::ModifyBrokerPorts,
        Kind::ModifyDrainTimeout,
        Kind::Invalid,
        Kind::ConflictConfigPort,
        Kind::ConflictOccupiedPort,
        Kind::Restore,
    ];

    /// The name used in the report.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Kind::AddCluster => "add-cluster",
            Kind::RemoveCluster => "remove-cluster",
            Kind::ModifyLimits => "modify-limits",
            Kind::ModifyFilters => "modify-filters",
            Kind::ModifyBrokerPorts => "modify-broker-ports",
            Kind::ModifyDrainTimeout => "modify-drain-timeout",
            Kind::Invalid => "invalid",
            Kind::ConflictConfigPort => "conflict-config-port",
            Kind::ConflictOccupiedPort => "conflict-occupied-port",
            Kind::Restore => "restore",
        }
    }

    /// The outcome it must have.
    pub(crate) fn expect(self) -> Expect {
        match self {
            Kind::Invalid | Kind::ConflictConfigPort => Expect::Rejected,
            Kind::ConflictOccupiedPort => Expect::Failed,
            _ => Expect::Applied,
        }
    }
}

/// One slot of the repeating schedule; `AddOrRemove` alternates.
#[derive(Debug, Clone, Copy)]
enum Slot {
    Do(Kind),
    AddOrRemove,
}

/// Ten changes repeated: six valid, two invalid or conflicting at validate,
/// one failing at bind, per cycle (add and remove alternate).
const CYCLE: [Slot; 10] = [
    Slot::Do(Kind::ModifyLimits),
    Slot::AddOrRemove,
    Slot::Do(Kind::ModifyFilters),
    Slot::Do(Kind::Invalid),
    Slot::Do(Kind::ModifyBrokerPorts),
    Slot::Do(Kind::ConflictConfigPort),
    Slot::AddOrRemove,
    Slot::Do(Kind::ModifyDrainTimeout),
    Slot::Do(Kind::ConflictOccupiedPort),
    Slot::Do(Kind::ModifyLimits),
];

/// The ports the soak uses, each a run of free loopback ports.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub(crate) struct Ports {
    /// The admin API.
    pub(crate) admin: u16,
    /// The unchanged cluster: bootstrap, then its broker.
    pub(crate) unchanged: u16,
    /// The modified cluster: bootstrap, then up to three broker ports.
    pub(crate) modified: u16,
    /// The cluster added and removed: bootstrap, then its broker.
    pub(crate) extra: u16,
    /// A port the soak itself listens on, for the bind conflict.
    pub(crate) occupied: u16,
}

/// What the valid configuration looks like now.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Shape {
    extra: bool,
    max_connections: u32,
    denied: usize,
    broker_count: u16,
    drain_secs: u32,
}

const BASE: Shape = Shape {
    extra: false,
    max_connections: 1000,
    denied: 0,
    broker_count: 1,
    drain_secs: 5,
};

/// One change to publish.
#[derive(Debug, Clone)]
pub(crate) struct Step {
    /// Its number, from 1 (0 is the starting configuration).
    pub(crate) number: u32,
    /// What it changes.
    pub(crate) kind: Kind,
    /// Which variant of the kind, for invalid and conflicting content.
    pub(crate) variant: &'static str,
    /// The exact bytes published.
    pub(crate) text: String,
    /// The clusters the proxy must run afterwards.
    pub(crate) clusters: Vec<&'static str>,
}

/// The sequence of changes.
#[derive(Debug)]
pub(crate) struct Plan {
    upstream: String,
    ports: Ports,
    shape: Shape,
    number: u32,
}

impl Plan {
    /// A plan in front of the broker at `upstream`.
    pub(crate) fn new(upstream: &str, ports: Ports) -> Plan {
        Plan {
            upstream: upstream.to_owned(),
            ports,
            shape: BASE,
            number: 0,
        }
    }

    /// The starting configuration.
    pub(crate) fn base(&self) -> String {
        self.render(&BASE, "start", &[])
    }

    /// The clusters of the shape in force.
    pub(crate) fn clusters(&self) -> Vec<&'static str> {
        names(&self.shape)
    }

    /// The next change of the schedule.
    pub(crate) fn next(&mut self) -> Step {
        let kind = match CYCLE[self.number as usize % CYCLE.len()] {
            Slot::Do(kind) => kind,
            Slot::AddOrRemove if self.shape.extra => Kind::RemoveCluster,
            Slot::AddOrRemove => Kind::AddCluster,
        };
        self.step(kind)
    }

    /// A change back to the starting shape, if the shape differs from it.
    pub(crate) fn restore(&mut self) -> Option<Step> {
        (self.shape != BASE).then(|| self.step(Kind::Restore))
    }

    fn step(&mut self, kind: Kind) -> Step {
        self.number += 1;
        let n = self.number;
        let mut shape = self.shape.clone();
        // Variants rotate once per cycle, so each is met every few cycles.
        let round = n as usize / CYCLE.len();
        let (variant, intruder) = match kind {
            Kind::Invalid => (INVALID[round % INVALID.len()], None),
            Kind::ConflictConfigPort => match round % 3 {
                0 => ("unchanged-bootstrap", Some(self.ports.unchanged)),
                1 => ("modified-broker-range", Some(self.ports.modified + 1)),
                _ => ("admin-listener", Some(self.ports.admin)),
            },
            Kind::ConflictOccupiedPort => ("held-by-another-process", Some(self.ports.occupied)),
            _ => ("", None),
        };
        match kind {
            Kind::AddCluster => shape.extra = true,
            Kind::RemoveCluster => shape.extra = false,
            Kind::ModifyLimits => shape.max_connections = 1000 + n,
            Kind::ModifyFilters => shape.denied = (shape.denied + 1) % 3,
            Kind::ModifyBrokerPorts => shape.broker_count = shape.broker_count % 3 + 1,
            Kind::ModifyDrainTimeout => shape.drain_secs = 11 - shape.drain_secs,
            Kind::Restore => shape = BASE,
            Kind::Invalid | Kind::ConflictConfigPort | Kind::ConflictOccupiedPort => {}
        }
        let label = format!("{} {variant}", kind.as_str()).trim_end().to_owned();
        let intruder: Vec<String> = intruder
            .map(|port| cluster("intruder", &self.upstream, port, ""))
            .into_iter()
            .collect();
        let mut text = self.render(&shape, &format!("{n}: {label}"), &intruder);
        if kind == Kind::Invalid {
            text = spoil(&text, variant);
        }
        if kind.expect() == Expect::Applied {
            self.shape = shape;
        }
        Step {
            number: n,
            kind,
            variant,
            text,
            clusters: self.clusters(),
        }
    }

    fn render(&self, shape: &Shape, label: &str, more: &[String]) -> String {
        let up = &self.upstream;
        let p = self.ports;
        let filters = match shape.denied {
            0 => String::new(),
            n => format!(
                "    filters:\n      - type: deny-apis\n        config: {{ apis: [{}] }}\n",
                ["DeleteTopics", "DeleteRecords"][..n].join(", ")
            ),
        };
        let limits = format!(
            "    limits: {{ maxConnections: {} }}\n{filters}",
            shape.max_connections
        );
        let modified = cluster("modified", up, p.modified, &limits)
            .replace("count: 1,", &format!("count: {},", shape.broker_count));
        let mut clusters = vec![cluster("unchanged", up, p.unchanged, ""), modified];
        if shape.extra {
            clusters.push(cluster("extra", up, p.extra, ""));
        }
        clusters.extend_from_slice(more);
        let body = with_drain(&format!("{}s", shape.drain_secs), &clusters)
            .replace("{admin}", &format!("127.0.0.1:{}", p.admin));
        format!("# sluice soak, step {label}\n{body}")
    }
}

/// Ways to break a valid configuration, each one error class `validate`
/// must catch.
const INVALID: [&str; 5] = [
    "unknown-key",
    "bad-duration",
    "duplicate-name",
    "syntax-error",
    "comments-only",
];

fn spoil(text: &str, variant: &str) -> String {
    match variant {
        "unknown-key" => text.replacen("bootstrapPort", "bootstrapPrt", 1),
        "bad-duration" => text.replacen("drainTimeout: ", "drainTimeout: soon", 1),
        "duplicate-name" => text.replacen("name: modified", "name: unchanged", 1),
        "syntax-error" => format!("{text}  - name: [unclosed\n"),
        _ => text.lines().map(|l| format!("# {l}\n")).collect::<String>(),
    }
}

fn names(shape: &Shape) -> Vec<&'static str> {
    let mut names = vec!["unchanged", "modified"];
    if shape.extra {
        names.push("extra");
    }
    names
}

#[cfg(test)]
mod tests {
    use sluice_config::{MemoryFiles, diff, validate};

    use super::*;

    const PORTS: Ports = Ports {
        admin: 30000,
        unchanged: 30010,
        modified: 30020,
        extra: 30030,
        occupied: 30040,
    };

    #[test]
    fn every_change_is_valid_exactly_when_it_must_apply_or_fail_at_bind() {
        let files = MemoryFiles::default();
        let mut plan = Plan::new("127.0.0.1:9092", PORTS);
        let mut current = validate(plan.base().as_bytes(), &files).expect("the base is valid");
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..(CYCLE.len() * INVALID.len() * 3) {
            let step = plan.next();
            seen.insert((step.kind, step.variant));
            let result = validate(step.text.as_bytes(), &files);
            match step.kind.expect() {
                Expect::Rejected => assert!(result.is_err(), "{}", step.text),
                Expect::Failed => {
                    let v = result.unwrap_or_else(|e| panic!("{e:?}\n{}", step.text));
                    assert_eq!(diff(&current.config, &v.config).added, ["intruder"]);
                }
                Expect::Applied => {
                    let v = result.unwrap_or_else(|e| panic!("{e:?}\n{}", step.text));
                    let d = diff(&current.config, &v.config);
                    assert!(d.unchanged.contains(&"unchanged".to_owned()), "{d:?}");
                    current = v;
                }
            }
        }
        // Every kind but the final restore, every invalid and conflict variant.
        assert_eq!(seen.len(), 6 + INVALID.len() + 3 + 1, "{seen:?}");
        let restore = plan.restore().expect("the shape moved");
        let v = validate(restore.text.as_bytes(), &files).expect("restore is valid");
        let back = validate(plan.base().as_bytes(), &files).expect("base");
        assert!(diff(&back.config, &v.config).is_empty());
    }
}
