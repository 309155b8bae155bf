//! A virtual cluster's `tenancy`: the prefix its clients' names get on the
//! shared upstream, and the check that no two tenants of one upstream can
//! reach each other's names.

use super::super::model::{Tenancy, VirtualCluster};
use super::super::read::{Cx, Fields, string};
use super::super::yaml::{Mark, Node};

const TENANCY_KEYS: &[&str] = &["prefix"];

/// The longest prefix: Kafka's names are at most 249 characters, and a
/// tenant's own names need room after it.
const MAX_PREFIX: usize = 100;

/// `tenancy` of the cluster `name`: the prefix given, or `<name>.`.
pub(super) fn tenancy(
    cx: &mut Cx<'_>,
    node: &Node,
    path: &str,
    name: Option<&str>,
) -> Option<Tenancy> {
    let f = Fields::of(cx, node, path, TENANCY_KEYS)?;
    let given = f.optional(cx, "prefix", |cx, node, path| {
        let text = string(cx, node, path)?;
        valid_prefix(cx, text, path, node.mark, "")
    });
    if given.is_none() && f.has("prefix") {
        return None;
    }
    match given {
        Some(prefix) => Some(Tenancy { prefix }),
        None => {
            let prefix = format!("{}.", name?);
            let why = " (the cluster's name and a dot: give `prefix` for another)";
            valid_prefix(cx, &prefix, path, node.mark, why).map(|prefix| Tenancy { prefix })
        }
    }
}

fn valid_prefix(cx: &mut Cx<'_>, text: &str, path: &str, mark: Mark, why: &str) -> Option<String> {
    if text.is_empty() || text.len() > MAX_PREFIX {
        return cx.fail(
            path,
            mark,
            format_args!("a prefix is 1 to {MAX_PREFIX} characters{why}"),
        );
    }
    if let Some(c) = text
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "._-".contains(*c)))
    {
        return cx.fail(
            path,
            mark,
            format_args!("{c:?} cannot be in a Kafka name: a prefix is letters, digits, '.', '_' and '-'{why}"),
        );
    }
    Some(text.to_owned())
}

/// Two tenants of one upstream (the same bootstrap servers) whose prefixes
/// start alike (one is the start of the other) could name each other's
/// topics: an error at the second one's `tenancy`.
pub(super) fn check_overlaps(
    cx: &mut Cx<'_>,
    path: &str,
    clusters: &[(VirtualCluster, Option<Mark>)],
) -> bool {
    let mut ok = true;
    for (j, (b, mark)) in clusters.iter().enumerate() {
        let (Some(tb), Some(mark)) = (&b.tenancy, mark) else {
            continue;
        };
        for (a, _) in &clusters[..j] {
            let Some(ta) = &a.tenancy else {
                continue;
            };
            let same =
                sorted(&a.upstream.bootstrap_servers) == sorted(&b.upstream.bootstrap_servers);
            if same && (ta.prefix.starts_with(&tb.prefix) || tb.prefix.starts_with(&ta.prefix)) {
                cx.error(
                    &format!("{path}[{j}].tenancy"),
                    *mark,
                    format_args!(
                        "prefix {:?} overlaps {:?} of virtual cluster {} on the same upstream: each could name the other's topics",
                        tb.prefix, ta.prefix, a.name
                    ),
                );
                ok = false;
            }
        }
    }
    ok
}

fn sorted<T: ToString>(servers: &[T]) -> Vec<String> {
    let mut all: Vec<String> = servers.iter().map(ToString::to_string).collect();
    all.sort();
    all
}
