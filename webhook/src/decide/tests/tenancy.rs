//! A tenant's new prefix: the webhook says the reload restarts that
//! cluster, and why.

use super::*;

#[test]
fn a_new_tenancy_prefix_warns_that_only_that_cluster_restarts() {
    let tenant = |prefix: &str| format!("{ORDERS}    tenancy: {{ prefix: \"{prefix}\" }}\n");
    let r = request(
        "ConfigMap",
        "UPDATE",
        text(&tenant("b.")),
        text(&tenant("a.")),
    );
    assert_eq!(
        decide(&r, &policy()),
        Decision::Allowed {
            warnings: vec![
                "cluster \"orders\" will drain and restart: tenancy.prefix changed from \"a.\" to \"b.\""
                    .into()
            ]
        }
    );
}
