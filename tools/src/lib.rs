//! What the benchmark programs share.
//!
//! - [`record`]: one figure as `scripts/bench` collects it (`BENCH {json}`)

#![allow(clippy::print_stdout, clippy::print_stderr)]

pub mod record;
