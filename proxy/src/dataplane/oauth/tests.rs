//! Tokens of a test issuer, good and bad, against the verifier.

use std::time::{Duration, SystemTime};

use sluice_testkit::jwt::{AUDIENCE, ISSUER, Issuer};

use super::*;
use crate::config::identity::{DEFAULT_CLAIM, Jwks};
use crate::config::tls::Loaded;

fn settings(jwks: &Jwks) -> OAuthBearer {
    OAuthBearer {
        jwks_file: crate::config::files::FileRef::unread("jwks.json"),
        jwks: Loaded(std::sync::Arc::new(Some(jwks.clone()))),
        issuer: ISSUER.to_owned(),
        audience: AUDIENCE.to_owned(),
        principal_claim: DEFAULT_CLAIM.to_owned(),
        clock_skew: Duration::from_secs(30),
        algorithms: vec![JwsAlgorithm::Es256, JwsAlgorithm::Rs256],
    }
}

fn message(token: &str) -> Vec<u8> {
    format!("n,,\x01auth=Bearer {token}\x01\x01").into_bytes()
}

#[test]
fn a_valid_token_names_its_subject_and_every_bad_one_is_refused() {
    let issuer = Issuer::new("k1");
    let jwks = Jwks::parse(&issuer.jwks()).unwrap();
    let s = settings(&jwks);
    let now = SystemTime::now();
    let check = |token: &str| verify(token, &s, &jwks.keys, now);

    let good = issuer.token(&Issuer::claims("alice", 300));
    let verified = check(&good).unwrap();
    assert_eq!(verified.principal, "alice");
    assert!(verified.expires > now);

    let mut wrong_aud = Issuer::claims("alice", 300);
    wrong_aud["aud"] = "other".into();
    let mut wrong_iss = Issuer::claims("alice", 300);
    wrong_iss["iss"] = "https://evil".into();
    let mut no_sub = Issuer::claims("alice", 300);
    no_sub.as_object_mut().unwrap().remove("sub");
    let mut later = Issuer::claims("alice", 300);
    later["nbf"] = (later["iat"].as_i64().unwrap() + 3600).into();
    let stranger = Issuer::new("k1");
    let mut tampered = good.clone();
    tampered.insert(good.find('.').unwrap() + 3, 'x');
    let cases = [
        (issuer.token(&Issuer::claims("alice", -120)), "expired"),
        (issuer.token(&wrong_aud), "audience"),
        (issuer.token(&wrong_iss), "issuer"),
        (issuer.token(&no_sub), "no principal claim"),
        (issuer.token(&later), "not yet valid"),
        (Issuer::unsigned(&Issuer::claims("alice", 300)), "unsigned"),
        (stranger.token(&Issuer::claims("alice", 300)), "signature"),
        (tampered, ""),
        ("a.b".to_owned(), "three parts"),
    ];
    for (token, why) in cases {
        let err = check(&token).unwrap_err();
        assert!(err.to_string().contains(why), "{why}: {err}");
    }
    // Within the skew, an expired token still holds.
    assert!(check(&issuer.token(&Issuer::claims("alice", -10))).is_ok());
    // An algorithm not allowed, however well signed.
    let strict = OAuthBearer {
        algorithms: vec![JwsAlgorithm::Rs256],
        ..s.clone()
    };
    let refused = verify(&good, &strict, &jwks.keys, now).unwrap_err();
    assert!(refused.to_string().contains("algorithm"), "{refused}");
}

#[test]
fn the_message_carries_the_token_and_the_inspection_reads_its_claim() {
    let issuer = Issuer::new("k");
    let token = issuer.token(&Issuer::claims("bob", 60));
    let sent = message(&token);
    let (got, authzid) = bearer_token(&sent).unwrap();
    assert_eq!((got, authzid), (token.as_str(), None));
    let named = format!("n,a=bob,\x01host=x\x01auth=Bearer {token}\x01\x01");
    assert_eq!(bearer_token(named.as_bytes()).unwrap().1, Some("bob"));
    for bad in [
        &b"n,,auth=Bearer x"[..],
        b"n,,\x01auth=Basic x\x01\x01",
        b"\xff",
        b"q,,\x01\x01",
    ] {
        assert!(bearer_token(bad).is_err(), "{bad:?}");
    }
    assert!(matches!(
        bearer_token(b"p=tls-unique,,\x01auth=Bearer x\x01\x01"),
        Err(AuthError::Unsupported(_))
    ));
    assert_eq!(
        claim_unverified(&message(&token), "sub").as_deref(),
        Some("bob")
    );
    assert_eq!(claim_unverified(&message(&token), "email"), None);
}
