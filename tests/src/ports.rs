//! Free loopback ports for tests, including runs of consecutive ports for
//! broker ranges.

use std::net::TcpListener;
use std::sync::atomic::{AtomicU32, Ordering};

static SEQ: AtomicU32 = AtomicU32::new(0);

/// `n` consecutive ports free on 127.0.0.1 right now.
pub fn ports(n: u16) -> u16 {
    let seed = std::process::id()
        .wrapping_mul(2_654_435_761)
        .wrapping_add(SEQ.fetch_add(7919, Ordering::Relaxed))
        .wrapping_add(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos()),
        );
    for attempt in 0..500u32 {
        let base = 20_000 + (seed.wrapping_add(attempt.wrapping_mul(104_729)) % 30_000) as u16;
        let held: Vec<TcpListener> = (0..n)
            .map_while(|i| TcpListener::bind(("127.0.0.1", base + i)).ok())
            .collect();
        if held.len() == usize::from(n) {
            return base;
        }
    }
    panic!("no run of {n} free ports on 127.0.0.1");
}

/// One free port.
pub fn port() -> u16 {
    ports(1)
}
