//! The shipped alert rules: promtool's checks and unit tests, one firing and
//! one quiet case per alert, the PrometheusRule made from the plain rules
//! file, a runbook section per alert, and the monitoring kustomization.

use std::collections::BTreeSet;

use serde_json::Value;
use sluice_testkit::repo;
use sluice_tests::manifests::{render, render_dir, yaml_documents};
use sluice_tests::prometheus::{
    alerting_rules, dashboard_file, output, prometheus_rule, promtool, rules, rules_file,
};

const UNIT_TESTS: &str = "tests/fixtures/prometheus/sluice.rules.test.yaml";
const PROMETHEUS_RULE: &str = "manifests/monitoring/prometheusrule.yaml";

fn alert_names() -> BTreeSet<String> {
    alerting_rules(&rules())
        .iter()
        .map(|r| r["alert"].as_str().expect("alert name").to_owned())
        .collect()
}

fn succeeded(out: &std::process::Output) -> String {
    let text = output(out);
    assert!(out.status.success(), "promtool failed:\n{text}");
    text
}

#[test]
fn promtool_accepts_the_rules_and_their_unit_tests_pass() {
    let file = rules_file();
    let checked = succeeded(&promtool(&["check", "rules", file.to_str().unwrap()]));
    let count = alert_names().len();
    assert!(
        checked.contains(&format!("SUCCESS: {count} rules found")),
        "{checked}"
    );
    let tests = repo().join(UNIT_TESTS);
    let tested = succeeded(&promtool(&["test", "rules", tests.to_str().unwrap()]));
    assert!(tested.contains("SUCCESS"), "{tested}");
}

#[test]
fn every_alert_has_a_firing_and_a_quiet_unit_test() {
    let text = std::fs::read_to_string(repo().join(UNIT_TESTS)).expect("unit tests");
    let cases: Vec<(String, bool)> = yaml_documents(&text)[0]["tests"]
        .as_array()
        .expect("tests")
        .iter()
        .flat_map(|t| t["alert_rule_test"].as_array().cloned().unwrap_or_default())
        .map(|c| {
            let fires = c["exp_alerts"].as_array().is_some_and(|a| !a.is_empty());
            (
                c["alertname"].as_str().expect("alertname").to_owned(),
                fires,
            )
        })
        .collect();
    for alert in alert_names() {
        for fires in [true, false] {
            assert!(
                cases.contains(&(alert.clone(), fires)),
                "{alert} has no {} case in {UNIT_TESTS}",
                if fires { "firing" } else { "quiet" }
            );
        }
    }
}

#[test]
fn the_prometheus_rule_is_the_rules_file_under_spec() {
    let expected = prometheus_rule(&std::fs::read_to_string(rules_file()).expect("rules"));
    let path = repo().join(PROMETHEUS_RULE);
    if std::env::var_os("SLUICE_BLESS").is_some() {
        std::fs::write(&path, &expected).expect("write the PrometheusRule");
    }
    let shipped = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        shipped == expected,
        "{PROMETHEUS_RULE} is not generated from the rules file: run \
         SLUICE_BLESS=1 cargo nextest run -p sluice-tests --test e2e ops::rules"
    );
    // And what kustomize makes of it carries the same rules.
    let rendered = render_dir("monitoring", None);
    let rule = rendered.get("PrometheusRule", "sluice");
    assert_eq!(rule["spec"], rules(), "the PrometheusRule's spec");
}

#[test]
fn the_monitoring_kustomization_scrapes_the_pods_ports_and_ships_the_dashboard() {
    let monitoring = render_dir("monitoring", None);
    let base = render("cert-manager", None);
    for monitor in monitoring.kind("PodMonitor") {
        let name = monitor["metadata"]["name"].as_str().unwrap();
        let deployment = base.get("Deployment", name);
        let pod = &deployment["spec"]["template"];
        for (label, value) in monitor["spec"]["selector"]["matchLabels"]
            .as_object()
            .unwrap()
        {
            assert_eq!(
                &pod["metadata"]["labels"][label], value,
                "{name}: the PodMonitor selects the pods by {label}"
            );
        }
        assert_eq!(
            monitor["metadata"]["namespace"],
            deployment["metadata"]["namespace"]
        );
        let ports: Vec<&Value> = pod["spec"]["containers"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|c| c["ports"].as_array().unwrap())
            .map(|p| &p["name"])
            .collect();
        for endpoint in monitor["spec"]["podMetricsEndpoints"].as_array().unwrap() {
            assert!(
                ports.contains(&&endpoint["port"]),
                "{name}: port {} is not a named port of the pod {ports:?}",
                endpoint["port"]
            );
        }
    }
    assert_eq!(monitoring.kind("PodMonitor").len(), 2);
    let dashboard = monitoring.get("ConfigMap", "sluice-grafana-dashboard");
    let shipped = std::fs::read_to_string(dashboard_file()).expect("dashboard");
    assert_eq!(dashboard["data"]["sluice-dashboard.json"], shipped.as_str());
    assert_eq!(dashboard["metadata"]["labels"]["grafana_dashboard"], "1");
}

#[test]
fn every_alert_says_what_to_do_and_links_its_runbook_section() {
    let runbook = std::fs::read_to_string(repo().join("docs/operations.md")).expect("runbook");
    let headings: BTreeSet<String> = runbook
        .lines()
        .filter_map(|l| l.strip_prefix("### "))
        .map(|h| h.trim().to_lowercase())
        .collect();
    for rule in alerting_rules(&rules()) {
        let name = rule["alert"].as_str().unwrap();
        let a = &rule["annotations"];
        for key in ["summary", "description"] {
            assert!(
                a[key].as_str().is_some_and(|t| t.len() > 20),
                "{name}: no {key}"
            );
        }
        let anchor = name.to_lowercase();
        assert_eq!(
            a["runbook_url"].as_str(),
            Some(
                format!("https://github.com/example/sluice/blob/main/docs/operations.md#{anchor}")
                    .as_str()
            ),
            "{name}: runbook_url"
        );
        assert!(
            headings.contains(&anchor),
            "docs/operations.md has no section `### {name}`"
        );
        let severity = rule["labels"]["severity"].as_str();
        assert!(
            matches!(severity, Some("warning" | "critical")),
            "{name}: severity {severity:?}"
        );
    }
}
