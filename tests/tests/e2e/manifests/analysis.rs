//! The client-side analysis in the manifests: on, and the canary's soak at
//! least its default window.

use super::{containers, flag, rendered, seconds};

#[test]
fn the_client_side_analysis_is_on_and_the_canary_soak_covers_its_default_window() {
    // The proxy's default `analysis.window`: the gate waits for the
    // canary's verdict anyway; a soak as long keeps the canary's clients
    // watched for as long as the others wait.
    const WINDOW: u64 = 30;
    for (name, r) in rendered() {
        let cm = r.get("ConfigMap", "sluice-proxy-config");
        let text = cm["data"]["proxy.yaml"].as_str().unwrap();
        let yaml: serde_yaml::Value = serde_yaml::from_str(text).expect("proxy.yaml");
        let clusters = yaml["virtualClusters"].as_sequence().expect("clusters");
        assert!(!clusters.is_empty(), "{name}");
        for cluster in clusters {
            let analysis = &cluster["analysis"];
            // Absent: on, as the proxy defaults it.
            for off in [
                &analysis["enabled"],
                &analysis["frontDoor"]["enabled"],
                &analysis["signals"]["enabled"],
            ] {
                assert_ne!(
                    off,
                    &serde_yaml::Value::Bool(false),
                    "{name}: the manifests switch the client-side analysis off: {text}"
                );
            }
        }
        let all = containers(&r);
        let (_, watcher, _) = all
            .iter()
            .find(|(c, ..)| c == "sluice-watcher")
            .expect("a watcher");
        let soak = flag(watcher, "--canary-soak").expect("--canary-soak");
        assert!(
            seconds(&soak).is_some_and(|s| s >= WINDOW),
            "{name}: --canary-soak={soak} is shorter than the analysis window ({WINDOW}s)"
        );
    }
}
