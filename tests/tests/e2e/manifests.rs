//! The Kubernetes manifests: every overlay renders with `kubectl kustomize`,
//! passes `kubernetes-validate --strict` for Kubernetes 1.30 and 1.37, and
//! agrees with the programs on what schemas cannot check: label, key, paths,
//! ports and flags; the webhook's registration; no subPath on the
//! configuration volume; hardened containers.

use std::process::Command;

use serde_json::Value;
use sluice_testkit::bin;
use sluice_tests::manifests::{Rendered, render, render_error};
use sluice_tests::python;

mod analysis;
mod hardening;
mod mounts;
mod roots;
mod self_signed;
mod webhook_policy;

const OVERLAYS: [(&str, Option<&str>); 4] = [
    ("cert-manager", None),
    ("no-cert-manager", Some("gen-certs.sh")),
    ("self-signed", None),
    ("sni", None),
];
const LABEL: &str = "sluice.dev/proxy-config";

pub(crate) fn rendered() -> Vec<(&'static str, Rendered)> {
    OVERLAYS
        .iter()
        .map(|(name, prep)| (*name, render(name, *prep)))
        .collect()
}

pub(crate) fn containers(r: &Rendered) -> Vec<(String, Value, Value)> {
    r.kind("Deployment")
        .into_iter()
        .flat_map(|d| {
            let pod = d["spec"]["template"]["spec"].clone();
            pod["containers"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| {
                    (
                        c["name"].as_str().unwrap().to_owned(),
                        c.clone(),
                        pod.clone(),
                    )
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

fn args(container: &Value) -> Vec<String> {
    container["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_owned())
        .collect()
}

pub(crate) fn flag(container: &Value, name: &str) -> Option<String> {
    let a = args(container);
    a.iter()
        .find_map(|x| x.strip_prefix(&format!("{name}=")).map(str::to_owned))
        .or_else(|| {
            a.iter()
                .position(|x| x == name)
                .and_then(|i| a.get(i + 1).cloned())
        })
}

/// What `PROGRAM --help` prints.
fn help(program: &str) -> String {
    let out = Command::new(bin(program)).arg("--help").output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn every_overlay_passes_strict_schema_validation_for_1_30_and_1_37() {
    let validator = python::interpreter().with_file_name("kubernetes-validate");
    for (name, r) in rendered() {
        for version in ["1.30.0", "1.37.0"] {
            let out = Command::new(&validator)
                .args(["--strict", "--quiet", "-k", version])
                .arg(&r.file)
                .output()
                .expect("run kubernetes-validate");
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(out.status.success(), "{name} for {version}:\n{text}");
            // Only cert-manager's own kinds lack a schema.
            for line in text.lines().filter(|l| !l.trim().is_empty()) {
                assert!(
                    line.contains("cert-manager.io/v1"),
                    "{name} for {version}: {line}"
                );
            }
        }
    }
}

#[test]
fn the_config_map_is_valid_and_selected_by_the_webhook() {
    for (name, r) in rendered() {
        let cm = r.get("ConfigMap", "sluice-proxy-config");
        assert_eq!(cm["metadata"]["labels"][LABEL], "true", "{name}");
        let yaml = cm["data"]["proxy.yaml"].as_str().expect("key proxy.yaml");
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("proxy.yaml");
        std::fs::write(&file, yaml).unwrap();
        let out = Command::new(bin("sluice-proxy"))
            .args(["check", "--paths-only"])
            .arg(&file)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stdout)
        );

        let vwc = &r.kind("ValidatingWebhookConfiguration")[0]["webhooks"][0];
        assert_eq!(vwc["objectSelector"]["matchLabels"][LABEL], "true");
        assert_eq!(vwc["sideEffects"], "None");
        assert_eq!(vwc["failurePolicy"], "Fail");
        assert!(vwc["timeoutSeconds"].as_u64().unwrap() <= 5);
        assert_eq!(vwc["admissionReviewVersions"], serde_json::json!(["v1"]));
        assert_eq!(
            vwc["rules"][0]["operations"],
            serde_json::json!(["CREATE", "UPDATE"])
        );
        assert_eq!(
            vwc["rules"][0]["resources"],
            serde_json::json!(["configmaps"])
        );
        let excluded = &vwc["namespaceSelector"]["matchExpressions"][0];
        assert_eq!(excluded["operator"], "NotIn");
        let values = excluded["values"].as_array().unwrap();
        assert!(
            values.contains(&Value::from("kube-system"))
                && values.contains(&Value::from("sluice-system"))
        );
        assert_eq!(vwc["clientConfig"]["service"]["path"], "/validate");
        match name {
            "cert-manager" | "sni" => assert!(r.kind("ValidatingWebhookConfiguration")[0]["metadata"]["annotations"]["cert-manager.io/inject-ca-from"].is_string()),
            // The webhook patches it in itself.
            "self-signed" => assert!(vwc["clientConfig"].get("caBundle").is_none()),
            _ => assert!(vwc["clientConfig"]["caBundle"].as_str().is_some_and(|b| b.len() > 100)),
        }
    }
}

#[test]
fn names_paths_ports_and_flags_agree_with_the_programs() {
    let webhook_help = help("sluice-webhook");
    for (name, r) in rendered() {
        let all = containers(&r);
        let find = |n: &str| {
            all.iter()
                .find(|(c, ..)| c == n)
                .unwrap_or_else(|| panic!("{name}: no container {n}"))
        };
        let (_, proxy, pod) = find("sluice-proxy");
        let (_, watcher, _) = find("sluice-watcher");
        let (_, webhook, _) = find("sluice-webhook");

        // One file, seen by both containers of the pod through the same directory mount.
        let config = flag(proxy, "--config").unwrap();
        assert_eq!(flag(watcher, "--path").unwrap(), config);
        // The proxy asks every caller of validate and reload for its token,
        // the watcher beside it included.
        let cm = r.get("ConfigMap", "sluice-proxy-config");
        let yaml = cm["data"]["proxy.yaml"].as_str().unwrap();
        let token_file = yaml
            .lines()
            .find_map(|l| l.trim().strip_prefix("tokenFile:"))
            .map(|t| t.trim().to_owned());
        assert!(token_file.is_some(), "{name}: no admin.tokenFile");
        assert_eq!(flag(watcher, "--token-file"), token_file, "{name}");
        assert!(config.ends_with("/proxy.yaml"), "the ConfigMap's key");
        let mount = |c: &Value| {
            c["volumeMounts"]
                .as_array()
                .unwrap()
                .iter()
                .find(|m| m["name"] == "config")
                .cloned()
                .expect("config mount")
        };
        for c in [proxy, watcher] {
            let m = mount(c);
            assert!(
                m.get("subPath").is_none(),
                "{name}: subPath on the config volume never updates"
            );
            assert_eq!(
                format!("{}/proxy.yaml", m["mountPath"].as_str().unwrap()),
                config
            );
        }
        let volume = pod["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == "config")
            .unwrap();
        assert_eq!(volume["configMap"]["name"], "sluice-proxy-config");

        // The watcher talks to the admin port the configuration sets.
        let yaml = r.get("ConfigMap", "sluice-proxy-config")["data"]["proxy.yaml"]
            .as_str()
            .unwrap()
            .to_owned();
        let port = flag(watcher, "--proxy")
            .unwrap()
            .rsplit(':')
            .next()
            .unwrap()
            .to_owned();
        assert!(
            yaml.contains(&format!("listen: 0.0.0.0:{port}")),
            "admin port {port}"
        );
        let probes = (
            &proxy["livenessProbe"]["httpGet"]["path"],
            &proxy["readinessProbe"]["httpGet"]["path"],
        );
        assert_eq!(
            probes,
            (&Value::from("/admin/health"), &Value::from("/admin/ready"))
        );
        // Both containers know the pod's name: the proxy reports it as its
        // instance, the watcher's fallback slot hashes it.
        for c in [proxy, watcher] {
            let env = c["env"].as_array().expect("env");
            let pod_name = env
                .iter()
                .find(|e| e["name"] == "POD_NAME")
                .expect("POD_NAME");
            assert_eq!(
                pod_name["valueFrom"]["fieldRef"]["fieldPath"],
                "metadata.name"
            );
        }
        assert!(flag(watcher, "--stagger").is_some() && flag(watcher, "--slots").is_some());

        // The fleet rollout: the watcher finds every pod's admin API through
        // a headless Service that lists pods ready or not, and may reach it.
        let watcher_help = help("sluice-watcher");
        for f in [
            "--peers-dns",
            "--canary-soak",
            "--peer-timeout",
            "--stagger",
        ] {
            assert!(flag(watcher, f).is_some(), "{name}: the watcher has no {f}");
            assert!(watcher_help.contains(f), "sluice-watcher has no {f}");
        }
        let peers = flag(watcher, "--peers-dns").unwrap();
        let (host, peer_port) = peers.rsplit_once(':').unwrap();
        assert_eq!(peer_port, port, "the peers' admin port is the proxy's");
        let service = host.split('.').next().unwrap();
        let headless = r.get("Service", service);
        assert_eq!(headless["spec"]["clusterIP"], "None");
        assert_eq!(headless["spec"]["publishNotReadyAddresses"], true);
        assert_eq!(
            headless["spec"]["selector"]["app.kubernetes.io/name"],
            "sluice-proxy"
        );
        let policy = r.get("NetworkPolicy", "sluice-proxy");
        let admits_peers = policy["spec"]["ingress"]
            .as_array()
            .unwrap()
            .iter()
            .any(|rule| {
                rule["from"].as_array().is_some_and(|from| {
                    from.iter().any(|f| {
                        f["podSelector"]["matchLabels"]["app.kubernetes.io/name"] == "sluice-proxy"
                    })
                }) && rule["ports"].as_array().is_some_and(|ps| {
                    ps.iter().any(|p| {
                        p["port"].as_u64().map(|n| n.to_string()).as_deref() == Some(port.as_str())
                    })
                })
            });
        assert!(
            admits_peers,
            "{name}: the proxy pods may not read each other's status"
        );
        // A pod started during a halted rollout serves what its peers vouch
        // for: its proxy starts held, longer than its watcher's resync (when
        // a proxy restarted alone is found held).
        let hold =
            flag(proxy, "--hold").unwrap_or_else(|| panic!("{name}: the proxy has no --hold"));
        let resync = flag(watcher, "--resync").unwrap_or_else(|| "60s".to_owned());
        let seconds = |d: &str| humantime::parse_duration(d).unwrap().as_secs();
        assert!(
            seconds(&hold) > seconds(&resync),
            "{name}: --hold={hold}, --resync {resync}"
        );

        // The webhook reads the key the ConfigMap has, and its flags exist.
        assert_eq!(flag(webhook, "--config-key").unwrap(), "proxy.yaml");
        for f in ["--listen", "--tls-cert", "--tls-key", "--config-key"] {
            assert!(webhook_help.contains(f), "sluice-webhook has no {f}");
        }
        assert_eq!(r.get("Deployment", "sluice-webhook")["spec"]["replicas"], 2);
        assert!(
            r.get("Deployment", "sluice-proxy")["spec"]["replicas"]
                .as_u64()
                .unwrap()
                >= 2
        );
    }
}

/// The SNI overlay: one Service port, the proxy's one container port, the
/// port the configuration's SNI clusters share, unprivileged, and the
/// gateway certificate mounted where the configuration reads it.
#[test]
fn the_sni_overlay_exposes_one_port_for_every_cluster_and_broker() {
    let r = render("sni", None);
    let service = r.get("Service", "orders");
    let ports = service["spec"]["ports"].as_array().expect("ports");
    assert_eq!(ports.len(), 1, "{ports:?}");
    assert_eq!(ports[0]["port"], 9092);
    assert_eq!(ports[0]["targetPort"], "sni");
    let deployment = r.get("Deployment", "sluice-proxy");
    let pod = &deployment["spec"]["template"]["spec"];
    let proxy = &pod["containers"][0];
    let container_ports = proxy["ports"].as_array().expect("container ports");
    let sni = container_ports
        .iter()
        .find(|p| p["name"] == "sni")
        .expect("an sni container port");
    assert_eq!(sni["containerPort"], 9092);
    assert!(
        container_ports
            .iter()
            .all(|p| p["containerPort"].as_u64() >= Some(1024))
    );
    let yaml = r.get("ConfigMap", "sluice-proxy-config")["data"]["proxy.yaml"]
        .as_str()
        .expect("proxy.yaml")
        .to_owned();
    assert!(
        yaml.contains("sni:") && yaml.contains("port: 9092"),
        "{yaml}"
    );
    let mount = proxy["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "gateway-tls")
        .expect("gateway certificate mount");
    let dir = mount["mountPath"].as_str().unwrap();
    assert!(yaml.contains(&format!("certFile: {dir}/tls.crt")), "{yaml}");
    let policy = r.get("NetworkPolicy", "sluice-proxy");
    assert_eq!(
        policy["spec"]["ingress"][0]["ports"],
        serde_json::json!([{ "port": 9092 }])
    );
}

#[test]
fn the_no_cert_manager_overlay_says_to_run_its_script_before_it_renders() {
    // The first error a user meets names the folder the script fills.
    let error = render_error("no-cert-manager");
    assert!(error.contains("run-gen-certs.sh-first"), "{error}");
}

/// `30s` or `1m` as seconds.
pub(crate) fn seconds(duration: &str) -> Option<u64> {
    let (n, unit) = duration.split_at(duration.find(|c: char| !c.is_ascii_digit())?);
    let n: u64 = n.parse().ok()?;
    match unit {
        "s" => Some(n),
        "m" => Some(n * 60),
        _ => None,
    }
}
