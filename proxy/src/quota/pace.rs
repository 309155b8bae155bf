//! The arithmetic that decides holding and throttle times, pure: a
//! virtual clock per bucket (GCRA, the generic cell rate algorithm). A
//! bucket keeps its theoretical arrival time `tat`: when every byte
//! counted so far will have passed at the quota. A request may start once
//! `tat` is at most [`TOLERANCE`] ahead of now, so about one second of
//! quota passes at once (the burst), and every byte after it at the quota
//! rate, however the bytes come: in one frame or many, on one connection
//! or on a new one each time. A Produce reserves its place before it is
//! forwarded (the next one, from any connection, starts after it), a
//! Fetch's response is counted when its head arrives.
//! No I/O and no clock: every call is handed `now`.

use std::time::Duration;

use tokio::time::Instant;

/// How far ahead of now a bucket's virtual clock may be for a request to
/// start: about one second of quota passes at once.
pub(crate) const TOLERANCE: Duration = Duration::from_secs(1);

/// One bucket's virtual clock.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pace {
    /// When every byte counted so far has passed at the quota.
    tat: Instant,
    /// The quota (bytes per second) `tat` was counted at, so that a
    /// changed quota turns the bytes still owed into time at the new one;
    /// 0 until the first count.
    quota: u64,
}

impl Pace {
    /// A bucket that owes nothing at `now`.
    pub(crate) fn new(now: Instant) -> Self {
        Pace { tat: now, quota: 0 }
    }

    /// When a request at `now` may start under `quota` (bytes per second):
    /// now, unless the bucket owes more than [`TOLERANCE`] of it.
    pub(crate) fn conforms_at(&mut self, quota: u64, now: Instant) -> Instant {
        self.rescale(quota, now);
        now.max(self.tat.checked_sub(TOLERANCE).unwrap_or(now))
    }

    /// Counts `bytes` passing at `at` (not before the bucket's own turn
    /// for them, when it is behind): the next request waits for them.
    pub(crate) fn charge(&mut self, quota: u64, bytes: u64, at: Instant) {
        self.rescale(quota, at);
        self.tat = self.tat.max(at) + seconds(bytes, quota);
    }

    /// How long after `now` the next request conforms: what a client is
    /// told in `throttle_time_ms` (zero when it conforms at once).
    pub(crate) fn throttle(&self, now: Instant) -> Duration {
        self.tat
            .checked_sub(TOLERANCE)
            .map_or(Duration::ZERO, |t| t.saturating_duration_since(now))
    }

    /// A quota changed since the last count: what is still owed at `now`,
    /// in bytes, is owed at the new quota.
    fn rescale(&mut self, quota: u64, now: Instant) {
        if quota == self.quota || quota == 0 {
            return;
        }
        if self.quota != 0 {
            let owed = self.tat.saturating_duration_since(now);
            let scaled = owed.as_secs_f64() * self.quota as f64 / quota as f64;
            self.tat = now + Duration::from_secs_f64(scaled);
        }
        self.quota = quota;
    }
}

