//! Every fuzz target over its committed seeds (`fuzz/seeds/<target>`), then
//! over inputs mutated from them (bits flipped, bytes set, runs inserted,
//! cut or copied from another seed), from a fixed random seed so a failure
//! reproduces: the same inputs on every run. This is the ordinary test
//! suite's share of fuzzing, on a normal build; the coverage-guided runs
//! with sanitizers are `scripts/fuzz`'s (cargo fuzz).
//!
//! `SLUICE_FUZZ_INPUTS` sets the mutated inputs per target (default 20,000).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use sluice_fuzz_targets::TARGETS;

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

/// The committed seeds of `target`, or a few generated ones without any.
fn seeds(target: &str) -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/seeds")
        .join(target);
    let mut seeds: Vec<Vec<u8>> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries
            .map(|e| std::fs::read(e.expect("a seed entry").path()).expect("a readable seed"))
            .collect(),
        Err(_) => Vec::new(),
    };
    seeds.sort();
    if seeds.is_empty() {
        let mut rng = Rng(0x5eed_0000 ^ target.len() as u64);
        seeds = (0..16)
            .map(|i| (0..(i * 16 + 2)).map(|_| rng.next() as u8).collect())
            .collect();
    }
    seeds
}

/// One mutation of `input`, drawing from `seeds` for copies.
fn mutate(input: &mut Vec<u8>, seeds: &[Vec<u8>], rng: &mut Rng) {
    match rng.below(6) {
        0 if !input.is_empty() => {
            let at = rng.below(input.len());
            input[at] ^= 1 << rng.below(8);
        }
        1 if !input.is_empty() => {
            let at = rng.below(input.len());
            input[at] = [0, 1, 0x7f, 0x80, 0xff][rng.below(5)];
        }
        2 => {
            let at = rng.below(input.len() + 1);
            let run: Vec<u8> = (0..rng.below(8) + 1).map(|_| rng.next() as u8).collect();
            input.splice(at..at, run);
        }
        3 if !input.is_empty() => {
            let at = rng.below(input.len());
            let end = (at + rng.below(16) + 1).min(input.len());
            input.drain(at..end);
        }
        4 => {
            let other = &seeds[rng.below(seeds.len())];
            if !other.is_empty() {
                let from = rng.below(other.len());
                let end = (from + rng.below(64) + 1).min(other.len());
                let at = rng.below(input.len() + 1);
                input.splice(at..at, other[from..end].iter().copied());
            }
        }
        _ => input.truncate(rng.below(input.len() + 1)),
    }
}

/// Runs `run` on `input`; on a panic, fails naming the input in hex.
fn check(target: &str, what: &str, run: fn(&[u8]), input: &[u8]) {
    if catch_unwind(AssertUnwindSafe(|| run(input))).is_err() {
        let hex: String = input.iter().map(|b| format!("{b:02x}")).collect();
        panic!("fuzz target {target} failed on {what}: {hex}");
    }
}

#[test]
fn every_target_holds_on_its_seeds_and_their_mutations() {
    let inputs: usize = std::env::var("SLUICE_FUZZ_INPUTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    for &(target, run) in TARGETS {
        let seeds = seeds(target);
        for (i, seed) in seeds.iter().enumerate() {
            check(target, &format!("seed {i}"), run, seed);
        }
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for n in 0..inputs {
            let mut input = seeds[rng.below(seeds.len())].clone();
            for _ in 0..rng.below(4) + 1 {
                mutate(&mut input, &seeds, &mut rng);
            }
            check(target, &format!("mutated input {n}"), run, &input);
        }
    }
}
