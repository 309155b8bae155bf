//! The process-wide budget of buffered bytes (`limits.maxBufferedBytes`).
//!
//! Every byte the data plane holds for a frame is charged here: a read
//! buffer while frames pass through it, a frame held whole (a response to
//! rewrite, a request to deny), the proxy's own answers waiting their turn.
//! A [`Charge`] gives its bytes back when it is dropped, so the account
//! follows the memory. An idle connection holds no charge at all (it waits
//! for data in a small buffer of its own, see `buffer`).
//!
//! When a charge would pass the limit, the connection waits for memory to
//! be released before it reads on ([`Budget::reserve`], counted in
//! `sluice_buffered_reads_paused_total`). A connection that waits holds at
//! most its read buffer, and one frame at a time may go past the limit (the
//! *overdraft*, [`Budget::reserve_frame`]): a frame bigger than what is left,
//! or than the whole budget, still passes, and read buffers filling the
//! budget cannot hold every frame back forever. So the bytes held stay
//! under the limit plus one frame (at most `maxFrameBytes`), plus the
//! proxy's own small answers, charged as they are made.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::Notify;

/// Bytes held for frames, proxy-wide, against a limit.
#[derive(Debug)]
pub(crate) struct Budget {
    /// `sluice_buffered_bytes`: what is charged now.
    used: Gauge,
    /// The most ever charged at once (for tests and benchmarks).
    peak: AtomicI64,
    /// `sluice_max_buffered_bytes`.
    limit: Gauge,
    /// `sluice_buffered_reads_paused_total`: reservations that had to wait.
    paused: Counter,
    /// Whether the one charge allowed past the limit is taken.
    overdraft: AtomicBool,
    /// Reservations waiting now; releases wake them only when there are some.
    waiting: AtomicUsize,
    released: Notify,
    /// Whether the limit was set from the configuration yet.
    configured: AtomicBool,
}

impl Budget {
    /// A budget of `limit` bytes, exported through these metrics.
    pub(crate) fn new(limit: u64, used: Gauge, limit_gauge: Gauge, paused: Counter) -> Self {
        limit_gauge.set(saturating_i64(limit));
        Budget {
            used,
            peak: AtomicI64::new(0),
            limit: limit_gauge,
            paused,
            overdraft: AtomicBool::new(false),
            waiting: AtomicUsize::new(0),
            released: Notify::new(),
            configured: AtomicBool::new(false),
        }
    }

    /// Sets the limit from the configuration the process starts with; later
    /// calls (reloads) change nothing: `limits.maxBufferedBytes` takes
    /// effect at the next start.
    pub(crate) fn configure_at_start(&self, limit: u64) {
        if !self.configured.swap(true, Ordering::AcqRel) {
            self.set_limit(limit);
        }
    }

    /// Changes the limit now; waiting reservations look again.
    pub(crate) fn set_limit(&self, limit: u64) {
        self.limit.set(saturating_i64(limit));
        self.released.notify_waiters();
    }

    /// Bytes charged now.
    #[cfg(test)]
    pub(crate) fn used(&self) -> u64 {
        u64::try_from(self.used.get()).unwrap_or(0)
    }

    /// The most bytes ever charged at once.
    #[cfg(test)]
    pub(crate) fn peak(&self) -> u64 {
        u64::try_from(self.peak.load(Ordering::Acquire)).unwrap_or(0)
    }

    /// The limit now.
    #[cfg(test)]
    pub(crate) fn limit(&self) -> u64 {
        u64::try_from(self.limit.get()).unwrap_or(0)
    }

    /// Takes `bytes`, waiting while they would pass the limit. For a read
    /// buffer: the caller holds no other charge in its direction, so its
    /// wait blocks nobody.
    pub(crate) async fn reserve(self: &Arc<Self>, bytes: usize) -> Charge {
        self.wait_for(bytes, false).await
    }

    /// [`Budget::reserve`] when the bytes fit now; `None` (nothing taken,
    /// nothing counted) when the caller would have to wait.
    pub(crate) fn try_reserve(self: &Arc<Self>, bytes: usize) -> Option<Charge> {
        self.try_take(bytes, false)
    }

    /// Takes `bytes` for a frame held whole, by a caller that may hold its
    /// read buffer meanwhile: past the limit, it may take the overdraft when
    /// no other frame has it, else it waits.
    pub(crate) async fn reserve_frame(self: &Arc<Self>, bytes: usize) -> Charge {
        self.wait_for(bytes, true).await
    }

    /// Charges bytes without waiting: the proxy's own answers (each made
    /// from a request that was charged more) and a rewritten frame taking
    /// the place of the one it was made from.
    pub(crate) fn force(self: &Arc<Self>, bytes: usize) -> Charge {
        self.add(saturating_i64(bytes as u64));
        Charge {
            budget: Arc::clone(self),
            bytes,
            overdraft: false,
        }
    }

