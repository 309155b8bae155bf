//! The decider as tables: what the watcher observed and remembers → the
//! next step. No sockets, no files, no clocks.

use super::*;

fn cv(name: &str) -> ConfigVersion {
    sluice_volume::config_version(name.as_bytes())
}

/// The effective version of configuration `config` with files `files`.
fn ev(config: &str, files: &str) -> EffectiveVersion {
    sluice_volume::effective_version(&cv(config), [("tls.crt", Some(files))])
}

fn seen(config: &str, files: &str) -> Seen {
    Seen {
        config: cv(config),
        effective: ev(config, files),
    }
}

fn proxy(config: &str, files: &str) -> Proxy {
    Proxy {
        config: cv(config),
        effective: ev(config, files),
        returned_from: None,
    }
}

fn memory(rejected: Option<(&str, &str)>, in_sync: Option<(&str, &str)>) -> Memory {
    Memory {
        rejected: rejected.map(|(c, f)| ev(c, f)),
        in_sync: in_sync.map(|(c, f)| ev(c, f)),
        ..Memory::default()
    }
}

fn woke(trigger: Trigger, peers: bool) -> Stage {
    Stage::Woke { trigger, peers }
}

#[test]
fn on_waking_what_was_rejected_or_is_in_sync_is_left_alone_and_the_rest_waits_its_turn() {
    use Trigger::*;
    let a1 = seen("a", "1");
    let rejected_a1 = memory(Some(("a", "1")), None);
    let in_sync_a1 = memory(None, Some(("a", "1")));
    let none = Memory::default();
    // (trigger, peers, seen, memory) → step
    let table: &[(Trigger, bool, Option<&Seen>, &Memory, Step)] = &[
        (Start, false, None, &none, Step::Unreadable),
        (Config, true, None, &none, Step::Unreadable),
        // Rejected: left alone until it changes, tried again at a resync.
        (Config, false, Some(&a1), &rejected_a1, Step::StillRejected),
        (Files, true, Some(&a1), &rejected_a1, Step::StillRejected),
        (Start, false, Some(&a1), &rejected_a1, Step::StillRejected),
        (Resync, false, Some(&a1), &rejected_a1, Step::AskProxy),
        (Resync, true, Some(&a1), &rejected_a1, Step::ToGate),
        // A file changed back to the files in sync: nothing to do; any
        // other trigger still asks (the proxy may have been changed).
        (Files, false, Some(&a1), &in_sync_a1, Step::InSync),
        (Files, true, Some(&a1), &in_sync_a1, Step::InSync),
        (Config, false, Some(&a1), &in_sync_a1, Step::WaitTurn),
        (Resync, false, Some(&a1), &in_sync_a1, Step::AskProxy),
        // New content: with peers the gate, else this pod's delay; at
        // start and resync at once.
        (Config, true, Some(&a1), &none, Step::ToGate),
        (Start, true, Some(&a1), &none, Step::ToGate),
        (Config, false, Some(&a1), &none, Step::WaitTurn),
        (Files, false, Some(&a1), &none, Step::WaitTurn),
        (Start, false, Some(&a1), &none, Step::AskProxy),
        (Resync, false, Some(&a1), &none, Step::AskProxy),
    ];
    for (i, (trigger, peers, seen, memory, step)) in table.iter().enumerate() {
        let stage = woke(*trigger, *peers);
        let observed = Observed {
            stage: &stage,
            seen: *seen,
            proxy: None,
            validated: None,
        };
        assert_eq!(decide(&observed, memory), *step, "row {i}");
    }
}

#[test]
fn does_my_proxy_already_run_this_has_one_answer() {
    let a1 = seen("a", "1");
    let table: &[(Proxy, Option<EffectiveVersion>, Runs)] = &[
        (proxy("b", "1"), None, Runs::Other),
        (proxy("b", "1"), Some(ev("a", "1")), Runs::Other),
        (proxy("a", "1"), None, Runs::This),
        (proxy("a", "0"), None, Runs::OtherFiles),
        (proxy("a", "0"), Some(ev("a", "0")), Runs::OtherFiles),
        // The proxy reads the files differently; they were found in sync.
        (proxy("a", "0"), Some(ev("a", "1")), Runs::ThisAsInSync),
    ];
    for (i, (proxy, in_sync, expected)) in table.iter().enumerate() {
        assert_eq!(runs(proxy, &a1, in_sync.as_ref()), *expected, "row {i}");
    }
}

fn config_target(config: &str) -> Target {
    Target::config(&cv(config))
}

