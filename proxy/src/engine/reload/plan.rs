//! The reload's plan: what happens to each cluster, decided as a pure
//! function of the changes between the configuration in force and the new
//! one, and of what serves now. The effect code prepares and commits what
//! the plan names, nothing else.

use std::collections::HashSet;

use crate::config::Changes;

/// What a reload does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Plan {
    /// Nothing: the configuration in force was sent again, and every cluster
    /// that has a generation serves.
    Unchanged,
    /// Put the new configuration in force.
    Apply(Steps),
}

/// The clusters a reload touches, by name (the effect code goes through
/// them in the new configuration's order).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Steps {
    /// Clusters that get a new generation: added, modified, rotated while
    /// not serving, and retried.
    pub(crate) start: Vec<String>,
    /// Serving clusters whose only change is TLS material (or credentials):
    /// swapped into the running generation, which keeps its connections.
    pub(crate) rotate: Vec<String>,
    /// Unchanged clusters whose generation is not serving (it failed under
    /// `best-effort`): started again. Also in `start`.
    pub(crate) retry: Vec<String>,
    /// Clusters only in the configuration in force: drained.
    pub(crate) remove: Vec<String>,
}

/// What serves now.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Serving<'a> {
    /// Clusters with a generation of any kind (a failed one included).
    pub(crate) known: &'a HashSet<String>,
    /// Clusters whose current generation serves.
    pub(crate) serving: &'a HashSet<String>,
}

/// Decides the reload from `changes`, whether the new bytes are the very
/// version in force (`same_version`), and what serves.
pub(crate) fn plan(changes: &Changes, same_version: bool, now: Serving<'_>) -> Plan {
    let retry: Vec<String> = changes
        .unchanged
        .iter()
        .filter(|n| now.known.contains(*n) && !now.serving.contains(*n))
        .cloned()
        .collect();
    if changes.is_empty() && retry.is_empty() && same_version {
        return Plan::Unchanged;
    }
    let rotate: Vec<String> = changes
        .rotated
        .iter()
        .map(|m| m.name.clone())
        .filter(|n| now.serving.contains(n))
        .collect();
    let starts = |name: &str| {
        changes.added.iter().any(|n| n == name)
            || changes.modified.iter().any(|m| m.name == name)
            || changes
                .rotated
                .iter()
                .any(|m| m.name == name && !rotate.iter().any(|r| r == name))
            || retry.iter().any(|n| n == name)
    };
    // The new configuration's order: added, modified and rotated clusters
    // are listed in it, unchanged ones too.
    let order = changes
        .added
        .iter()
        .chain(changes.modified.iter().map(|m| &m.name))
        .chain(changes.rotated.iter().map(|m| &m.name))
        .chain(&changes.unchanged);
    let mut start: Vec<String> = order.filter(|n| starts(n)).cloned().collect();
    start.dedup();
    Plan::Apply(Steps {
        start,
        rotate,
        retry,
        remove: changes.removed.clone(),
    })
}

#[cfg(test)]
mod tests {
    use sluice_admin_api::ModifiedCluster;

    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    fn modified(list: &[&str]) -> Vec<ModifiedCluster> {
        list.iter()
            .map(|n| ModifiedCluster {
                name: (*n).to_owned(),
                reasons: vec!["changed".to_owned()],
            })
            .collect()
    }

    fn set(list: &[&str]) -> HashSet<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    struct Case {
        what: &'static str,
        changes: Changes,
        same_version: bool,
        known: &'static [&'static str],
        serving: &'static [&'static str],
        want: Plan,
    }

    fn apply(start: &[&str], rotate: &[&str], retry: &[&str], remove: &[&str]) -> Plan {
        Plan::Apply(Steps {
            start: names(start),
            rotate: names(rotate),
            retry: names(retry),
            remove: names(remove),
        })
    }

    fn cases() -> Vec<Case> {
        let unchanged = |list: &[&str]| Changes {
            unchanged: names(list),
            ..Changes::default()
        };
        vec![
            Case {
                what: "the same bytes, everything serving",
                changes: unchanged(&["a", "b"]),
                same_version: true,
                known: &["a", "b"],
                serving: &["a", "b"],
                want: Plan::Unchanged,
            },
            Case {
                what: "other bytes that change no cluster (a comment): the new version goes in force",
                changes: unchanged(&["a"]),
                same_version: false,
                known: &["a"],
                serving: &["a"],
                want: apply(&[], &[], &[], &[]),
            },
            Case {
                what: "the same bytes with a failed cluster: it is retried",
                changes: unchanged(&["a", "b"]),
                same_version: true,
                known: &["a", "b"],
                serving: &["a"],
                want: apply(&["b"], &[], &["b"], &[]),
            },
            Case {
                what: "added, modified and removed clusters",
                changes: Changes {
                    added: names(&["new"]),
                    modified: modified(&["m"]),
                    removed: names(&["old"]),
                    unchanged: names(&["u"]),
                    ..Changes::default()
                },
                same_version: false,
                known: &["m", "old", "u"],
                serving: &["m", "old", "u"],
                want: apply(&["new", "m"], &[], &[], &["old"]),
            },
            Case {
                what: "renewed TLS material: swapped in when serving, started when not",
                changes: Changes {
                    rotated: modified(&["live", "down"]),
                    ..Changes::default()
                },
                same_version: false,
                known: &["live", "down"],
                serving: &["live"],
                want: apply(&["down"], &["live"], &[], &[]),
            },
            Case {
                what: "a proxy-wide change alone still applies",
                changes: Changes {
                    global: names(&["drainTimeout changed from 30s to 5s"]),
                    unchanged: names(&["a"]),
                    ..Changes::default()
                },
                same_version: false,
                known: &["a"],
                serving: &["a"],
                want: apply(&[], &[], &[], &[]),
            },
            Case {
                what: "an unchanged cluster never seen before is not retried",
                changes: unchanged(&["a"]),
                same_version: true,
                known: &[],
                serving: &[],
                want: Plan::Unchanged,
            },
        ]
    }

    #[test]
    fn every_case_is_planned_as_the_table_says() {
        for c in cases() {
            let (known, serving) = (set(c.known), set(c.serving));
            let now = Serving {
                known: &known,
                serving: &serving,
            };
            assert_eq!(plan(&c.changes, c.same_version, now), c.want, "{}", c.what);
        }
    }
}
