//! What the manifests mount agrees with what the configuration references,
//! in `manifests/base` and every overlay (issue 31: the SNI overlay mounted
//! the gateway certificate into the proxy only, so its renewal never rolled
//! out):
//!
//! - every file the ConfigMap's configuration names (its `…File` keys) is
//!   mounted, at that path and from the same volume, in every container that
//!   reads it: the proxy serves it, the watcher rolls a renewed one out;
//! - every Secret and ConfigMap a volume names exists in the rendering
//!   (cert-manager's Certificates make theirs) or is named in the README
//!   beside the kustomization as created outside it.

use serde_json::Value;
use sluice_testkit::repo;
use sluice_tests::manifests::{Rendered, render, render_dir, yaml_documents};

use super::{OVERLAYS, containers};

/// The containers that read every referenced file.
const READERS: [&str; 2] = ["sluice-proxy", "sluice-watcher"];

/// Every rendering: the base and each overlay, with the folder it came from.
fn renderings() -> Vec<(String, Rendered)> {
    let mut all = vec![("base".to_owned(), render_dir("base", None))];
    all.extend(
        OVERLAYS
            .iter()
            .map(|(name, prep)| (format!("overlays/{name}"), render(name, *prep))),
    );
    all
}

/// The values of every `…File` key, anywhere in a configuration.
fn referenced_files(config: &Value, found: &mut Vec<String>) {
    match config {
        Value::Object(map) => {
            for (key, value) in map {
                match value.as_str() {
                    Some(path) if key.ends_with("File") => found.push(path.to_owned()),
                    _ => referenced_files(value, found),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| referenced_files(v, found)),
        _ => {}
    }
}

/// The name of the volume `container` mounts at the directory holding
/// `file`, if any.
fn volume_holding(container: &Value, file: &str) -> Option<String> {
    container["volumeMounts"]
        .as_array()?
        .iter()
        .filter(|m| m["subPath"].is_null())
        .find(|m| {
            m["mountPath"]
                .as_str()
                .is_some_and(|dir| file.starts_with(&format!("{}/", dir.trim_end_matches('/'))))
        })
        .and_then(|m| m["name"].as_str())
        .map(str::to_owned)
}

#[test]
fn every_referenced_file_is_mounted_in_every_container_that_reads_it() {
    let mut problems = Vec::new();
    for (name, r) in renderings() {
        let text = r.get("ConfigMap", "sluice-proxy-config")["data"]["proxy.yaml"]
            .as_str()
            .expect("proxy.yaml")
            .to_owned();
        let config = yaml_documents(&text)
            .into_iter()
            .next()
            .expect("a document");
        let mut files = Vec::new();
        referenced_files(&config, &mut files);
        assert!(!files.is_empty(), "{name}: no file referenced in {text}");
        let all = containers(&r);
        for file in &files {
            let mut sources = Vec::new();
            for reader in READERS {
                let (_, container, _) = all
                    .iter()
                    .find(|(c, ..)| c == reader)
                    .unwrap_or_else(|| panic!("{name}: no {reader} container"));
                match volume_holding(container, file) {
                    Some(volume) => sources.push(volume),
                    None => problems.push(format!(
                        "{name}: {reader} does not mount {file} (the configuration references it)"
                    )),
                }
            }
            if sources.windows(2).any(|w| w[0] != w[1]) {
                problems.push(format!(
                    "{name}: {file} comes from different volumes in {READERS:?}: {sources:?}"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The Secrets and ConfigMaps the rendering's pod volumes name, as
/// `(kind, name)`.
fn named_by_volumes(r: &Rendered) -> Vec<(&'static str, String)> {
    let mut named = Vec::new();
    for (_, _, pod) in containers(r) {
        for volume in pod["volumes"].as_array().into_iter().flatten() {
            let projected = volume["projected"]["sources"].as_array();
            let sources = std::iter::once(volume).chain(projected.into_iter().flatten());
            for source in sources {
                if let Some(s) = source["secret"]["secretName"].as_str() {
                    named.push(("Secret", s.to_owned()));
                }
                if let Some(s) = source["secret"]["name"].as_str() {
                    named.push(("Secret", s.to_owned()));
                }
                if let Some(c) = source["configMap"]["name"].as_str() {
                    named.push(("ConfigMap", c.to_owned()));
                }
            }
        }
    }
    named.sort();
    named.dedup();
    named
}

#[test]
fn every_secret_and_config_map_a_volume_names_exists_or_is_documented() {
    let mut problems = Vec::new();
    for (name, r) in renderings() {
        let readme =
            std::fs::read_to_string(repo().join("manifests").join(&name).join("README.md"))
                .unwrap_or_default();
        for (kind, object) in named_by_volumes(&r) {
            let rendered = r
                .kind(kind)
                .iter()
                .any(|o| o["metadata"]["name"] == object.as_str());
            let certificate = kind == "Secret"
                && r.kind("Certificate")
                    .iter()
                    .any(|c| c["spec"]["secretName"] == object.as_str());
            if !rendered && !certificate && !readme.contains(&format!("`{object}`")) {
                problems.push(format!(
                    "{name}: a volume names the {kind} {object}, which the rendering does not \
                     hold and manifests/{name}/README.md does not name (as `{object}`)"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
