//! The webhook's review handling: any body, parsed and decided.

use std::sync::Arc;

use sluice_config::PathsOnly;
use sluice_webhook::decide::{Policy, decide};
use sluice_webhook::review::{parse, respond};

/// Parses `data` as an AdmissionReview and, when it is one, decides it.
pub fn run(data: &[u8]) {
    let policy = Policy::new("proxy.yaml", 20, Arc::new(PathsOnly));
    if let Ok(request) = parse(data) {
        let decision = decide(&request, &policy);
        let _ = respond(&request, &decision);
    }
}
