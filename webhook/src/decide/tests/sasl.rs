//! `upstream.sasl` in admission decisions.

use super::*;

/// `upstream.sasl`: PLAIN without upstream TLS is denied (paths only, as by
/// default: it would send the password in clear text); with files read, a
/// credential file that cannot be read is denied by its path, and what it
/// holds is never shown.
#[test]
fn sasl_plain_without_tls_and_unreadable_credentials_are_denied() {
    let sasl = |mechanism: &str| {
        ORDERS.replace(
            "upstream: { bootstrapServers: [kafka-0:9092] }",
            &format!("upstream: {{ bootstrapServers: [kafka-0:9092], sasl: {{ mechanism: {mechanism}, usernameFile: u, passwordFile: p }} }}"),
        )
    };
    let message = denial_of(create(text(&sasl("PLAIN"))));
    assert!(
        message.contains("upstream.sasl.mechanism: PLAIN sends the password in clear text: it needs upstream.tls (or use SCRAM-SHA-256 or SCRAM-SHA-512)"),
        "{message}"
    );
    let scram = sasl("SCRAM-SHA-256");
    assert_eq!(
        create(text(&scram)),
        Decision::Allowed {
            warnings: Vec::new()
        }
    );
    let mut p = policy();
    p.files = Arc::new(MemoryFiles::default().with("u", "proxy\n"));
    let d = decide(
        &request("ConfigMap", "CREATE", text(&scram), Value::Null),
        &p,
    );
    let message = denial_of(d);
    assert!(
        message.contains("upstream.sasl.passwordFile: cannot read \"p\": no such file"),
        "{message}"
    );
    assert!(!message.contains("proxy\n"), "{message}");
}
