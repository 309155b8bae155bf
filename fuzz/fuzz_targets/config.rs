//! The configuration validator, on any bytes, and diff against a valid one.
//! The body is `sluice_fuzz_targets::config`, which the test suite also runs
//! over the seeds and mutations of them.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| sluice_fuzz_targets::config::run(data));
