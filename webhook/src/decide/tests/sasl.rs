//! `upstream.sasl` in admission decisions.

use super::*;

/// `upstream.sasl`: PLAIN without upstream TLS is admitted with a warning
/// (paths only, as by default); with files read, a credential file that
/// cannot be read is denied by its path, and what it holds is never shown.
#[test]
fn sasl_plain_without_tls_warns_and_unreadable_credentials_are_denied() {
    let plain = ORDERS.replace(
        "upstream: { bootstrapServers: [kafka-0:9092] }",
        "upstream: { bootstrapServers: [kafka-0:9092], sasl: { mechanism: PLAIN, usernameFile: u, passwordFile: p } }",
    );
    assert_eq!(
        create(text(&plain)),
        Decision::Allowed {
            warnings: vec![
                "virtual cluster orders: upstream.sasl PLAIN without upstream.tls sends the proxy's password in clear text".into()
            ]
        }
    );
    let mut p = policy();
    p.files = Arc::new(MemoryFiles::default().with("u", "proxy\n"));
    let d = decide(
        &request("ConfigMap", "CREATE", text(&plain), Value::Null),
        &p,
    );
    let message = denial_of(d);
    assert!(
        message.contains("upstream.sasl.passwordFile: cannot read \"p\": no such file"),
        "{message}"
    );
    assert!(!message.contains("proxy\n"), "{message}");
}
