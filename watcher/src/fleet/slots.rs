//! Distinct slots without a StatefulSet: every pod's proxy reports an
//! `instance` name (the pod name); a watcher's slot is the rank of its own
//! instance among all of its peers' instances, sorted by byte order. Every
//! pod sees the same set and so ranks itself differently from every other,
//! by construction, whatever the names look like.

/// Why no slot could be derived from the peers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SlotError {
    /// This pod's own instance is not among the peers' (its own admin API is
    /// missing from `--peers`, or it reports another name).
    #[error("this pod's instance {0:?} is not among its peers' instances")]
    NotAPeer(String),
    /// Two peers report the same instance name: their slots would collide.
    #[error("two peers report the instance name {0:?}; instance names must be unique")]
    Duplicate(String),
}

/// The rank (0-based) of `me` among `instances`, which must hold `me` and
/// no name twice.
pub fn rank<S: AsRef<str>>(me: &str, instances: &[S]) -> Result<u64, SlotError> {
    let mut sorted: Vec<&str> = instances.iter().map(AsRef::as_ref).collect();
    sorted.sort_unstable();
    if let Some(pair) = sorted.windows(2).find(|w| w[0] == w[1]) {
        return Err(SlotError::Duplicate(pair[0].to_owned()));
    }
    let index = sorted
        .binary_search(&me)
        .map_err(|_| SlotError::NotAPeer(me.to_owned()))?;
    Ok(u64::try_from(index).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Deployment pod name: `sluice-proxy-<10-char template hash>-<5 chars>`.
    fn deployment_names(n: usize, seed: u64) -> Vec<String> {
        const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
        let mut state = seed | 1;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ALPHABET[usize::try_from(state % ALPHABET.len() as u64).unwrap()] as char
        };
        let hash: String = (0..9).map(|_| next()).collect();
        (0..n)
            .map(|_| {
                let suffix: String = (0..5).map(|_| next()).collect();
                format!("sluice-proxy-{hash}-{suffix}")
            })
            .collect()
    }

    #[test]
    fn deployment_pods_always_get_slots_0_to_n_minus_1() {
        for n in [3, 5, 10] {
            for seed in 0..200 {
                let names = deployment_names(n, seed * 7919 + 1);
                let mut unique = names.clone();
                unique.sort();
                unique.dedup();
                if unique.len() < n {
                    continue; // a repeated random suffix is not a real fleet
                }
                let mut slots: Vec<u64> =
                    names.iter().map(|me| rank(me, &names).unwrap()).collect();
                slots.sort_unstable();
                assert_eq!(slots, (0..n as u64).collect::<Vec<_>>(), "{names:?}");
            }
        }
    }

    #[test]
    fn the_rank_is_byte_order() {
        let names = ["proxy-b", "proxy-a", "proxy-c"];
        assert_eq!(rank("proxy-a", &names), Ok(0));
        assert_eq!(rank("proxy-c", &names), Ok(2));
    }

    #[test]
    fn a_duplicate_or_a_missing_self_is_an_error() {
        assert_eq!(
            rank("a", &["a", "b", "b"]),
            Err(SlotError::Duplicate("b".into()))
        );
        assert_eq!(rank("z", &["a", "b"]), Err(SlotError::NotAPeer("z".into())));
    }
}