fn files_target(config: &str, files: &str) -> Target {
    Target {
        config: cv(config),
        effective: Some(ev(config, files)),
    }
}

#[test]
fn at_the_gate_the_target_is_the_configuration_or_the_files_and_a_halt_holds_it() {
    let a1 = seen("a", "1");
    let halted = |id: AttemptedVersion| Memory {
        halted: Some(id),
        ..Memory::default()
    };
    let in_sync_a1 = memory(None, Some(("a", "1")));
    let gate = |target, clears_halt, reads_differently| Step::Gate {
        target,
        clears_halt,
        reads_differently,
    };
    // (its proxy, memory) → step
    let table: &[(Proxy, Memory, Step)] = &[
        (
            proxy("b", "1"),
            Memory::default(),
            gate(config_target("a"), false, false),
        ),
        (
            proxy("a", "0"),
            Memory::default(),
            gate(files_target("a", "1"), false, false),
        ),
        (
            proxy("a", "1"),
            Memory::default(),
            gate(files_target("a", "1"), false, false),
        ),
        (
            proxy("a", "0"),
            in_sync_a1,
            gate(config_target("a"), false, true),
        ),
        // Halted earlier: the same target stays halted, another clears it.
        (
            proxy("b", "1"),
            halted(cv("a").into()),
            Step::HaltedEarlier {
                target: config_target("a"),
            },
        ),
        (
            proxy("a", "0"),
            halted(ev("a", "1").into()),
            Step::HaltedEarlier {
                target: files_target("a", "1"),
            },
        ),
        (
            proxy("a", "0"),
            halted(cv("a").into()),
            gate(files_target("a", "1"), true, false),
        ),
        (
            proxy("b", "1"),
            halted(cv("c").into()),
            gate(config_target("a"), true, false),
        ),
    ];
    for (i, (proxy, memory, step)) in table.iter().enumerate() {
        let observed = Observed {
            stage: &Stage::AtGate,
            seen: Some(&a1),
            proxy: Some(proxy),
            validated: None,
        };
        assert_eq!(decide(&observed, memory), *step, "row {i}");
    }
    let observed = Observed {
        stage: &Stage::AtGate,
        seen: Some(&a1),
        proxy: None,
        validated: None,
    };
    assert_eq!(decide(&observed, &Memory::default()), Step::AskProxy);
}

/// (gated, its proxy, validation, memory) → step.
type Row<'a> = (
    Option<EffectiveVersion>,
    Option<Proxy>,
    Option<Validated>,
    &'a Memory,
    Step,
);

#[test]
fn past_the_turn_unchanged_regate_validate_then_reload_or_rejected() {
    let a1 = seen("a", "1");
    let valid = |files: &str| Validated {
        valid: true,
        read: ev("a", files),
    };
    let invalid = Validated {
        valid: false,
        read: ev("a", "1"),
    };
    let reload = |over: &str, files: Option<&str>| Step::Reload {
        if_match: cv(over),
        if_effective: files.map(|f| ev("a", f)),
    };
    let none = Memory::default();
    let in_sync_a1 = memory(None, Some(("a", "1")));
    let g1 = Some(ev("a", "1"));
    let g2 = Some(ev("a", "2"));
    // (gated, its proxy, validation, memory) → step
    let table: &[Row] = &[
        (None, None, None, &none, Step::AskProxy),
        (None, Some(proxy("a", "1")), None, &none, Step::Unchanged),
        (
            g1.clone(),
            Some(proxy("a", "1")),
            None,
            &none,
            Step::Unchanged,
        ),
        (
            None,
            Some(proxy("a", "0")),
            None,
            &in_sync_a1,
            Step::Unchanged,
        ),
        (None, Some(proxy("b", "1")), None, &none, Step::Validate),
        (None, Some(proxy("a", "0")), None, &none, Step::Validate),
        (
            g1.clone(),
            Some(proxy("a", "0")),
            None,
            &none,
            Step::Validate,
        ),
        // The files changed since the gate opened for others: unsent.
        (g2.clone(), Some(proxy("a", "0")), None, &none, Step::Regate),
        // A new configuration is not a rollout of files.
        (
            g2.clone(),
            Some(proxy("b", "1")),
            None,
            &none,
            Step::Validate,
        ),
        (
            None,
            Some(proxy("b", "1")),
            Some(invalid.clone()),
            &none,
            Step::Rejected,
        ),
        (
            None,
            Some(proxy("b", "1")),
            Some(valid("1")),
            &none,
            reload("b", None),
        ),
        (
            None,
            Some(proxy("a", "0")),
            Some(valid("1")),
            &none,
            reload("a", None),
        ),
        // A rollout of files: the reload names them as validated.
        (
            g1.clone(),
            Some(proxy("a", "0")),
            Some(valid("3")),
            &none,
            reload("a", Some("3")),
        ),
        (
            g1,
            Some(proxy("b", "0")),
            Some(valid("1")),
            &none,
            reload("b", None),
        ),
    ];
    for (i, (gated, proxy, validated, memory, step)) in table.iter().enumerate() {
        let stage = Stage::Past {
            gated: gated.clone(),
        };
        let observed = Observed {
            stage: &stage,
            seen: Some(&a1),
            proxy: proxy.as_ref(),
            validated: validated.as_ref(),
        };
        assert_eq!(decide(&observed, memory), *step, "row {i}");
    }
}

