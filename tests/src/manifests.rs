//! Rendering the Kubernetes manifests (`kubectl kustomize`) and reading the
//! result. The one place in the tests that parses YAML with serde_yaml.

use std::path::{Path, PathBuf};
use std::process::Command;

use sluice_testkit::repo;

/// Every object of an overlay's rendering.
#[derive(Debug)]
pub struct Rendered {
    /// The rendered YAML.
    pub file: PathBuf,
    /// The objects, as JSON values for easy indexing.
    pub objects: Vec<serde_json::Value>,
    _dir: tempfile::TempDir,
}

impl Rendered {
    /// Objects of one kind.
    pub fn kind(&self, kind: &str) -> Vec<&serde_json::Value> {
        self.objects.iter().filter(|o| o["kind"] == kind).collect()
    }

    /// The one object of a kind and name.
    pub fn get(&self, kind: &str, name: &str) -> &serde_json::Value {
        self.objects
            .iter()
            .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("no {kind} {name}"))
    }
}

/// Renders `manifests/overlays/<overlay>` from a copy of the manifests (so a
/// generator script can write into it), running `prepare` in the copy first.
pub fn render(overlay: &str, prepare: Option<&str>) -> Rendered {
    render_dir(&format!("overlays/{overlay}"), prepare)
}

/// Renders `manifests/<path>` (a kustomization) like [`render`].
pub fn render_dir(path: &str, prepare: Option<&str>) -> Rendered {
    let overlay = path.rsplit('/').next().unwrap_or(path);
    let dir = tempfile::tempdir().expect("temp dir");
    let copy = dir.path().join("manifests");
    copy_tree(&repo().join("manifests"), &copy);
    let overlay_dir = copy.join(path);
    if let Some(script) = prepare {
        let out = Command::new(overlay_dir.join(script))
            .output()
            .expect("run the overlay's script");
        assert!(
            out.status.success(),
            "{script}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = Command::new("kubectl")
        .arg("kustomize")
        .arg(&overlay_dir)
        .output()
        .expect("run kubectl kustomize");
    assert!(
        out.status.success(),
        "kubectl kustomize {overlay}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let file = dir.path().join(format!("{overlay}.yaml"));
    std::fs::write(&file, &out.stdout).expect("write rendering");
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let objects = yaml_documents(&text);
    Rendered {
        file,
        objects,
        _dir: dir,
    }
}

/// Every document of a YAML stream, as JSON values for easy indexing.
pub fn yaml_documents(text: &str) -> Vec<serde_json::Value> {
    serde_yaml::Deserializer::from_str(text)
        .map(|doc| {
            let value: serde_yaml::Value =
                serde::Deserialize::deserialize(doc).expect("a YAML document");
            serde_json::to_value(value).expect("JSON-compatible YAML")
        })
        .collect()
}

/// What `kubectl kustomize` prints when `overlay` fails to render from a
/// fresh copy of the manifests (nothing generated in it); panics if it renders.
pub fn render_error(overlay: &str) -> String {
    let dir = tempfile::tempdir().expect("temp dir");
    let copy = dir.path().join("manifests");
    copy_tree(&repo().join("manifests"), &copy);
    let overlay_dir = copy.join("overlays").join(overlay);
    // A clone has none of what the overlay's script generates (it is ignored
    // by git); a developer's working tree may.
    let _ = std::fs::remove_dir_all(overlay_dir.join("run-gen-certs.sh-first"));
    let out = Command::new("kubectl")
        .arg("kustomize")
        .arg(&overlay_dir)
        .output()
        .expect("run kubectl kustomize");
    assert!(
        !out.status.success(),
        "{overlay} rendered without its script"
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}
