//! The configuration validator, on any bytes, and diff against a valid one.

use sluice_config::{PathsOnly, diff, validate};

const BASE: &str = "virtualClusters:\n  - name: a\n    upstream: { bootstrapServers: [k:9092] }\n    gateway: { advertisedHost: p, bootstrapPort: 19092, brokerPorts: { start: 19093, count: 3 } }\n";

/// Validates `data`; a valid configuration diffs against a base both ways
/// alike, and against itself to nothing; an invalid one has errors.
pub fn run(data: &[u8]) {
    match validate(data, &PathsOnly) {
        Ok(valid) => {
            let base = validate(BASE.as_bytes(), &PathsOnly).expect("the base is valid");
            let forward = diff(&base.config, &valid.config);
            let backward = diff(&valid.config, &base.config);
            assert_eq!(forward.added.len(), backward.removed.len());
            assert!(diff(&valid.config, &valid.config).is_empty());
        }
        Err(errors) => assert!(!errors.is_empty()),
    }
}
