//! The webhook's review handling: any body, parsed and decided.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use sluice_config::PathsOnly;
use sluice_webhook::decide::{Policy, decide};
use sluice_webhook::review::{parse, respond};

fuzz_target!(|data: &[u8]| {
    let policy = Policy::new("proxy.yaml", 20, Arc::new(PathsOnly));
    if let Ok(request) = parse(data) {
        let decision = decide(&request, &policy);
        let _ = respond(&request, &decision);
    }
});
