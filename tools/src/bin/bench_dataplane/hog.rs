//! The CPU hog the sweep runs its "beside a 1-core hog" cases beside: a
//! busy loop in a process of its own (this program again, `--hog`), started
//! before a case and killed by its PID after, not pinned, at the default
//! priority.

use std::process::{Child, Command, Stdio};

/// A process that keeps one core busy until dropped (killed by its PID).
pub(crate) struct Hog(Child);

impl Hog {
    /// This program again, spinning (`bench_dataplane --hog`).
    pub(crate) fn start() -> Hog {
        let exe = std::env::current_exe().expect("the benchmark's own path");
        let child = Command::new(exe)
            .arg("--hog")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("start the CPU hog");
        eprintln!("sweep: hog started, PID {}", child.id());
        Hog(child)
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// What `bench_dataplane --hog` runs: a busy loop, forever.
pub(crate) fn spin() -> ! {
    let mut n: u64 = 0;
    loop {
        n = std::hint::black_box(n.wrapping_add(1));
    }
}
