//! OAUTHBEARER terminated by the proxy in front of a plaintext tansu: the
//! tokens of a test issuer (an ECDSA P-256 key the test makes, its key set
//! written where the proxy reads it), as librdkafka and kafka-python send
//! them. A valid token's subject is the principal the topic policy judges;
//! expired, wrong-audience, unsigned and strangers' tokens are refused
//! alike, and open no connection to the broker. A new key set, by reload,
//! applies to the next authentication: the old key's tokens are refused,
//! the new one's accepted.

use sluice_testkit::jwt::{AUDIENCE, ISSUER, Issuer};
use sluice_testkit::ports::ports;
use sluice_testkit::proxy::Proxy;
use sluice_tests::audit::audit_lines;
use sluice_tests::config::{BY_PRINCIPAL, assert_rights_by_principal, pinned};
use sluice_tests::peers::Tansu;
use sluice_tests::python;
use sluice_tests::relay::CountingRelay;

fn authentication() -> String {
    format!(
        "    authentication:
      sasl:
        mechanisms: [OAUTHBEARER]
        oauthBearer: {{ jwksFile: jwks.json, issuer: \"{ISSUER}\", audience: {AUDIENCE}, algorithms: [ES256] }}
"
    )
}

/// Authenticates one raw connection with `token`, asks Metadata (so its
/// upstream connection is open when this returns) and closes it.
fn authenticate(bootstrap: &str, token: &str) {
    use kafka_protocol::messages::{
        ApiKey, MetadataRequest, MetadataResponse, SaslAuthenticateRequest,
        SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
    };
    use kafka_protocol::protocol::StrBytes;
    use sluice_tests::kafka::Conn;

    let mut conn = Conn::connect(bootstrap);
    let mut handshake = SaslHandshakeRequest::default();
    handshake.mechanism = StrBytes::from_static_str("OAUTHBEARER");
    let chosen: SaslHandshakeResponse = conn.call(ApiKey::SaslHandshake, 1, &handshake);
    assert_eq!(chosen.error_code, 0);
    let mut message = SaslAuthenticateRequest::default();
    message.auth_bytes = format!("n,,\x01auth=Bearer {token}\x01\x01")
        .into_bytes()
        .into();
    let done: SaslAuthenticateResponse = conn.call(ApiKey::SaslAuthenticate, 2, &message);
    assert_eq!(done.error_code, 0, "{:?}", done.error_message);
    assert!(done.session_lifetime_ms > 0, "no longer than the token");
    let _: MetadataResponse = conn.call(ApiKey::Metadata, 12, &MetadataRequest::default());
}

#[test]
fn bearer_tokens_of_the_issuer_name_the_principal_and_bad_ones_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let issuer = Issuer::new("first");
    std::fs::write(dir.path().join("jwks.json"), issuer.jwks()).unwrap();
    let tansu = Tansu::start();
    tansu.create_topic("orders", 1);
    tansu.create_topic("audit", 1);
    let relay = CountingRelay::start(&tansu.addr);
    let base = ports(2);
    let rest = authentication() + BY_PRINCIPAL;
    let config = pinned("bearer", base, &relay.addr, "", &rest);
    let mut proxy = Proxy::start_in(dir, &config);
    proxy.allow("not authenticated");
    let bootstrap = format!("127.0.0.1:{base}");
    let client = |token: &str, library: &str| {
        python::sasl_client(&bootstrap, ["OAUTHBEARER", "ignored", token], library)
    };
    let mut wrong_audience = Issuer::claims("alice", 300);
    wrong_audience["aud"] = "another-service".into();
    let stranger = Issuer::new("first");
    let refused = [
        ("expired", issuer.token(&Issuer::claims("alice", -600))),
        ("wrong audience", issuer.token(&wrong_audience)),
        ("unsigned", Issuer::unsigned(&Issuer::claims("alice", 300))),
        (
            "a stranger's key",
            stranger.token(&Issuer::claims("alice", 300)),
        ),
    ];
    for library in ["librdkafka", "kafka-python"] {
        let alice = client(&issuer.token(&Issuer::claims("alice", 300)), library);
        let bob = client(&issuer.token(&Issuer::claims("bob", 300)), library);
        assert_rights_by_principal(&alice, &bob, library);

        for (what, token) in &refused {
            // Failures from one address are answered ever more slowly, and
            // a success clears them: each case starts from none, so that
            // the clients' own timeouts do not decide it.
            authenticate(&bootstrap, &issuer.token(&Issuer::claims("alice", 300)));
            let before = relay.accepted();
            let seen = client(token, library);
            assert_eq!(seen["ok"], false, "{what}, {library}: {seen}");
            let error = seen["error"].as_str().unwrap_or_default();
            assert!(
                error.contains("invalid credentials"),
                "{what}, {library}: {seen}"
            );
            let reached = relay.accepted() - before;
            assert_eq!(reached, 0, "{what}, {library}: reached the broker");
        }
    }
    // Why a token was refused is the proxy's to know (its log, bounded per
    // cause), not the client's.
    let audit = audit_lines(&proxy);
    assert!(
        proxy
            .logs()
            .iter()
            .any(|l| l.contains("token refused: expired")),
        "the first refusal's reason is logged"
    );
    assert!(
        audit.iter().any(|l| l["event"] == "authentication"
            && l["operation"] == "OAUTHBEARER"
            && l["outcome"] == "failed"),
        "{audit:?}"
    );

    // The issuer rotates its key: a new key set, by reload, in place.
    let rotated = Issuer::new("second");
    std::fs::write(proxy.dir().join("jwks.json"), rotated.jwks()).unwrap();
    let r = proxy.reload(&config);
    assert_eq!(r.status, 200, "{}", r.body);
    let old = client(&issuer.token(&Issuer::claims("alice", 300)), "librdkafka");
    assert_eq!(old["ok"], false, "the old key's token: {old}");
    let new = client(&rotated.token(&Issuer::claims("alice", 300)), "librdkafka");
    assert_eq!(new["ok"], true, "the new key's token: {new}");
    proxy.assert_clean_logs();
}

/// OAUTHBEARER read by inspection: a proxy that inspects (and requires a
/// principal) in front of a proxy that terminates and verifies the tokens
/// (no Kafka broker here verifies JWTs: the second proxy stands for one),
/// in front of tansu. The principal is the token's subject once the
/// verifier accepted it; a refused token yields none.
#[test]
fn an_inspected_bearer_tokens_subject_is_the_principal_once_the_broker_accepts_it() {
    let dir = tempfile::tempdir().unwrap();
    let issuer = Issuer::new("k");
    std::fs::write(dir.path().join("jwks.json"), issuer.jwks()).unwrap();
    let tansu = Tansu::start();
    tansu.create_topic("orders", 1);
    tansu.create_topic("audit", 1);
    let (inner, outer) = (ports(2), ports(2));
    let verifier = pinned("verifier", inner, &tansu.addr, "", &authentication());
    let mut verifier = Proxy::start_in(dir, &verifier);
    verifier.allow("not authenticated");
    let inspected = "    authentication: { saslInspection: {}, required: true }\n";
    let upstream = format!("127.0.0.1:{inner}");
    let config = pinned(
        "inspected",
        outer,
        &upstream,
        "",
        &(inspected.to_owned() + BY_PRINCIPAL),
    );
    let mut proxy = Proxy::start(&config);
    proxy.allow("no principal");
    let bootstrap = format!("127.0.0.1:{outer}");
    let client = |token: &str, library: &str| {
        python::sasl_client(&bootstrap, ["OAUTHBEARER", "ignored", token], library)
    };
    for library in ["librdkafka", "kafka-python"] {
        let alice = client(&issuer.token(&Issuer::claims("alice", 300)), library);
        let bob = client(&issuer.token(&Issuer::claims("bob", 300)), library);
        assert_rights_by_principal(&alice, &bob, library);
    }
    let expired = client(&issuer.token(&Issuer::claims("alice", -600)), "librdkafka");
    assert_eq!(expired["ok"], false, "{expired}");
    let principals = proxy.metric_sum("sluice_policy_denied_total", "principal=\"alice\"");
    assert!(
        principals >= 2.0,
        "alice's denials counted as hers: {principals}"
    );
    proxy.assert_clean_logs();
}
