//! Properties of validation and diff that must hold for every input.

use proptest::prelude::*;
use sluice_config::{MemoryFiles, ProxyConfig, diff, validate};

/// One generated virtual cluster: a name from a small pool (so two configs
/// share some), and settings that may differ between configs.
#[derive(Debug, Clone)]
struct ClusterSpec {
    name: usize,
    server: u16,
    brokers: u16,
    max_connections: u32,
    deny: bool,
}

fn cluster_spec() -> impl Strategy<Value = ClusterSpec> {
    (
        0usize..12,
        9092u16..9095,
        1u16..4,
        prop::sample::select(vec![100u32, 10_000]),
        any::<bool>(),
    )
        .prop_map(
            |(name, server, brokers, max_connections, deny)| ClusterSpec {
                name,
                server,
                brokers,
                max_connections,
                deny,
            },
        )
}

/// A valid configuration text: unique names, ports derived from the name so
/// they never collide.
fn config_text(specs: &[ClusterSpec]) -> String {
    let mut seen = std::collections::BTreeSet::new();
    let mut out = String::from("virtualClusters:\n");
    for s in specs.iter().filter(|s| seen.insert(s.name)) {
        let base = 20_000 + s.name * 100;
        out.push_str(&format!(
            "  - name: c{}\n    upstream: {{ bootstrapServers: [127.0.0.1:{}] }}\n    gateway: {{ advertisedHost: localhost, bootstrapPort: {base}, brokerPorts: {{ start: {}, count: {} }} }}\n    limits: {{ maxConnections: {} }}\n",
            s.name,
            s.server,
            base + 1,
            s.brokers,
            s.max_connections,
        ));
        if s.deny {
            out.push_str("    filters: [{ type: deny-apis, config: { apis: [DeleteTopics] } }]\n");
        }
    }
    out
}

fn config(specs: &[ClusterSpec]) -> ProxyConfig {
    let text = config_text(specs);
    let valid = validate(text.as_bytes(), &MemoryFiles::default())
        .unwrap_or_else(|e| panic!("generated config is invalid: {e:?}\n{text}"));
    (*valid.config).clone()
}

fn yamlish() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![
            "virtualClusters:",
            "name:",
            "upstream:",
            "gateway:",
            " ",
            "  ",
            "\n",
            "- ",
            ":",
            "{",
            "}",
            "[",
            "]",
            ",",
            "&a ",
            "*a",
            "!!str ",
            "'",
            "\"",
            "19092",
            "-1",
            "0.0.0.0",
            "~",
            "#",
            "\t",
            "é",
            "\u{0}",
            "?",
            "bootstrapPort:",
            "brokerPorts:",
            "start:",
            "count:",
            "filters:",
            "type: deny-apis",
        ]),
        0..80,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn validate_never_panics_on_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..2048)) {
        let _ = validate(&bytes, &MemoryFiles::default());
    }

    #[test]
    fn validate_never_panics_on_yaml_like_text(text in yamlish()) {
        let result = validate(text.as_bytes(), &MemoryFiles::default());
        if let Err(errors) = result {
            prop_assert!(!errors.is_empty());
            for e in &errors {
                prop_assert!(!e.message.is_empty());
            }
        }
    }

    #[test]
    fn validate_never_panics_on_mutated_valid_configs(
        specs in prop::collection::vec(cluster_spec(), 1..5),
        cuts in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
    ) {
        let mut bytes = config_text(&specs).into_bytes();
        for (at, byte) in cuts {
            let i = at.index(bytes.len());
            bytes[i] = byte;
        }
        let _ = validate(&bytes, &MemoryFiles::default());
    }

    #[test]
    fn diff_of_a_config_with_itself_is_empty(specs in prop::collection::vec(cluster_spec(), 1..8)) {
        let a = config(&specs);
        let d = diff(&a, &a);
        prop_assert!(d.is_empty(), "{d:?}");
        prop_assert_eq!(d.unchanged.len(), a.virtual_clusters.len());
    }

    #[test]
    fn diff_is_symmetric(
        old in prop::collection::vec(cluster_spec(), 1..8),
        new in prop::collection::vec(cluster_spec(), 1..8),
    ) {
        let (a, b) = (config(&old), config(&new));
        let forward = diff(&a, &b);
        let backward = diff(&b, &a);
        let sorted = |mut v: Vec<String>| { v.sort(); v };
        prop_assert_eq!(sorted(forward.added.clone()), sorted(backward.removed.clone()));
        prop_assert_eq!(sorted(forward.removed.clone()), sorted(backward.added.clone()));
        let names = |d: &sluice_config::Changes| sorted(d.modified.iter().chain(&d.rotated).map(|m| m.name.clone()).collect());
        prop_assert_eq!(names(&forward), names(&backward));
        prop_assert_eq!(sorted(forward.unchanged.clone()), sorted(backward.unchanged.clone()));
        // Every cluster of the new config is accounted for exactly once.
        prop_assert_eq!(
            forward.added.len() + forward.modified.len() + forward.rotated.len() + forward.unchanged.len(),
            b.virtual_clusters.len()
        );
    }
}
