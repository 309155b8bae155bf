//! Clients answered Metadata on the bootstrap port that never reached a
//! broker port: the table of client addresses told where the brokers are
//! and not seen on a broker port since, bounded in size and in time.
//!
//! A client address enters when a bootstrap connection from it is first
//! answered Metadata (once per connection: never per frame), leaves when a
//! connection from it reaches a broker port, and counts once when it has
//! been in the table for [`GRACE`] (a client connects to a broker right
//! after its bootstrap Metadata when it means to). Expired entries are
//! counted when a snapshot is read, and dropped by new entries at most
//! once per [`SWEEP`]. The table holds at most
//! [`CAPACITY`] addresses: past that, new ones are not tracked (and so
//! never counted) until old ones leave. Clients behind one address (NAT)
//! are one client here.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How long a client told the brokers has to reach one.
pub(crate) const GRACE: Duration = Duration::from_secs(5);
/// Client addresses tracked at once, per cluster.
pub(crate) const CAPACITY: usize = 4096;
/// How often a new entry sweeps the table (a snapshot always does).
const SWEEP: Duration = Duration::from_secs(1);

/// The addresses told and not seen on a broker port since, with when;
/// and when the table was last swept.
#[derive(Debug, Default)]
struct Table {
    told: HashMap<IpAddr, Instant>,
    swept: Option<Instant>,
}

/// One cluster's table.
#[derive(Debug, Default)]
pub(crate) struct BootstrapOnly {
    told: Mutex<Table>,
    /// Entries in `told`, read without the lock by broker connections.
    pending: AtomicUsize,
    /// Clients counted so far.
    counted: AtomicU64,
}

impl BootstrapOnly {
    /// A client at `ip` was answered Metadata on the bootstrap port.
    pub(crate) fn told(&self, ip: IpAddr, now: Instant) {
        let mut table = self.lock();
        if table
            .swept
            .is_none_or(|at| now.saturating_duration_since(at) >= SWEEP)
        {
            self.expire(&mut table, now);
        }
        if table.told.len() < CAPACITY {
            table.told.entry(ip).or_insert(now);
        }
        self.pending.store(table.told.len(), Ordering::Release);
    }

    /// A client at `ip` reached a broker port.
    pub(crate) fn reached(&self, ip: IpAddr) {
        if self.pending.load(Ordering::Acquire) == 0 {
            return;
        }
        let mut table = self.lock();
        table.told.remove(&ip);
        self.pending.store(table.told.len(), Ordering::Release);
    }

    /// Clients counted up to `now`.
    pub(crate) fn count(&self, now: Instant) -> u64 {
        let mut table = self.lock();
        self.expire(&mut table, now);
        self.pending.store(table.told.len(), Ordering::Release);
        self.counted.load(Ordering::Acquire)
    }

    /// Counts and drops the entries older than [`GRACE`].
    fn expire(&self, table: &mut Table, now: Instant) {
        table.swept = Some(now);
        let before = table.told.len();
        table
            .told
            .retain(|_, at| now.saturating_duration_since(*at) < GRACE);
        let expired = (before - table.told.len()) as u64;
        if expired > 0 {
            self.counted.fetch_add(expired, Ordering::AcqRel);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.told
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(n: u32) -> IpAddr {
        IpAddr::from(std::net::Ipv4Addr::from(0x0a00_0000 + n))
    }

    #[test]
    fn a_client_that_reaches_a_broker_is_not_counted() {
        let t = BootstrapOnly::default();
        let start = Instant::now();
        t.told(ip(1), start);
        t.reached(ip(1));
        assert_eq!(t.count(start + GRACE * 2), 0);
    }

    #[test]
    fn a_client_that_does_not_is_counted_once_after_the_grace() {
        let t = BootstrapOnly::default();
        let start = Instant::now();
        t.told(ip(1), start);
        // Told again (another bootstrap connection): still one client.
        t.told(ip(1), start + Duration::from_secs(1));
        assert_eq!(t.count(start + GRACE - Duration::from_millis(1)), 0);
        assert_eq!(t.count(start + GRACE), 1);
        assert_eq!(t.count(start + GRACE * 3), 1);
        // Reaching a broker later changes nothing counted.
        t.reached(ip(1));
        assert_eq!(t.count(start + GRACE * 4), 1);
    }

    #[test]
    fn the_table_is_bounded() {
        let t = BootstrapOnly::default();
        let start = Instant::now();
        for n in 0..(CAPACITY as u32 + 100) {
            t.told(ip(n), start);
        }
        assert_eq!(t.lock().told.len(), CAPACITY);
        assert_eq!(t.count(start + GRACE), CAPACITY as u64);
        assert!(t.lock().told.is_empty());
        // Room again: a new client is tracked.
        t.told(ip(1), start + GRACE);
        assert_eq!(t.lock().told.len(), 1);
    }
}
