//! Kafka's quota arithmetic, pure: a byte rate measured over several sample
//! windows (Kafka's `SampledStat` and `Rate`), and the throttle time that
//! brings an observed rate back under its quota
//! (`(observed - quota) / quota × window`, as `QuotaUtils.throttleTime`).
//! No I/O and no clock: every call is handed `now`.

use std::time::Duration;

use tokio::time::Instant;

/// Sample windows a rate is measured over (Kafka's `quota.window.num`).
pub(crate) const SAMPLES: usize = 11;
/// Length of one sample window (Kafka's `quota.window.size.seconds`).
pub(crate) const WINDOW: Duration = Duration::from_secs(1);
/// Longest throttle given at once: a client muted longer than this could
/// time out requests it already sent; a rate still over its quota after
/// it is throttled again at its next request.
pub(crate) const MAX_THROTTLE: Duration = Duration::from_secs(5);

/// One sample window: when it started and what it counted.
#[derive(Debug, Clone, Copy)]
struct Sample {
    start: Instant,
    value: u64,
}

/// A rate in bytes per second over the last [`SAMPLES`] windows of
/// [`WINDOW`]. Like Kafka's, it is measured over at least `SAMPLES - 1`
/// windows, so a client's first burst is spread over that span rather
/// than throttled at once.
#[derive(Debug, Clone)]
pub(crate) struct Rate {
    samples: [Option<Sample>; SAMPLES],
    current: usize,
}

impl Rate {
    /// A rate that has counted nothing yet; its first window starts at `now`.
    pub(crate) fn new(now: Instant) -> Self {
        let mut samples = [None; SAMPLES];
        samples[0] = Some(Sample {
            start: now,
            value: 0,
        });
        Rate {
            samples,
            current: 0,
        }
    }

    /// Counts `value` at `now`.
    pub(crate) fn record(&mut self, value: u64, now: Instant) {
        let current = match self.samples[self.current] {
            Some(s) if now.saturating_duration_since(s.start) < WINDOW => self.current,
            _ => {
                // The current window is over: the next one starts now,
                // replacing the oldest.
                self.current = (self.current + 1) % SAMPLES;
                self.samples[self.current] = Some(Sample {
                    start: now,
                    value: 0,
                });
                self.current
            }
        };
        if let Some(s) = &mut self.samples[current] {
            s.value = s.value.saturating_add(value);
        }
    }

    /// Bytes per second at `now`.
    pub(crate) fn measure(&mut self, now: Instant) -> f64 {
        self.purge(now);
        let total: u64 = self.samples.iter().flatten().map(|s| s.value).sum();
        total as f64 / self.span(now).as_secs_f64()
    }

    /// Bytes per second at `now` were `extra` more counted (not counting
    /// them).
    pub(crate) fn measure_with(&mut self, extra: u64, now: Instant) -> f64 {
        let rate = self.measure(now);
        rate + extra as f64 / self.span(now).as_secs_f64()
    }

    /// How long this rate must count nothing to fall back to `quota`
    /// (bytes per second) at `now`: zero when it is not over it, at most
    /// [`MAX_THROTTLE`].
    pub(crate) fn throttle(&mut self, quota: u64, now: Instant) -> Duration {
        let observed = self.measure(now);
        let quota = quota as f64;
        if quota <= 0.0 || observed <= quota {
            return Duration::ZERO;
        }
        // Whole milliseconds, as `throttle_time_ms` carries it.
        let ms = ((observed - quota) / quota * self.span(now).as_secs_f64() * 1000.0).round();
        let cap = MAX_THROTTLE.as_millis() as f64;
        Duration::from_millis(ms.min(cap) as u64)
    }

    /// Forgets windows older than the whole span: their bytes no longer
    /// count (Kafka's `purgeObsoleteSamples`).
    fn purge(&mut self, now: Instant) {
        let expire = WINDOW * SAMPLES as u32;
        for (i, slot) in self.samples.iter_mut().enumerate() {
            if let Some(s) = slot
                && now.saturating_duration_since(s.start) >= expire
            {
                *slot = (i == self.current).then_some(Sample {
                    start: now,
                    value: 0,
                });
            }
        }
        if self.samples[self.current].is_none() {
            self.samples[self.current] = Some(Sample {
                start: now,
                value: 0,
            });
        }
    }

