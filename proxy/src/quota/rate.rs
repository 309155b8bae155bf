//! Kafka's windowed rate, pure: a byte rate measured over several sample
//! windows (Kafka's `SampledStat` and `Rate`). It decides nothing: the
//! usage gauge reads it, and `connectionsPerSecond` is judged by it (`pace`
//! decides holding and throttle times). No I/O and no clock: every call is
//! handed `now`.

use std::time::Duration;

use tokio::time::Instant;

/// Sample windows a rate is measured over (Kafka's `quota.window.num`).
pub(crate) const SAMPLES: usize = 11;
/// Length of one sample window (Kafka's `quota.window.size.seconds`).
pub(crate) const WINDOW: Duration = Duration::from_secs(1);

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
}
