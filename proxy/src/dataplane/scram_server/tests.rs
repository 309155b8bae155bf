//! The server side against RFC 7677's exchange, and the ways a client may
//! get it wrong: each answered alike.

use super::*;
use crate::config::identity::scram_file;

// RFC 7677, section 3: user "user", password "pencil".
const CLIENT_FIRST: &str = "n,,n=user,r=rOprNGfwEbeRWgbNEkqO";
const SERVER_NONCE: &str = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
const SERVER_FIRST: &str =
    "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
const CLIENT_FINAL: &str = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
const SERVER_FINAL: &str = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";
const SHA256: SaslMechanism = SaslMechanism::ScramSha256;

fn users() -> ScramUsers {
    let salt = B64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
    let keys = derive(Hash::Sha256, b"pencil", &salt, 4096);
    ScramUsers::parse(&scram_file::line("user", SHA256, &keys)).unwrap()
}

#[test]
fn the_rfc_7677_exchange_from_the_server_side() {
    let (first, pending) = scram_first(
        SHA256,
        &users(),
        CLIENT_FIRST.as_bytes(),
        SERVER_NONCE,
        b"k",
    )
    .unwrap();
    assert_eq!(first, SERVER_FIRST);
    assert_eq!(pending.user(), "user");
    let (last, user) = pending.finish(CLIENT_FINAL.as_bytes()).unwrap();
    assert_eq!((last.as_str(), user.as_str()), (SERVER_FINAL, "user"));
}

#[test]
fn a_wrong_proof_and_an_unknown_user_fail_alike() {
    let users = users();
    let start = |first: &str| scram_first(SHA256, &users, first.as_bytes(), SERVER_NONCE, b"k");
    let (_, pending) = start(CLIENT_FIRST).unwrap();
    let wrong = CLIENT_FINAL.replace("p=dHzb", "p=eHzb");
    assert_eq!(
        pending.finish(wrong.as_bytes()).unwrap_err(),
        AuthError::Credentials
    );

    // An unknown user gets a salt of its own, the same at every attempt,
    // and the file's iterations; its proof fails as a wrong one does.
    let (first, pending) = start("n,,n=nobody,r=rOprNGfwEbeRWgbNEkqO").unwrap();
    let (again, _) = start("n,,n=nobody,r=rOprNGfwEbeRWgbNEkqO").unwrap();
    assert_eq!(first, again);
    assert!(first.ends_with(",i=4096"), "{first}");
    assert_ne!(first, SERVER_FIRST);
    let final_of_nobody = CLIENT_FINAL.to_owned();
    assert_eq!(
        pending.finish(final_of_nobody.as_bytes()).unwrap_err(),
        AuthError::Credentials
    );
}

#[test]
fn malformed_and_unsupported_first_messages_are_refused() {
    let users = users();
    for (first, expected) in [
        (
            "p=tls-unique,,n=user,r=abc",
            AuthError::Unsupported("channel binding"),
        ),
        (
            "n,a=admin,n=user,r=abc",
            AuthError::Unsupported("an authorization id other than the user"),
        ),
        ("n,,m=ext,n=user,r=abc", AuthError::Unsupported("extension")),
        (
            "n,,n=user,r=abc,tokenauth=true",
            AuthError::Unsupported("delegation tokens"),
        ),
        ("n,,n=us=3Fer,r=abc", AuthError::Malformed("user name")),
        ("n,,n=user", AuthError::Malformed("nonce")),
        ("x", AuthError::Malformed("gs2 header")),
    ] {
        let got = scram_first(SHA256, &users, first.as_bytes(), "s", b"k").err();
        assert_eq!(got, Some(expected), "{first}");
    }
    assert!(scram_first(SHA256, &users, b"n,a=user,n=user,r=abc", "s", b"k").is_ok());
    assert_eq!(unescape("a=2Cb=3Dc").as_deref(), Some("a,b=c"));
}

#[test]
fn plain_checks_the_password_against_the_scram_keys() {
    let users = users();
    assert_eq!(plain(&users, b"\0user\0pencil", b"k").unwrap(), "user");
    assert_eq!(plain(&users, b"user\0user\0pencil", b"k").unwrap(), "user");
    for bad in [&b"\0user\0pen"[..], b"\0nobody\0pencil"] {
        assert_eq!(
            plain(&users, bad, b"k").unwrap_err(),
            AuthError::Credentials
        );
    }
    assert_eq!(
        plain(&users, b"\0user", b"k").unwrap_err(),
        AuthError::Malformed("PLAIN message")
    );
    assert!(matches!(
        plain(&users, b"admin\0user\0pencil", b"k"),
        Err(AuthError::Unsupported(_))
    ));
}
