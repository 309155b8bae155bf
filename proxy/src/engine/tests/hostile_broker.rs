//! Finding 8 of issue 30, in-process: a hostile broker's words (a forged
//! log line, ANSI escapes, the credentials, 100 KB) reach the reload's
//! outcome, status (read without a token) and the log escaped, cut and
//! scrubbed. (Run alone, the captured log shows the escaped line; with
//! other tests in parallel the capture may miss it, so it is not required.)

use std::sync::Arc;

use sluice_admin_api::MAX_ECHO_CHARS;
use sluice_testkit::logs::Logs;

use super::free_ports as ports;
use crate::config::{MemoryFiles, validate};
use crate::dataplane::check::hostile::{self, Answer, PASSWORD, USERNAME, assert_harmless};
use crate::engine::{Engine, ReloadOutcome};
use crate::metrics::Metrics;

fn config(port: u16, upstream: &str) -> String {
    format!(
        "virtualClusters:\n  - name: a\n    upstream: {upstream}\n    gateway: {{ listenHost: 127.0.0.1, advertisedHost: localhost, bootstrapPort: {port}, brokerPorts: {{ start: {}, count: 1 }} }}\n",
        port + 1
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_brokers_words_reach_outcome_status_and_log_harmless() {
    let (logs, _guard) = Logs::capture();
    let files = MemoryFiles::default()
        .with("user", USERNAME.as_bytes())
        .with("pass", PASSWORD.as_bytes());
    let port = ports();
    let first = config(port, "{ bootstrapServers: [127.0.0.1:9] }");
    let valid = validate(first.as_bytes(), &files).unwrap();
    let engine = Engine::start(valid, Arc::new(Metrics::new()), Arc::new(files)).unwrap();

    let server_first = format!("e={}", hostile::words(100 * 1024));
    let (broker, task) = hostile::broker(Answer::ServerFirst(server_first.into_bytes())).await;
    let next = config(
        port,
        &format!(
            "{{ bootstrapServers: [\"127.0.0.1:{broker}\"], sasl: {{ mechanism: SCRAM-SHA-256, usernameFile: user, passwordFile: pass }} }}"
        ),
    );
    let outcome = engine.reload(next.as_bytes(), None);
    task.abort();
    let ReloadOutcome::Failed {
        reason, upstream, ..
    } = outcome
    else {
        panic!("the upstream check must fail the reload: {outcome:?}");
    };
    assert_harmless(&upstream[0].cause, MAX_ECHO_CHARS);
    assert!(
        upstream[0].cause.contains("denied\\n2026"),
        "{}",
        upstream[0].cause
    );
    assert_harmless(&reason, 4 * MAX_ECHO_CHARS);
    let status = engine.status();
    let failed = status.last_failed_version.expect("kept in status");
    assert_harmless(&failed.reason, 4 * MAX_ECHO_CHARS);
    if let Some(error) = status.last_reload_attempt.and_then(|a| a.error) {
        assert_harmless(&error, 4 * MAX_ECHO_CHARS);
    }
    // The log's fields are these same texts: the reload's failure event
    // carries `reason`, the check's warning the same text through `echoed`.
    // Whatever this thread's subscriber saw holds to the same rules.
    let log = logs.text();
    for line in log.lines() {
        assert!(!line.starts_with("2026-01-01T00:00:00Z ERROR"), "{line}");
        assert_harmless(line, 4 * MAX_ECHO_CHARS + 400);
    }
}
