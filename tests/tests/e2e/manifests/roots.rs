//! The proxy's `--file-root`s in every overlay: each is a directory the
//! proxy container mounts, and every file the ConfigMap's configuration
//! names lies beneath one of them, so the shipped configuration passes the
//! proxy's confinement (and nothing else is readable through it).

use super::{args, containers, rendered};

/// The paths after `…File:` keys in a configuration's text.
fn referenced_paths(yaml: &str) -> Vec<String> {
    yaml.split(['\n', '{', ','])
        .filter_map(|part| {
            let (key, value) = part.split_once(':')?;
            key.trim().ends_with("File").then(|| {
                value
                    .trim()
                    .trim_end_matches(['}', ' '])
                    .trim_matches('"')
                    .to_owned()
            })
        })
        .collect()
}

#[test]
fn every_file_the_config_map_names_lies_beneath_a_mounted_file_root() {
    for (name, r) in rendered() {
        let all = containers(&r);
        let (_, proxy, _) = all
            .iter()
            .find(|(c, ..)| c == "sluice-proxy")
            .expect("a proxy container");
        let roots: Vec<String> = args(proxy)
            .iter()
            .filter_map(|a| a.strip_prefix("--file-root=").map(str::to_owned))
            .collect();
        assert!(!roots.is_empty(), "{name}: the proxy names no --file-root");
        let mounts: Vec<&str> = proxy["volumeMounts"]
            .as_array()
            .expect("mounts")
            .iter()
            .map(|m| m["mountPath"].as_str().expect("mountPath"))
            .collect();
        for root in &roots {
            assert!(
                mounts.contains(&root.as_str()),
                "{name}: {root} is not mounted"
            );
        }
        let yaml = r.get("ConfigMap", "sluice-proxy-config")["data"]["proxy.yaml"]
            .as_str()
            .expect("proxy.yaml")
            .to_owned();
        let files = referenced_paths(&yaml);
        assert!(!files.is_empty(), "{name}: {yaml}");
        for file in files {
            assert!(
                roots
                    .iter()
                    .any(|root| file.starts_with(&format!("{root}/"))),
                "{name}: {file} is beneath no --file-root of {roots:?}"
            );
        }
    }
}
