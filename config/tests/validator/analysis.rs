//! `virtualClusters[].analysis`: its defaults, every field read, the errors
//! at their line and column, its CA file among the referenced files, and
//! that no change of it ever restarts a cluster.

use std::time::Duration;

use sluice_config::model::{AnalysisSettings, VirtualCluster};
use sluice_config::{MemoryFiles, PathsOnly, diff, validate, validate_referenced};

fn yaml(analysis: &str) -> String {
    format!(
        "virtualClusters:\n  - name: orders\n    upstream: {{ bootstrapServers: [kafka:9092] }}\n    gateway:\n      advertisedHost: proxy.local\n      bootstrapPort: 19092\n      brokerPorts: {{ start: 19093, count: 3 }}\n{analysis}"
    )
}

fn ca() -> Vec<u8> {
    sluice_testkit::certs::Ca::new("client trust")
        .pem
        .into_bytes()
}

fn cluster(text: &str, files: &MemoryFiles) -> VirtualCluster {
    let valid = validate(text.as_bytes(), files).unwrap_or_else(|e| panic!("{e:?}"));
    valid.config.virtual_clusters[0].clone()
}

fn errors(text: &str) -> Vec<String> {
    match validate(text.as_bytes(), &MemoryFiles::default()) {
        Ok(_) => Vec::new(),
        Err(errors) => errors.iter().map(ToString::to_string).collect(),
    }
}

#[test]
fn absent_it_is_on_with_the_defaults() {
    let c = cluster(&yaml(""), &MemoryFiles::default());
    let a = &c.analysis;
    assert_eq!(*a, AnalysisSettings::default());
    assert!(a.enabled && a.front_door.enabled && a.signals.enabled);
    assert_eq!(a.window, Duration::from_secs(30));
    assert_eq!(a.front_door.timeout, Duration::from_secs(5));
    assert!(a.front_door.ca_file.is_none());
    assert_eq!(a.signals.min_events, 5);
    assert!((a.signals.ratio - 3.0).abs() < f64::EPSILON);
    assert!(a.signals.ignore.is_empty());
    assert!(a.judges());
}

#[test]
fn every_field_is_read_and_the_ca_file_is_referenced() {
    let text = yaml(
        "    analysis:\n      enabled: true\n      window: 45s\n      frontDoor: { enabled: false, timeout: 2s, caFile: ca.pem }\n      signals: { enabled: true, minEvents: 12, ratio: 2.5, ignore: [response_errors, bootstrap_only_clients] }\n",
    );
    let files = MemoryFiles::default().with("ca.pem", ca());
    let a = cluster(&text, &files).analysis;
    assert_eq!(a.window, Duration::from_secs(45));
    assert!(!a.front_door.enabled);
    assert_eq!(a.front_door.timeout, Duration::from_secs(2));
    assert_eq!(a.front_door.ca_file.as_ref().unwrap().path, "ca.pem");
    assert_eq!(a.front_door.ca.0.len(), 1);
    assert_eq!(a.signals.min_events, 12);
    assert!((a.signals.ratio - 2.5).abs() < f64::EPSILON);
    assert_eq!(
        a.signals.ignore,
        ["response_errors", "bootstrap_only_clients"]
    );
    let (_, referenced) = validate_referenced(text.as_bytes(), &files);
    assert_eq!(referenced.files, ["ca.pem"]);
    // The webhook validates without the files: the path alone is checked.
    assert!(validate(text.as_bytes(), &PathsOnly).is_ok());
    let off = yaml("    analysis: { enabled: false }\n");
    assert!(!cluster(&off, &files).analysis.judges());
}

#[test]
fn errors_name_the_field_at_its_line_and_column() {
    let text = yaml(
        "    analysis:\n      window: 2h\n      frontDoor: { timeout: 0s, caFile: missing.pem, retries: 3 }\n      signals: { minEvents: -1, ratio: three, ignore: [unknown_node_id, connections] }\n",
    );
    assert_eq!(
        errors(&text),
        [
            "9:15: virtualClusters[0].analysis.window: must be at most 1h",
            "10:29: virtualClusters[0].analysis.frontDoor.timeout: must be longer than 0s",
            "10:41: virtualClusters[0].analysis.frontDoor.caFile: cannot read \"missing.pem\": no such file",
            "10:54: virtualClusters[0].analysis.frontDoor.retries: unknown field \"retries\", expected one of: enabled, timeout, caFile",
            "11:29: virtualClusters[0].analysis.signals.minEvents: -1 is out of range 1-1000000",
            "11:40: virtualClusters[0].analysis.signals.ratio: expected a number, found \"three\"",
            "11:56: virtualClusters[0].analysis.signals.ignore[0]: unknown signal \"unknown_node_id\", did you mean \"unknown_node_ids\"?",
            "11:73: virtualClusters[0].analysis.signals.ignore[1]: unknown signal \"connections\", known signals: closed_on_error, upstream_connect_failures, unknown_node_ids, response_errors, bootstrap_only_clients",
        ]
    );
}

#[test]
fn no_change_of_it_restarts_a_cluster() {
    let files = MemoryFiles::default()
        .with("ca.pem", ca())
        .with("other.pem", ca());
    let old = validate(yaml("").as_bytes(), &files).unwrap();
    let new = validate(
        yaml("    analysis:\n      enabled: false\n      window: 5s\n      frontDoor: { caFile: other.pem }\n      signals: { ratio: 10 }\n")
            .as_bytes(),
        &files,
    )
    .unwrap();
    let d = diff(&old.config, &new.config);
    assert!(d.is_empty(), "{d:?}");
    assert_eq!(d.unchanged, ["orders"]);
    assert_ne!(old.version, new.version);
}

#[test]
fn a_snapshot_validates_the_same_version_with_the_files_it_had() {
    let text = yaml("    analysis: { frontDoor: { caFile: ca.pem } }\n");
    let first = validate(
        text.as_bytes(),
        &MemoryFiles::default().with("ca.pem", ca()),
    )
    .unwrap();
    // The disk changes; the snapshot still answers as validation read it.
    let again = validate(text.as_bytes(), &*first.files).unwrap();
    assert_eq!(
        again.referenced.effective_version,
        first.referenced.effective_version
    );
    let now = validate(
        text.as_bytes(),
        &MemoryFiles::default().with("ca.pem", ca()),
    )
    .unwrap();
    assert_ne!(
        now.referenced.effective_version,
        first.referenced.effective_version
    );
}
