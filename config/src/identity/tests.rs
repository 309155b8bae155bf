use super::*;

fn names() -> CertNames {
    CertNames {
        subject: "CN=Alice,OU=orders,O=Example".to_owned(),
        dns: vec!["alice.orders.svc".to_owned()],
        uri: vec![
            "https://example.org/a".to_owned(),
            "spiffe://example.org/ns/orders/sa/writer".to_owned(),
        ],
        email: vec!["alice@example.org".to_owned()],
    }
}

fn rule(from: NameSource, pattern: Option<&str>, principal: &str, case: Case) -> PrincipalRule {
    PrincipalRule::new(from, pattern, principal, case).expect("a valid rule")
}

#[test]
fn the_first_rule_that_matches_gives_the_principal() {
    let rules = MtlsPrincipals {
        rules: vec![
            rule(
                NameSource::Subject,
                Some("CN=([^,]+),OU=billing,.*"),
                "$1",
                Case::AsIs,
            ),
            rule(
                NameSource::Uri,
                Some("spiffe://example.org/ns/([^/]+)/sa/([^/]+)"),
                "$1/$2",
                Case::AsIs,
            ),
            rule(NameSource::Subject, None, "$0", Case::AsIs),
        ],
    };
    // The first rule does not match (OU=orders); the second reads every
    // URI, in order, and the SPIFFE one matches.
    assert_eq!(rules.principal(&names()).as_deref(), Some("orders/writer"));
}

#[test]
fn a_pattern_matches_the_whole_name_as_kafka_s_rules_do() {
    // "CN=([^,]+)" alone would match a prefix; anchored, it does not.
    let r = rule(NameSource::Subject, Some("CN=([^,]+)"), "$1", Case::AsIs);
    assert_eq!(MtlsPrincipals { rules: vec![r] }.principal(&names()), None);
    let r = rule(
        NameSource::Subject,
        Some("CN=([^,]+),.*"),
        "$1",
        Case::Lower,
    );
    assert_eq!(
        MtlsPrincipals { rules: vec![r] }
            .principal(&names())
            .as_deref(),
        Some("alice")
    );
}

#[test]
fn without_a_pattern_the_whole_name_is_the_principal_and_case_applies() {
    let whole = |from, case| MtlsPrincipals {
        rules: vec![rule(from, None, "$0", case)],
    };
    assert_eq!(
        whole(NameSource::Subject, Case::AsIs)
            .principal(&names())
            .as_deref(),
        Some("CN=Alice,OU=orders,O=Example")
    );
    assert_eq!(
        whole(NameSource::Subject, Case::Upper)
            .principal(&names())
            .as_deref(),
        Some("CN=ALICE,OU=ORDERS,O=EXAMPLE")
    );
    assert_eq!(
        whole(NameSource::Email, Case::AsIs)
            .principal(&names())
            .as_deref(),
        Some("alice@example.org")
    );
    assert_eq!(
        whole(NameSource::Dns, Case::AsIs).principal(&CertNames::default()),
        None,
        "a certificate without DNS names gives no principal from dns"
    );
}

#[test]
fn an_empty_or_overlong_result_is_no_principal() {
    let empty = rule(NameSource::Subject, Some("CN=(x?),.*"), "$1", Case::AsIs);
    let long = "a".repeat(MAX_PRINCIPAL_CHARS + 1);
    let named = CertNames {
        subject: format!("CN={long}"),
        ..CertNames::default()
    };
    let whole = rule(NameSource::Subject, Some("CN=(.*)"), "$1", Case::AsIs);
    assert_eq!(
        MtlsPrincipals { rules: vec![empty] }.principal(&names()),
        None
    );
    assert_eq!(
        MtlsPrincipals { rules: vec![whole] }.principal(&named),
        None
    );
}

#[test]
fn bad_patterns_and_missing_groups_are_refused() {
    let bad = PrincipalRule::new(NameSource::Subject, Some("CN=(["), "$1", Case::AsIs);
    assert!(bad.is_err());
    let missing = PrincipalRule::new(NameSource::Subject, Some("CN=(.*)"), "$2", Case::AsIs)
        .expect_err("group 2 is not in the pattern");
    assert_eq!(
        missing.to_string(),
        "principal names group $2, but the pattern has 1 group(s)"
    );
    assert!(PrincipalRule::new(NameSource::Subject, Some("CN=(.*)"), "${1}x", Case::AsIs).is_ok());
}