    /// The span the rate is measured over at `now`: since the oldest window
    /// started, and at least `SAMPLES - 1` windows (Kafka's `windowSize`).
    fn span(&self, now: Instant) -> Duration {
        let oldest = self.samples.iter().flatten().map(|s| s.start).min();
        let elapsed = oldest.map_or(Duration::ZERO, |o| now.saturating_duration_since(o));
        let least = WINDOW * (SAMPLES as u32 - 1);
        let full = (elapsed.as_nanos() / WINDOW.as_nanos()) as u32;
        if elapsed < least {
            // Kafka adds the missing whole windows to what elapsed.
            elapsed + WINDOW * (SAMPLES as u32 - 1 - full)
        } else {
            elapsed
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(at ms, bytes)` recorded in order.
    type Records<'a> = &'a [(u64, u64)];

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// Records `(at ms, bytes)` in order, then measures at `at`.
    fn rate_after(records: &[(u64, u64)], at: u64) -> (Rate, Instant) {
        let t0 = Instant::now();
        let mut rate = Rate::new(t0);
        for (t, bytes) in records {
            rate.record(*bytes, t0 + ms(*t));
        }
        (rate, t0 + ms(at))
    }

    #[test]
    fn rates_are_measured_over_at_least_ten_windows_like_kafka() {
        // (records, measured at ms, expected bytes per second)
        let table: &[(Records<'_>, u64, f64)] = &[
            // Nothing counted.
            (&[], 0, 0.0),
            // A first burst is spread over ten windows (Kafka's minimum).
            (&[(0, 10_000)], 0, 1_000.0),
            // Half a window later: 10 s + 0.5 s.
            (&[(0, 10_500)], 500, 1_000.0),
            // Steady 1000 B every 100 ms for 10 s: 10 kB/s, over 10 s.
            // Steady 1000 B every 100 ms up to 9.9 s: 100 kB over 9.9 s
            // plus the one missing whole window (Kafka's rounding).
            (&steady(100, 1_000, 100), 9_900, 100_000.0 / 10.9),
            // Past ten windows, over the time elapsed.
            (&steady(120, 1_000, 100), 11_900, 110_000.0 / 10.9),
            // Bytes older than the eleven windows no longer count.
            (&[(0, 1_000_000), (12_000, 11_000)], 12_000, 1_100.0),
        ];
        for (i, (records, at, expected)) in table.iter().enumerate() {
            let (mut rate, now) = rate_after(records, *at);
            let got = rate.measure(now);
            assert!(
                (got - expected).abs() <= expected * 0.02 + 1e-9,
                "row {i}: measured {got}, expected {expected}"
            );
        }
    }

    fn steady(count: u64, bytes: u64, every_ms: u64) -> Vec<(u64, u64)> {
        (0..count).map(|i| (i * every_ms, bytes)).collect()
    }

    #[test]
    fn throttle_time_is_what_brings_the_rate_back_under_the_quota() {
        // (records, at ms, quota B/s, expected throttle ms)
        let table: &[(Records<'_>, u64, u64, u64)] = &[
            // Under or at the quota: no throttle.
            (&[(0, 5_000)], 0, 1_000, 0),
            (&[(0, 10_000)], 0, 1_000, 0),
            // 11 kB over 10 s is 1.1 kB/s against 1 kB/s: (1.1 - 1) / 1 × 10 s.
            (&[(0, 11_000)], 0, 1_000, 1_000),
            // 15 kB: 5 s, the cap.
            (&[(0, 15_000)], 0, 1_000, 5_000),
            // Far over: still the cap.
            (&[(0, 1_000_000)], 0, 1_000, 5_000),
            // Spread over 10.5 s: 12.6 kB is 1.2 kB/s; (0.2) × 10.5 s.
            (&[(0, 6_300), (10_500, 6_300)], 10_500, 1_000, 2_100),
        ];
        for (i, (records, at, quota, expected)) in table.iter().enumerate() {
            let (mut rate, now) = rate_after(records, *at);
            let got = rate.throttle(*quota, now).as_millis() as u64;
            assert!(
                got.abs_diff(*expected) <= 1,
                "row {i}: throttle {got} ms, expected {expected} ms"
            );
        }
    }

    #[test]
    fn a_producer_held_to_its_throttles_settles_at_the_quota() {
        // A client that sends 100 kB whenever it is not throttled, against
        // 20 kB/s: past its first burst (Kafka lets ten windows' worth
        // through at once), it averages the quota within 10% over a minute.
        let t0 = Instant::now();
        let mut rate = Rate::new(t0);
        let (mut now, mut sent) = (t0, 0u64);
        let settled = t0 + Duration::from_secs(20);
        while now < settled + Duration::from_secs(60) {
            rate.record(100_000, now);
            if now >= settled {
                sent += 100_000;
            }
            now += rate.throttle(20_000, now).max(ms(10));
        }
        let per_second = sent as f64 / now.duration_since(settled).as_secs_f64();
        assert!(
            (per_second - 20_000.0).abs() < 2_000.0,
            "settled at {per_second} B/s"
        );
    }
}
