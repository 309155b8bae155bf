//! `compare` as a table: each row a front door before (or none), one after,
//! and the exact findings and notes.

use sluice_admin_api::analysis::{DoorStep, Finding, FrontDoor};

use super::compare;

fn step(name: &str, address: &str, error: Option<&str>, advertised: &[&str]) -> DoorStep {
    DoorStep {
        step: name.to_owned(),
        address: address.to_owned(),
        ok: error.is_none(),
        error: error.map(str::to_owned),
        advertised: advertised.iter().map(|a| (*a).to_owned()).collect(),
    }
}

fn door(steps: &[DoorStep]) -> FrontDoor {
    FrontDoor {
        steps: steps.to_vec(),
    }
}

fn finding(step: &str, before: &str, after: &str) -> Finding {
    Finding {
        cluster: "orders".to_owned(),
        step: step.to_owned(),
        before: before.to_owned(),
        after: after.to_owned(),
    }
}

const TWO: [&str; 2] = ["node 1 at p:19093", "node 2 at p:19094"];

/// The three steps, all fine, on `p`.
fn good() -> FrontDoor {
    door(&[
        step("bootstrap", "p:19092", None, &[]),
        step("metadata", "p:19092", None, &TWO),
        step("brokers", "p:19093, p:19094", None, &[]),
    ])
}

struct Row {
    name: &'static str,
    before: Option<FrontDoor>,
    after: FrontDoor,
    findings: Vec<Finding>,
    notes: Vec<&'static str>,
}

fn rows() -> Vec<Row> {
    let refused = step("bootstrap", "q:19092", Some("connection refused"), &[]);
    let no_broker = step(
        "metadata",
        "p:19092",
        Some("Metadata advertises no broker"),
        &[],
    );
    let bootstrap_ok = step("bootstrap", "p:19092", None, &[]);
    vec![
        Row {
            name: "unchanged and fine",
            before: Some(good()),
            after: good(),
            findings: vec![],
            notes: vec![],
        },
        Row {
            name: "bootstrap worked, now refused; later steps did not run",
            before: Some(good()),
            after: door(std::slice::from_ref(&refused)),
            findings: vec![finding(
                "bootstrap",
                "p:19092 answered ApiVersions",
                "q:19092: connection refused",
            )],
            notes: vec![],
        },
        Row {
            name: "metadata now advertises no broker",
            before: Some(good()),
            after: door(&[bootstrap_ok.clone(), no_broker.clone()]),
            findings: vec![finding(
                "metadata",
                "p:19092 advertised node 1 at p:19093, node 2 at p:19094",
                "p:19092: Metadata advertises no broker",
            )],
            notes: vec![],
        },
        Row {
            name: "a node advertised before is missing",
            before: Some(good()),
            after: door(&[
                bootstrap_ok.clone(),
                step("metadata", "p:19092", None, &["node 1 at p:19093"]),
                step("brokers", "p:19093", None, &[]),
            ]),
            findings: vec![finding(
                "metadata",
                "p:19092 advertised node 1 at p:19093, node 2 at p:19094",
                "p:19092 advertised node 1 at p:19093: node 2 no longer advertised",
            )],
            notes: vec![],
        },
        Row {
            name: "a node at another address is not missing; its brokers step judges it",
            before: Some(good()),
            after: door(&[
                bootstrap_ok.clone(),
                step(
                    "metadata",
                    "p:19092",
                    None,
                    &["node 1 at p:19093", "node 2 at r:1"],
                ),
                step(
                    "brokers",
                    "p:19093, r:1",
                    Some("node 2 at r:1: connection refused"),
                    &[],
                ),
            ]),
            findings: vec![finding(
                "brokers",
                "every broker answered ApiVersions (p:19093, p:19094)",
                "node 2 at r:1: connection refused",
            )],
            notes: vec![],
        },
        Row {
            name: "bootstrap failed before too: a note",
            before: Some(door(std::slice::from_ref(&refused))),
            after: door(std::slice::from_ref(&refused)),
            findings: vec![],
            notes: vec!["never worked: bootstrap: q:19092: connection refused"],
        },
        Row {
            name: "a step that did not run before is not a finding",
            before: Some(door(std::slice::from_ref(&refused))),
            after: door(&[bootstrap_ok.clone(), no_broker.clone()]),
            findings: vec![],
            notes: vec!["never worked: metadata: p:19092: Metadata advertises no broker"],
        },
        Row {
            name: "brokers unreachable before and after (a hairpin pod): a note",
            before: Some(door(&[
                bootstrap_ok.clone(),
                step("metadata", "p:19092", None, &TWO),
                step(
                    "brokers",
                    "p:19093, p:19094",
                    Some("node 1 at p:19093: no route"),
                    &[],
                ),
            ])),
            after: door(&[
                bootstrap_ok.clone(),
                step("metadata", "p:19092", None, &TWO),
                step(
                    "brokers",
                    "p:19093, p:19094",
                    Some("node 1 at p:19093: no route"),
                    &[],
                ),
            ]),
            findings: vec![],
            notes: vec!["never worked: brokers: node 1 at p:19093: no route"],
        },
        Row {
            name: "an added cluster: notes only",
            before: None,
            after: door(std::slice::from_ref(&refused)),
            findings: vec![],
            notes: vec![
                "not checked before (cluster added): bootstrap: q:19092: connection refused",
            ],
        },
        Row {
            name: "an added cluster that works: nothing",
            before: None,
            after: good(),
            findings: vec![],
            notes: vec![],
        },
        Row {
            name: "broken before, fixed after: nothing",
            before: Some(door(std::slice::from_ref(&refused))),
            after: good(),
            findings: vec![],
            notes: vec![],
        },
    ]
}

#[test]
fn compare_by_table() {
    for row in rows() {
        let (findings, notes) = compare("orders", row.before.as_ref(), &row.after);
        assert_eq!(findings, row.findings, "{}: findings", row.name);
        assert_eq!(notes, row.notes, "{}: notes", row.name);
    }
}

#[test]
fn a_finding_reads_as_a_person_reads_it() {
    let refused = step("bootstrap", "q:19092", Some("connection refused"), &[]);
    let (findings, _) = compare("orders", Some(&good()), &door(&[refused]));
    assert_eq!(
        findings[0].to_string(),
        "virtual cluster orders: bootstrap: before: p:19092 answered ApiVersions; after: q:19092: connection refused"
    );
}