#[test]
fn memory_keeps_what_the_proxy_ran_and_what_it_rejected() {
    let a1 = ev("a", "1");
    let b1 = ev("b", "1");
    let rejected =
        |about: &EffectiveVersion| (Outcome::Rejected(vec!["x".into()]), Some(about.clone()));
    let mut m = Memory::default();
    assert!(m.remember(&rejected(&a1).0, rejected(&a1).1));
    assert_eq!(m.rejected.as_ref(), Some(&a1));
    // The same rejection again (a resync): nothing new to report.
    assert!(!m.remember(&rejected(&a1).0, rejected(&a1).1));
    // A failure or newer content changes nothing.
    for outcome in [
        Outcome::Failed("f".into()),
        Outcome::Superseded,
        Outcome::Regate,
    ] {
        assert!(m.remember(&outcome, None));
        assert_eq!(m.rejected.as_ref(), Some(&a1));
        assert_eq!(m.in_sync, None);
    }
    assert!(m.remember(&Outcome::Applied, Some(b1.clone())));
    assert_eq!((m.rejected.as_ref(), m.in_sync.as_ref()), (None, Some(&b1)));
    assert!(m.remember(&Outcome::Unchanged, Some(a1.clone())));
    assert_eq!(m.in_sync.as_ref(), Some(&a1));
}

#[test]
fn a_failure_is_known_by_the_last_targets_id_when_it_was_of_this_configuration() {
    let mut m = Memory::default();
    let a: AttemptedVersion = cv("a").into();
    assert_eq!(m.attempted(&cv("a")), a);
    m.target = Some(files_target("a", "1"));
    let renewed: AttemptedVersion = ev("a", "1").into();
    assert_eq!(m.attempted(&cv("a")), renewed);
    assert_eq!(m.attempted(&cv("b")), AttemptedVersion::from(cv("b")));
    assert!(m.recorded(Some(&renewed), &cv("a")));
    assert!(!m.recorded(Some(&a), &cv("a")));
    assert!(!m.recorded(None, &cv("a")));
}

#[test]
fn a_version_its_proxy_returned_from_is_never_sent_again() {
    let a1 = seen("a", "1");
    let returned = |from: AttemptedVersion| Proxy {
        returned_from: Some(from),
        ..proxy("b", "1")
    };
    let stage = Stage::Past { gated: None };
    let step = |proxy: &Proxy| {
        let observed = Observed {
            stage: &stage,
            seen: Some(&a1),
            proxy: Some(proxy),
            validated: None,
        };
        decide(&observed, &Memory::default())
    };
    // It returned from the configuration, or from these files.
    assert_eq!(step(&returned(cv("a").into())), Step::ReturnedFrom);
    assert_eq!(step(&returned(ev("a", "1").into())), Step::ReturnedFrom);
    // Another version's failure does not hold this one.
    assert_eq!(step(&returned(cv("c").into())), Step::Validate);
    // Running it (sent again by someone else) is running it.
    let mut running = returned(cv("a").into());
    (running.config, running.effective) = (cv("a"), ev("a", "1"));
    assert_eq!(step(&running), Step::Unchanged);
}

#[test]
fn only_a_client_check_failure_is_a_version_returned_from() {
    let mut status = ConfigStatus::running(cv("b"), ev("b", "1"));
    assert_eq!(Proxy::of(&status).returned_from, None);
    for (stage, returned) in [
        (FailureStage::ClientCheck, true),
        (FailureStage::Reload, false),
        (FailureStage::UpstreamCheck, false),
    ] {
        status.last_failed_version = Some(sluice_admin_api::FailedVersion {
            version: cv("a").into(),
            stage,
            reason: "r".to_owned(),
            timestamp: String::new(),
        });
        assert_eq!(
            Proxy::of(&status).returned_from.is_some(),
            returned,
            "{stage:?}"
        );
    }
}
