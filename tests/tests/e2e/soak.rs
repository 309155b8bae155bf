//! The soak command in its smoke size (`soak --duration 20s --reloads 20`):
//! tansu, the proxy, the watcher and two producer/consumer pairs for a short
//! run of every kind of reload, with the report's verdict asserted, so the
//! test command covers the soak itself. `scripts/soak` runs the long one.

use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use sluice_testkit::bin;
use sluice_testkit::process::Proc;

#[test]
fn a_short_soak_loses_nothing_and_every_reload_ends_as_its_kind_requires() {
    let out = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(bin("soak"));
    cmd.args(["--duration", "20s", "--reloads", "20", "--out"])
        .arg(out.path());
    let mut soak = Proc::spawn("soak", cmd);
    let status = soak.wait_exit(Duration::from_secs(180));
    let printed = || soak.lines().join("\n");
    let text = std::fs::read_to_string(out.path().join("report.json"))
        .unwrap_or_else(|e| panic!("no report ({e}); exit {status:?}:\n{}", printed()));
    let report: Value = serde_json::from_str(&text).unwrap();
    let failed: Vec<&Value> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["ok"] != true)
        .collect();
    assert!(
        failed.is_empty(),
        "failed checks: {failed:#?}\n{}",
        printed()
    );
    for cluster in ["unchanged", "modified"] {
        let clients = &report["clients"][cluster];
        assert_eq!(clients["lost"], 0, "{cluster}: {clients}");
        assert!(
            clients["acked"].as_u64().unwrap() > 100,
            "{cluster}: {clients}"
        );
    }
    assert_eq!(report["clients"]["unchanged"]["error_count"], 0);
    let kinds = report["reloads"]["by_kind"].as_object().unwrap();
    for (kind, k) in kinds.iter().filter(|(kind, _)| *kind != "restore") {
        assert!(k["attempted"].as_u64().unwrap() >= 1, "{kind} never tried");
        assert_eq!(k["as_expected"], k["attempted"], "{kind}: {k}");
    }
    assert!(report["reloads"]["total"].as_u64().unwrap() >= 20);
    assert!(
        status.is_some_and(|s| s.success()),
        "exit {status:?}:\n{}",
        printed()
    );
}
