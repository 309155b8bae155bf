//! The typed `virtualClusters[].analysis`: how a reload that changes a
//! cluster is judged by what its clients see (the front-door check and the
//! client signals), and when that judgement returns the proxy to the last
//! good version.
//!
//! The settings that judge a change are those of the version in force
//! before it (the one proven good): a version cannot switch off, or loosen,
//! its own judgement. None of them ever restarts a cluster (`diff` ignores
//! them).

use std::time::Duration;

use rustls_pki_types::CertificateDer;

use crate::files::FileRef;
use crate::tls::Loaded;

/// Default `analysis.window`.
pub const DEFAULT_ANALYSIS_WINDOW: Duration = Duration::from_secs(30);
/// Default `analysis.frontDoor.timeout` (per step).
pub const DEFAULT_FRONT_DOOR_TIMEOUT: Duration = Duration::from_secs(5);
/// Default `analysis.signals.minEvents`.
pub const DEFAULT_MIN_EVENTS: u64 = 5;
/// Default `analysis.signals.ratio`.
pub const DEFAULT_RATIO: f64 = 3.0;
/// Longest `analysis.window` (a fleet rollout waits for it on the canary).
pub const MAX_ANALYSIS_WINDOW: Duration = Duration::from_secs(3600);
/// Longest `analysis.frontDoor.timeout`.
pub const MAX_FRONT_DOOR_TIMEOUT: Duration = Duration::from_secs(60);

/// The client signals `analysis.signals.ignore` may name: the error
/// counters of `ClientSignals`, by their snake_case names.
pub const SIGNAL_NAMES: [&str; 5] = [
    "closed_on_error",
    "upstream_connect_failures",
    "unknown_node_ids",
    "response_errors",
    "bootstrap_only_clients",
];

/// `virtualClusters[].analysis`.
#[derive(Debug, Clone, PartialEq)]
pub struct AnalysisSettings {
    /// Whether a change to this cluster is judged at all.
    pub enabled: bool,
    /// How long the client signals are compared after a reload applies.
    pub window: Duration,
    /// The front-door check.
    pub front_door: FrontDoorSettings,
    /// The client signals.
    pub signals: SignalSettings,
}

impl Default for AnalysisSettings {
    fn default() -> Self {
        AnalysisSettings {
            enabled: true,
            window: DEFAULT_ANALYSIS_WINDOW,
            front_door: FrontDoorSettings::default(),
            signals: SignalSettings::default(),
        }
    }
}

impl AnalysisSettings {
    /// Whether anything judges a change: the analysis and at least one of
    /// its two checks are on.
    pub fn judges(&self) -> bool {
        self.enabled && (self.front_door.enabled || self.signals.enabled)
    }
}

/// `analysis.frontDoor`: the steps a client takes, through the addresses as
/// advertised.
#[derive(Debug, Clone, PartialEq)]
pub struct FrontDoorSettings {
    /// Whether the check runs.
    pub enabled: bool,
    /// How long each step may take.
    pub timeout: Duration,
    /// The trust a client uses for the gateway's TLS; absent: the last
    /// certificate of the gateway's own chain is the root.
    pub ca_file: Option<FileRef>,
    /// The certificates of `ca_file` (empty when absent, or when files are
    /// not read).
    pub ca: Loaded<Vec<CertificateDer<'static>>>,
}

impl Default for FrontDoorSettings {
    fn default() -> Self {
        FrontDoorSettings {
            enabled: true,
            timeout: DEFAULT_FRONT_DOOR_TIMEOUT,
            ca_file: None,
            ca: Loaded(Default::default()),
        }
    }
}

/// `analysis.signals`: what the proxy counts of its clients, during the
/// window against before the change.
#[derive(Debug, Clone, PartialEq)]
pub struct SignalSettings {
    /// Whether the signals are compared.
    pub enabled: bool,
    /// Fewer events of a signal in the window never count.
    pub min_events: u64,
    /// A signal regresses when its rate in the window is above `ratio`
    /// times its rate before the change.
    pub ratio: f64,
    /// Signals never counted (names from [`SIGNAL_NAMES`]).
    pub ignore: Vec<String>,
}

impl Default for SignalSettings {
    fn default() -> Self {
        SignalSettings {
            enabled: true,
            min_events: DEFAULT_MIN_EVENTS,
            ratio: DEFAULT_RATIO,
            ignore: Vec::new(),
        }
    }
}
