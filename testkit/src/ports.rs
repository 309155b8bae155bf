//! Free loopback ports for tests, including runs of consecutive ports for
//! broker ranges.
//!
//! nextest runs every test in its own process, so "free right now" is not
//! enough: two tests could pick the same port before either binds it. Each
//! port handed out is reserved with an advisory lock on a file named after
//! it, held until the test process ends (the kernel drops the lock even when
//! the process is killed). Ports come from below the kernel's ephemeral range
//! (32768 and up here), so no client connection's source port takes one.

use std::fs::{File, OpenOptions};
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

static SEQ: AtomicU32 = AtomicU32::new(0);

/// Locks held for the life of the process.
static HELD: Mutex<Vec<File>> = Mutex::new(Vec::new());

const FIRST: u32 = 10_000;
const SPAN: u32 = 22_000;

fn lock_dir() -> PathBuf {
    let dir = std::env::temp_dir().join("sluice-test-ports");
    std::fs::create_dir_all(&dir).expect("create the port lock directory");
    dir
}

/// Reserves `port` for this process, if no other test process has.
fn reserve(port: u16, dir: &std::path::Path) -> Option<File> {
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(port.to_string()))
        .ok()?;
    file.try_lock().ok()?;
    Some(file)
}

/// `n` consecutive ports free on 127.0.0.1 and reserved for this process.
pub fn ports(n: u16) -> u16 {
    let dir = lock_dir();
    let seed = std::process::id()
        .wrapping_mul(2_654_435_761)
        .wrapping_add(SEQ.fetch_add(7919, Ordering::Relaxed))
        .wrapping_add(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos()),
        );
    for attempt in 0..500u32 {
        let base = (FIRST + seed.wrapping_add(attempt.wrapping_mul(104_729)) % SPAN) as u16;
        let locks: Vec<File> = (0..n).map_while(|i| reserve(base + i, &dir)).collect();
        if locks.len() != usize::from(n) {
            continue;
        }
        let bound: Vec<TcpListener> = (0..n)
            .map_while(|i| TcpListener::bind(("127.0.0.1", base + i)).ok())
            .collect();
        if bound.len() == usize::from(n) {
            HELD.lock().unwrap_or_else(|e| e.into_inner()).extend(locks);
            return base;
        }
    }
    panic!("no run of {n} free ports on 127.0.0.1");
}

/// One free port.
pub fn port() -> u16 {
    ports(1)
}
