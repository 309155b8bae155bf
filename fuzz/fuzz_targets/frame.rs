//! Kafka framing: any bytes, as a request stream and as a response stream.
//! The body is `sluice_fuzz_targets::frame`, which the test suite also runs
//! over the seeds and mutations of them.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| sluice_fuzz_targets::frame::run(data));