    async fn wait_for(self: &Arc<Self>, bytes: usize, may_overdraw: bool) -> Charge {
        if let Some(c) = self.try_take(bytes, may_overdraw) {
            return c;
        }
        self.paused.inc();
        self.waiting.fetch_add(1, Ordering::AcqRel);
        let _waiting = Waiting(&self.waiting);
        loop {
            let released = self.released.notified();
            tokio::pin!(released);
            // Registered before looking, so a release in between is not missed.
            released.as_mut().enable();
            if let Some(c) = self.try_take(bytes, may_overdraw) {
                return c;
            }
            released.await;
        }
    }

    fn try_take(self: &Arc<Self>, bytes: usize, may_overdraw: bool) -> Option<Charge> {
        let n = saturating_i64(bytes as u64);
        let limit = self.limit.get();
        let fits = self
            .used
            .inner()
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                (used.saturating_add(n) <= limit).then(|| used + n)
            })
            .is_ok();
        if fits {
            self.peak.fetch_max(self.used.get(), Ordering::AcqRel);
            return Some(Charge {
                budget: Arc::clone(self),
                bytes,
                overdraft: false,
            });
        }
        if may_overdraw && !self.overdraft.swap(true, Ordering::AcqRel) {
            self.add(n);
            return Some(Charge {
                budget: Arc::clone(self),
                bytes,
                overdraft: true,
            });
        }
        None
    }

    fn add(&self, n: i64) {
        let now = self.used.inc_by(n) + n;
        self.peak.fetch_max(now, Ordering::AcqRel);
    }

    fn release(&self, bytes: usize, overdraft: bool) {
        self.used.dec_by(saturating_i64(bytes as u64));
        if overdraft {
            self.overdraft.store(false, Ordering::Release);
        }
        if self.waiting.load(Ordering::Acquire) > 0 {
            self.released.notify_waiters();
        }
    }
}

/// Counts a waiting reservation for as long as it waits (also when the
/// connection ends meanwhile and drops the wait).
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

fn saturating_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Bytes taken from the budget; given back when dropped.
#[derive(Debug)]
pub(crate) struct Charge {
    budget: Arc<Budget>,
    bytes: usize,
    overdraft: bool,
}

impl Charge {
    /// The bytes it pays for.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.budget.release(self.bytes, self.overdraft);
    }
}

/// Registers the buffer budget's gauges in `r`; the budget they report.
pub(crate) fn register(r: &mut prometheus_client::registry::Registry) -> Budget {
    let (used, limit, paused) = (Gauge::default(), Gauge::default(), Counter::default());
    r.register(
            "buffered_bytes",
            "Bytes the data plane holds for frames now: read buffers of busy connections, frames held whole, the proxy's own answers",
            used.clone(),
        );
    r.register(
            "max_buffered_bytes",
            "limits.maxBufferedBytes: at this many buffered bytes, connections stop reading until memory is released",
            limit.clone(),
        );
    r.register(
        "buffered_reads_paused",
        "Reads that waited for buffered bytes to be released (limits.maxBufferedBytes reached)",
        paused.clone(),
    );
    Budget::new(
        crate::config::model::DEFAULT_MAX_BUFFERED_BYTES,
        used,
        limit,
        paused,
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn budget(limit: u64) -> Arc<Budget> {
        Arc::new(Budget::new(
            limit,
            Gauge::default(),
            Gauge::default(),
            Counter::default(),
        ))
    }

    #[tokio::test]
    async fn a_reservation_past_the_limit_waits_until_memory_is_released() {
        let b = budget(100);
        let first = b.reserve(80).await;
        assert_eq!(b.used(), 80);
        let waiter = tokio::spawn({
            let b = Arc::clone(&b);
            async move { b.reserve(40).await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(
            !waiter.is_finished(),
            "40 more bytes fit in no 100-byte budget"
        );
        assert_eq!(b.paused.get(), 1);
        drop(first);
        let second = waiter.await.unwrap();
        assert_eq!(b.used(), 40);
        drop(second);
        assert_eq!(b.used(), 0);
    }

    #[tokio::test]
    async fn one_frame_at_a_time_may_pass_the_limit() {
        let b = budget(100);
        let buffers = b.reserve(100).await;
        let big = b.reserve_frame(1000).await;
        assert_eq!(b.used(), 1100);
        let next = tokio::spawn({
            let b = Arc::clone(&b);
            async move { b.reserve_frame(10).await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!next.is_finished(), "the overdraft is taken");
        drop(big);
        let next = next.await.unwrap();
        assert_eq!(b.used(), 110);
        drop((buffers, next));
        assert_eq!(b.used(), 0);
    }

    #[tokio::test]
    async fn a_wait_given_up_leaves_nothing_behind() {
        let b = budget(10);
        let held = b.reserve(10).await;
        let gave_up = tokio::time::timeout(Duration::from_millis(10), b.reserve(5)).await;
        assert!(gave_up.is_err());
        assert_eq!(b.waiting.load(Ordering::Acquire), 0);
        drop(held);
        assert_eq!(b.used(), 0);
    }

    #[test]
    fn the_configured_limit_is_the_one_the_process_started_with() {
        let b = budget(100);
        b.configure_at_start(1 << 20);
        b.configure_at_start(2 << 20);
        assert_eq!(b.limit(), 1 << 20);
    }
}
