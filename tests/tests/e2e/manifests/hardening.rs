//! Every container of every overlay is hardened (non-root, seccomp, a
//! read-only root, no privilege escalation, no capability) and bounded
//! (requests and limits); disruption budgets and network policies exist;
//! the proxy may only create Events.

use super::{containers, rendered};

#[test]
fn every_container_is_hardened_and_bounded() {
    for (name, r) in rendered() {
        for (container, c, pod) in containers(&r) {
            let at = format!("{name}/{container}");
            let sc = &c["securityContext"];
            assert_eq!(pod["securityContext"]["runAsNonRoot"], true, "{at}");
            assert_eq!(
                pod["securityContext"]["seccompProfile"]["type"], "RuntimeDefault",
                "{at}"
            );
            assert_eq!(sc["readOnlyRootFilesystem"], true, "{at}");
            assert_eq!(sc["allowPrivilegeEscalation"], false, "{at}");
            assert_eq!(
                sc["capabilities"]["drop"],
                serde_json::json!(["ALL"]),
                "{at}"
            );
            for kind in ["requests", "limits"] {
                assert!(
                    c["resources"][kind]["cpu"].is_string()
                        && c["resources"][kind]["memory"].is_string(),
                    "{at}: {kind}"
                );
            }
        }
        assert_eq!(r.kind("PodDisruptionBudget").len(), 2, "{name}");
        assert_eq!(r.kind("NetworkPolicy").len(), 2, "{name}");
        super::webhook_policy::admits_its_port_only(name, &r);
        let role = r.get("Role", "sluice-proxy-events");
        assert_eq!(
            role["rules"],
            serde_json::json!([{"apiGroups": [""], "resources": ["events"], "verbs": ["create"]}])
        );
    }
}
