//! Validation without files (`PathsOnly`), as the admission webhook runs it
//! where the proxy's Secrets are not mounted.

use sluice_config::{LocalFiles, PathsOnly, validate};

const CONFIG: &str = "admin: { listen: 0.0.0.0:9190, tokenFile: /var/run/sluice/token }
virtualClusters:
  - name: secure
    upstream:
      bootstrapServers: [kafka:9093]
      tls: { caFile: /etc/sluice/ca.pem, certFile: /etc/sluice/client.crt, keyFile: /etc/sluice/client.key }
    gateway:
      advertisedHost: proxy.local
      bootstrapPort: 19092
      brokerPorts: { start: 19093, count: 3 }
      tls: { certFile: /etc/sluice/tls.crt, keyFile: /etc/sluice/tls.key, clientCaFile: /etc/sluice/ca.pem }
";

#[test]
fn paths_are_checked_but_files_are_not_read() {
    let valid = validate(CONFIG.as_bytes(), &PathsOnly).expect("valid without files");
    let cluster = &valid.config.virtual_clusters[0];
    let tls = cluster.gateway.tls.as_ref().unwrap();
    assert_eq!(tls.cert_file.path, "/etc/sluice/tls.crt");
    assert_eq!(tls.cert_file.digest, "unread");
    assert!(tls.material.0.key.is_none());
    assert_eq!(
        valid.config.admin.token_file.as_ref().unwrap().path,
        "/var/run/sluice/token"
    );

    // With files, the same configuration fails on every missing file.
    let errors = validate(CONFIG.as_bytes(), &LocalFiles::relative_to("/")).unwrap_err();
    assert_eq!(errors.len(), 7, "{errors:?}");
    assert!(errors.iter().all(|e| e.message.contains("no such file")));
}

#[test]
fn structure_is_still_checked_in_full() {
    let broken = CONFIG
        .replace("certFile: /etc/sluice/tls.crt, ", "")
        .replace("bootstrapPort: 19092", "bootstrapPort: 0");
    let errors = validate(broken.as_bytes(), &PathsOnly).unwrap_err();
    let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        messages,
        [
            "9:22: virtualClusters[0].gateway.bootstrapPort: port 0 is out of range 1-65535",
            "11:14: virtualClusters[0].gateway.tls.certFile: required field is missing",
        ]
    );
}
