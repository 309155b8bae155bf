//! Response rewriting, ApiVersions capping, deny responses, streamed Fetch walks and a split Fetch's refused topics.
//! The body is `sluice_fuzz_targets::rewrite`, which the test suite also runs
//! over the seeds and mutations of them.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| sluice_fuzz_targets::rewrite::run(data));
