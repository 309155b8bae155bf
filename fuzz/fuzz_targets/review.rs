//! The webhook's review handling: any body, parsed and decided.
//! The body is `sluice_fuzz_targets::review`, which the test suite also runs
//! over the seeds and mutations of them.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| sluice_fuzz_targets::review::run(data));
