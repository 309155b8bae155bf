//! This pod's place in a fleet-wide rollout: which slot it has and how long
//! it waits before applying new content (slot × stagger + random jitter), so
//! pods reload one after another instead of all at once.

use std::hash::{Hash, Hasher};
use std::time::Duration;

/// Where a pod's slot came from, for the logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotSource {
    /// `--slot`.
    Flag,
    /// The StatefulSet ordinal at the end of `POD_NAME` (`proxy-3` → 3).
    Ordinal,
    /// A stable hash of the pod (or host) name, modulo `--slots`.
    Hash,
}

/// A pod's slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    /// The slot number; slot 0 goes first.
    pub index: u64,
    /// How it was chosen.
    pub source: SlotSource,
}

/// Chooses the slot: `--slot` if given, else a StatefulSet ordinal in the pod
/// name, else a stable hash of the name modulo `slots` (0 when `slots` ≤ 1).
pub fn slot(flag: Option<u64>, pod_name: Option<&str>, slots: u64) -> Slot {
    if let Some(index) = flag {
        return Slot {
            index,
            source: SlotSource::Flag,
        };
    }
    let name = pod_name.unwrap_or_default();
    if let Some(ordinal) = statefulset_ordinal(name) {
        return Slot {
            index: ordinal,
            source: SlotSource::Ordinal,
        };
    }
    Slot {
        index: if slots <= 1 {
            0
        } else {
            stable_hash(name) % slots
        },
        source: SlotSource::Hash,
    }
}

/// `proxy-3` → 3. Deployment pod names end in a random suffix, not a number.
fn statefulset_ordinal(name: &str) -> Option<u64> {
    let (_, last) = name.rsplit_once('-')?;
    if last.is_empty() || last.len() > 6 || !last.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    last.parse().ok()
}

/// FNV-1a: the same on every platform and release, unlike `DefaultHasher`.
fn stable_hash(name: &str) -> u64 {
    struct Fnv(u64);
    impl Hasher for Fnv {
        fn finish(&self) -> u64 {
            self.0
        }
        fn write(&mut self, bytes: &[u8]) {
            for b in bytes {
                self.0 ^= u64::from(*b);
                self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
            }
        }
    }
    let mut h = Fnv(0xcbf2_9ce4_8422_2325);
    name.as_bytes().hash(&mut h);
    h.finish()
}

/// The wait before applying: `slot × stagger + uniform(0, jitter)`, with the
/// uniform part drawn from `random` in `[0, 1)`.
pub fn delay(slot: Slot, stagger: Duration, jitter: Duration, random: f64) -> Duration {
    let base = stagger.saturating_mul(u32::try_from(slot.index).unwrap_or(u32::MAX));
    base + jitter.mul_f64(random.clamp(0.0, 1.0))
}

/// A random number in `[0, 1)` from the standard library's randomly seeded hasher.
pub fn random_unit() -> f64 {
    use std::hash::BuildHasher;
    let bits =
        std::collections::hash_map::RandomState::new().hash_one(std::time::SystemTime::now());
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_wins_then_the_ordinal_then_the_hash() {
        assert_eq!(slot(Some(4), Some("proxy-1"), 3).index, 4);
        assert_eq!(
            slot(None, Some("proxy-2"), 1),
            Slot {
                index: 2,
                source: SlotSource::Ordinal
            }
        );
        let hashed = slot(None, Some("proxy-7d9f8c-x2k9q"), 5);
        assert_eq!(hashed.source, SlotSource::Hash);
        assert!(hashed.index < 5);
        // Stable: the same name gives the same slot every time.
        assert_eq!(slot(None, Some("proxy-7d9f8c-x2k9q"), 5), hashed);
        assert_eq!(slot(None, None, 1).index, 0);
        assert_eq!(slot(None, Some("proxy-7d9f8c-x2k9q"), 1).index, 0);
    }

    #[test]
    fn hashes_spread_over_the_slots() {
        let mut seen = [0u32; 4];
        for i in 0..400 {
            seen[slot(None, Some(&format!("proxy-abc-{i}x")), 4).index as usize] += 1;
        }
        assert!(seen.iter().all(|n| *n > 60), "{seen:?}");
    }

    #[test]
    fn delay_is_slot_times_stagger_plus_jitter() {
        let s = Slot {
            index: 2,
            source: SlotSource::Flag,
        };
        assert_eq!(
            delay(s, Duration::from_secs(1), Duration::ZERO, 0.7),
            Duration::from_secs(2)
        );
        assert_eq!(
            delay(s, Duration::from_secs(1), Duration::from_secs(4), 0.5),
            Duration::from_secs(4)
        );
        let first = Slot {
            index: 0,
            source: SlotSource::Hash,
        };
        assert_eq!(
            delay(first, Duration::ZERO, Duration::ZERO, 0.9),
            Duration::ZERO
        );
        let r = random_unit();
        assert!((0.0..1.0).contains(&r));
    }
}
