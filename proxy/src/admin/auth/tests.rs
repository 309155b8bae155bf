use axum::http::HeaderValue;

use super::*;

const TOKEN: &str = "0123456789abcdef0123456789abcdef";

fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (name, value) in pairs {
        h.insert(name.clone(), HeaderValue::from_str(value).unwrap());
    }
    h
}

fn bearer(token: &str) -> (header::HeaderName, String) {
    (header::AUTHORIZATION, format!("Bearer {token}"))
}

fn check(peer: &str, h: &HeaderMap, token: Option<&str>) -> Result<Option<String>, Refusal> {
    let head = Head {
        peer: peer.parse().unwrap(),
        local: Some("10.1.2.3:9190".parse().unwrap()),
        headers: h,
    };
    authorize(head, token)
}

#[test]
fn with_a_token_loopback_callers_need_it_too() {
    let (name, value) = bearer(TOKEN);
    let with = headers(&[(name, &value)]);
    let without = headers(&[]);
    // 127.0.0.6: a service-mesh sidecar's inbound traffic.
    for peer in [
        "127.0.0.1:5000",
        "127.0.0.6:5000",
        "[::1]:5000",
        "[::ffff:127.0.0.1]:5000",
        "10.9.8.7:5000",
    ] {
        assert_eq!(
            check(peer, &without, Some(TOKEN)),
            Err(Refusal::MissingToken),
            "{peer}"
        );
        assert_eq!(
            check(peer, &with, Some(TOKEN)),
            Ok(Some(fingerprint(TOKEN))),
            "{peer}"
        );
    }
}

#[test]
fn only_the_exact_token_passes() {
    for presented in [
        format!("Bearer {}", &TOKEN[1..]),
        format!("Bearer {TOKEN}x"),
        format!("Basic {TOKEN}"),
        format!("bearer{TOKEN}"),
    ] {
        let h = headers(&[(header::AUTHORIZATION, &presented)]);
        let refused = check("10.9.8.7:1", &h, Some(TOKEN)).unwrap_err();
        assert!(refused.is_token(), "{presented}: {refused:?}");
    }
}

#[test]
fn without_a_token_loopback_only() {
    let h = headers(&[]);
    for peer in ["127.0.0.1:5000", "[::1]:5000", "[::ffff:127.0.0.1]:5000"] {
        assert_eq!(check(peer, &h, None), Ok(None), "{peer}");
    }
    let (name, value) = bearer("x");
    let h = headers(&[(name, &value)]);
    assert_eq!(check("10.9.8.7:1", &h, None), Err(Refusal::NotLoopback));
}

#[test]
fn a_web_page_is_refused_even_with_the_token() {
    let (name, value) = bearer(TOKEN);
    let h = headers(&[(name, &value), (header::ORIGIN, "http://evil.example")]);
    assert_eq!(check("127.0.0.1:1", &h, Some(TOKEN)), Err(Refusal::Origin));
    let h = headers(&[(header::ORIGIN, "null")]);
    assert_eq!(check("127.0.0.1:1", &h, None), Err(Refusal::Origin));
}

#[test]
fn a_foreign_host_is_refused_and_own_addresses_pass() {
    let allowed = [
        "localhost",
        "LOCALHOST:8080",
        "127.0.0.1:9190",
        "127.0.0.1",
        "[::1]:9190",
        "[::1]",
        "10.1.2.3:9190",
        "10.1.2.3",
    ];
    for host in allowed {
        let h = headers(&[(header::HOST, host)]);
        assert_eq!(check("127.0.0.1:1", &h, None), Ok(None), "{host}");
    }
    let refused = [
        "evil.example",
        "evil.example:9190",
        "localhost.evil.example",
        "10.1.2.4:9190",
        "127.0.0.2",
        "sluice-proxy.kafka-proxy.svc:9190",
    ];
    for host in refused {
        let h = headers(&[(header::HOST, host)]);
        assert_eq!(check("127.0.0.1:1", &h, None), Err(Refusal::Host), "{host}");
    }
    // With a token, the token decides: a Service name is an operator's, a
    // rebound page has no token.
    let bearer = format!("Bearer {}", "t".repeat(40));
    for host in refused {
        let with = headers(&[(header::HOST, host), (header::AUTHORIZATION, &bearer)]);
        let token = "t".repeat(40);
        assert!(check("10.0.0.7:1", &with, Some(&token)).is_ok(), "{host}");
        let without = headers(&[(header::HOST, host)]);
        assert_eq!(
            check("10.0.0.7:1", &without, Some(&token)),
            Err(Refusal::MissingToken),
            "{host}"
        );
    }
}

#[test]
fn a_v6_listener_address_is_its_own_host() {
    let h = headers(&[(header::HOST, "[fd00::5]:9190")]);
    let head = Head {
        peer: "[::1]:1".parse().unwrap(),
        local: Some("[fd00::5]:9190".parse().unwrap()),
        headers: &h,
    };
    assert_eq!(authorize(head, None), Ok(None));
    let head = Head {
        local: None,
        ..head
    };
    assert_eq!(authorize(head, None), Err(Refusal::Host));
}

#[test]
fn a_fingerprint_names_a_token_without_revealing_it() {
    let f = fingerprint(TOKEN);
    assert_eq!(f.len(), 12);
    assert!(f.bytes().all(|b| b.is_ascii_hexdigit()));
    assert!(!TOKEN.contains(&f));
    assert_ne!(f, fingerprint("another-token-of-the-same-length-x"));
    assert_eq!(f, fingerprint(TOKEN));
}
