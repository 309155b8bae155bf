//! Jittered exponential backoff up to a deadline. The `backoff` crate is
//! unmaintained, so it stays behind this one module.

use std::time::Duration;

use backoff::ExponentialBackoff;
use backoff::backoff::Backoff as _;

/// Waits between attempts: 200 ms doubling to at most 10 s, each ±50%, until
/// `deadline` has passed since the first attempt.
#[derive(Debug)]
pub struct Retry(ExponentialBackoff);

impl Retry {
    /// A fresh schedule ending `deadline` after now.
    pub fn new(deadline: Duration) -> Retry {
        Retry(ExponentialBackoff {
            current_interval: Duration::from_millis(200),
            initial_interval: Duration::from_millis(200),
            randomization_factor: 0.5,
            multiplier: 2.0,
            max_interval: Duration::from_secs(10),
            max_elapsed_time: Some(deadline),
            ..ExponentialBackoff::default()
        })
    }

    /// The wait before the next attempt, or `None` once the deadline passed.
    pub fn next_wait(&mut self) -> Option<Duration> {
        self.0.next_backoff()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_grow_within_bounds_and_stop_at_the_deadline() {
        let mut r = Retry::new(Duration::from_secs(3600));
        let first = r.next_wait().unwrap();
        assert!(
            first >= Duration::from_millis(100) && first <= Duration::from_millis(300),
            "{first:?}"
        );
        let later: Vec<Duration> = (0..20).filter_map(|_| r.next_wait()).collect();
        assert!(later.iter().all(|d| *d <= Duration::from_secs(15)));
        assert!(later.last().unwrap() >= &Duration::from_secs(5));
        let mut done = Retry::new(Duration::ZERO);
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(done.next_wait(), None);
    }
}
