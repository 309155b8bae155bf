//! The webhook's NetworkPolicy (finding 6 of issue 30).

use sluice_tests::manifests::Rendered;

/// Finding 6: the webhook's NetworkPolicy admits its HTTPS port only and
/// allows no egress, but the API server's ports in the self-signed overlay.
pub(super) fn admits_its_port_only(name: &str, r: &Rendered) {
    let policy = r.get("NetworkPolicy", "sluice-webhook");
    let spec = &policy["spec"];
    assert_eq!(
        spec["podSelector"]["matchLabels"]["app.kubernetes.io/name"], "sluice-webhook",
        "{name}"
    );
    assert_eq!(
        spec["policyTypes"],
        serde_json::json!(["Ingress", "Egress"]),
        "{name}"
    );
    assert_eq!(
        spec["ingress"],
        serde_json::json!([{"ports": [{"port": 8443, "protocol": "TCP"}]}]),
        "{name}"
    );
    let webhook = r.get("Deployment", "sluice-webhook");
    let port = &webhook["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"];
    assert_eq!(port, 8443, "{name}: the policy admits the webhook's port");
    let egress = if name == "self-signed" {
        serde_json::json!([{"ports": [{"port": 443, "protocol": "TCP"}, {"port": 6443, "protocol": "TCP"}]}])
    } else {
        serde_json::json!([])
    };
    assert_eq!(spec["egress"], egress, "{name}");
}
