//! `GET /admin/health` and `GET /admin/ready`: what probes and load balancers
//! ask.

use serde::{Deserialize, Serialize};

/// `GET /admin/health`, always 200 while the process serves HTTP: liveness.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Health {
    /// Always `ok`; a body so that a human with curl sees an answer.
    pub status: HealthStatus,
}

/// The one value of [`Health::status`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HealthStatus {
    /// The process is alive.
    #[default]
    Ok,
}

/// `GET /admin/ready`: 200 when ready, 503 when not (starting, held by
/// `run --hold`, or stopping);
/// the body says the same for whoever reads bodies rather than statuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Readiness {
    /// Whether startup finished (per `startupPolicy`), the data plane is not
    /// held, and the proxy is not stopping.
    pub ready: bool,
}

impl Readiness {
    /// The HTTP status that goes with it.
    pub fn status(&self) -> u16 {
        if self.ready { 200 } else { 503 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roundtrip::roundtrip;

    #[test]
    fn health_roundtrips() {
        assert_eq!(
            roundtrip::<Health>(r#"{"status": "ok"}"#),
            Health::default()
        );
    }

    #[test]
    fn readiness_roundtrips() {
        assert_eq!(roundtrip::<Readiness>(r#"{"ready": false}"#).status(), 503);
        assert_eq!(roundtrip::<Readiness>(r#"{"ready": true}"#).status(), 200);
    }
}
