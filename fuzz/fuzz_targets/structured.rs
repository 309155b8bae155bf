//! Structure-aware: valid responses built from the wire layouts, each rewritten, accepted again, and idempotent.
//! The body is `sluice_fuzz_targets::structured`, which the test suite also runs
//! over the seeds and mutations of them.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| sluice_fuzz_targets::structured::run(data));
