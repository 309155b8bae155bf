//! The self-signed overlay: the webhook makes its own certificate, so its
//! flags name objects of the rendering and its RBAC grants only those.

use super::{args, containers, flag, help};
use sluice_tests::manifests::render;

#[test]
fn the_self_signed_overlay_grants_only_its_secret_and_its_configuration() {
    let r = render("self-signed", None);
    let (_, webhook, pod) = containers(&r)
        .into_iter()
        .find(|(c, ..)| c == "sluice-webhook")
        .expect("the webhook");
    let webhook_help = help("sluice-webhook");
    for f in [
        "--self-signed",
        "--secret",
        "--webhook-configuration",
        "--cert-hosts",
        "--cert-lifetime",
        "--ca-lifetime",
    ] {
        assert!(webhook_help.contains(f), "sluice-webhook has no {f}");
    }
    assert!(args(&webhook).iter().any(|a| a == "--self-signed"));
    assert!(flag(&webhook, "--tls-cert").is_none() && pod.get("volumes").is_none());

    // The flags name objects of the rendering, and the RBAC names only them.
    let secret = flag(&webhook, "--secret").unwrap();
    let (namespace, name) = secret.split_once('/').unwrap();
    let stored = r.get("Secret", name);
    assert_eq!(stored["metadata"]["namespace"], namespace);
    assert!(stored.get("data").is_none(), "the webhook fills the Secret");
    let configuration = flag(&webhook, "--webhook-configuration").unwrap();
    let vwc = r.get("ValidatingWebhookConfiguration", &configuration);
    let service = &vwc["webhooks"][0]["clientConfig"]["service"];
    let host = format!(
        "{}.{}.svc",
        service["name"].as_str().unwrap(),
        service["namespace"].as_str().unwrap()
    );
    assert!(
        flag(&webhook, "--cert-hosts")
            .unwrap()
            .split(',')
            .any(|h| h == host)
    );
    assert_eq!(
        r.get("Role", "sluice-webhook-certificate")["rules"],
        serde_json::json!([{"apiGroups": [""], "resources": ["secrets"],
            "resourceNames": [name], "verbs": ["get", "update"]}])
    );
    assert_eq!(
        r.get("ClusterRole", "sluice-webhook-cabundle")["rules"],
        serde_json::json!([{"apiGroups": ["admissionregistration.k8s.io"],
            "resources": ["validatingwebhookconfigurations"],
            "resourceNames": [configuration], "verbs": ["get", "patch"]}])
    );
    let account = pod["serviceAccountName"].as_str().unwrap();
    assert_eq!(
        r.get("ServiceAccount", account)["automountServiceAccountToken"],
        true
    );
    for binding in [
        ("RoleBinding", "sluice-webhook-certificate"),
        ("ClusterRoleBinding", "sluice-webhook-cabundle"),
    ] {
        let subject = &r.get(binding.0, binding.1)["subjects"][0];
        assert_eq!(
            (subject["name"].as_str(), subject["namespace"].as_str()),
            (Some(account), Some(namespace))
        );
    }
}