/// How long `bytes` take at `quota` bytes per second.
fn seconds(bytes: u64, quota: u64) -> Duration {
    Duration::from_secs_f64(bytes as f64 / quota.max(1) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// A request of `bytes` at `now`: reserved, and when it starts.
    fn reserve(pace: &mut Pace, quota: u64, bytes: u64, now: Instant) -> Instant {
        let start = pace.conforms_at(quota, now);
        pace.charge(quota, bytes, start);
        start
    }

    #[test]
    fn about_a_second_of_quota_passes_at_once_and_the_rest_at_the_quota() {
        // (request sizes sent at once against 1000 B/s, when each starts ms)
        let table: &[(&[u64], &[u64])] = &[
            // Within the second of tolerance: all at once.
            (&[300, 300, 300], &[0, 0, 0]),
            // The first past it waits for the bucket to owe a second again.
            (&[600, 600, 600, 600], &[0, 0, 200, 800]),
            // A frame of eight seconds of quota passes, the next waits
            // seven: no cap lets it through early.
            (&[8_000, 100, 100], &[0, 7_000, 7_100]),
        ];
        for (i, (sizes, expected)) in table.iter().enumerate() {
            let t0 = Instant::now();
            let mut pace = Pace::new(t0);
            let got: Vec<u64> = sizes
                .iter()
                .map(|b| {
                    reserve(&mut pace, 1_000, *b, t0)
                        .duration_since(t0)
                        .as_millis() as u64
                })
                .collect();
            assert_eq!(got, *expected, "row {i}");
        }
    }

    #[test]
    fn the_throttle_time_is_until_the_next_request_conforms() {
        let t0 = Instant::now();
        let mut pace = Pace::new(t0);
        // Half a second of quota: the next conforms at once.
        reserve(&mut pace, 1_000, 500, t0);
        assert_eq!(pace.throttle(t0), Duration::ZERO);
        // Two seconds owed: one to wait, less the time gone by.
        reserve(&mut pace, 1_000, 1_500, t0);
        assert_eq!(pace.throttle(t0), ms(1_000));
        assert_eq!(pace.throttle(t0 + ms(400)), ms(600));
        assert_eq!(pace.conforms_at(1_000, t0 + ms(400)), t0 + ms(1_000));
        // A client that waited it out is not held.
        assert_eq!(pace.conforms_at(1_000, t0 + ms(1_000)), t0 + ms(1_000));
        // Idle, the bucket owes nothing, and saves up no more than the
        // tolerance: a burst after a long pause is a second of quota (and
        // the request that goes past it).
        let later = t0 + ms(60_000);
        assert_eq!(reserve(&mut pace, 1_000, 1_000, later), later);
        assert_eq!(reserve(&mut pace, 1_000, 1_000, later), later);
        assert_eq!(reserve(&mut pace, 1_000, 1_000, later), later + ms(1_000));
    }

    #[test]
    fn a_changed_quota_owes_the_same_bytes_at_the_new_rate() {
        let t0 = Instant::now();
        let mut pace = Pace::new(t0);
        reserve(&mut pace, 1_000, 5_000, t0);
        assert_eq!(pace.conforms_at(1_000, t0), t0 + ms(4_000));
        // Halved: the 5 kB owed take ten seconds.
        assert_eq!(pace.conforms_at(500, t0), t0 + ms(9_000));
        // Raised tenfold, from there: 0.5 s.
        assert_eq!(pace.conforms_at(5_000, t0), t0);
        assert_eq!(pace.throttle(t0), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn concurrent_clients_waiting_their_turn_together_keep_to_the_quota() {
        // Eight clients (connections) sharing one bucket of 10 kB/s, each
        // sending 4 kB frames as soon as its last one passed, for a minute
        // of paused time: a second of quota, then exactly the quota.
        let pace = std::sync::Arc::new(std::sync::Mutex::new(Pace::new(Instant::now())));
        let t0 = Instant::now();
        let end = t0 + Duration::from_secs(60);
        let mut tasks = Vec::new();
        for _ in 0..8 {
            let pace = std::sync::Arc::clone(&pace);
            tasks.push(tokio::spawn(async move {
                let mut sent = 0u64;
                loop {
                    let start = reserve(&mut pace.lock().unwrap(), 10_000, 4_000, Instant::now());
                    if start >= end {
                        return sent;
                    }
                    tokio::time::sleep_until(start).await;
                    sent += 4_000;
                }
            }));
        }
        let mut sent = 0;
        for t in tasks {
            sent += t.await.unwrap();
        }
        // 60 s of quota and the one second of tolerance, to one frame.
        let expected = 610_000u64;
        assert!(sent.abs_diff(expected) <= 4_000, "sent {sent} B");
    }
}
