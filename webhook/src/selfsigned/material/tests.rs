//! Real certificates through every step, and the Secret's data both ways.

use std::path::Path;
use std::time::Duration;

use super::*;
use crate::selfsigned::plan::{Step, plan};

const NOW: i64 = 1_800_000_000;

fn hosts() -> Vec<String> {
    vec![
        "sluice-webhook.sluice-system.svc".to_owned(),
        "127.0.0.1".to_owned(),
    ]
}

fn lifetimes() -> Lifetimes {
    Lifetimes::try_new(Duration::from_secs(90), Duration::from_secs(900)).expect("valid")
}

/// The serving pair as the TLS server would load it.
fn serves(m: &Material) -> crate::tls::LoadedCert {
    crate::tls::parse(
        Path::new("tls.crt"),
        m.serving.cert.as_bytes(),
        Path::new("tls.key"),
        m.serving.key.as_bytes(),
    )
    .expect("a pair the server can use")
}

#[test]
fn lifetimes_are_checked() {
    let s = Duration::from_secs;
    assert!(Lifetimes::try_new(s(10), s(30)).is_ok());
    assert_eq!(
        Lifetimes::try_new(s(10), s(29)).unwrap_err(),
        "the CA's lifetime must be at least three times the serving certificate's"
    );
    assert_eq!(
        Lifetimes::try_new(s(2), s(3600)).unwrap_err(),
        "the serving certificate's lifetime must be at least 3s"
    );
}

#[test]
fn a_new_secret_holds_a_ca_and_a_serving_certificate_it_signed() {
    let m = Material::create(&hosts(), lifetimes(), NOW).expect("created");
    let view = m.view(&hosts()).expect("valid");
    // Valid from a little earlier, for callers whose clock is behind.
    assert_eq!(view.ca.not_before, NOW - 60);
    assert_eq!(view.serving.not_before, NOW - 9);
    assert_eq!(view.ca.not_after, NOW + 900);
    assert_eq!(view.serving.not_after, NOW + 90);
    assert!(view.serving_fits);
    assert_eq!(plan(Some(&view), NOW + 1, true), None);
    assert_eq!(serves(&m).not_after, NOW + 90);
    assert_eq!(m.bundle(), format!("{}\n", m.ca.cert.trim()));

    // Other hosts asked for: the serving certificate no longer fits.
    let other = vec!["elsewhere.svc".to_owned()];
    assert!(!m.view(&other).expect("valid").serving_fits);
}

#[test]
fn the_secret_data_round_trips_with_the_bundle_beside_it() {
    let m = Material::create(&hosts(), lifetimes(), NOW).expect("created");
    let announced = m
        .apply(Step::AnnounceCa, &hosts(), lifetimes(), NOW + 600)
        .expect("announced");
    let data = announced.to_data();
    assert_eq!(
        String::from_utf8(data[BUNDLE_KEY].0.clone()).unwrap(),
        announced.bundle()
    );
    assert_eq!(announced.bundle().matches("BEGIN CERTIFICATE").count(), 2);
    let back = Material::from_data(&data)
        .expect("reads")
        .expect("material");
    assert_eq!(back, announced);
    assert_eq!(Material::from_data(&BTreeMap::new()), Ok(None));
}

#[test]
fn broken_content_says_what_is_wrong() {
    let m = Material::create(&hosts(), lifetimes(), NOW).expect("created");
    let mut data = m.to_data();
    data.remove("signing-ca.key");
    assert_eq!(
        Material::from_data(&data).unwrap_err(),
        MaterialError::Missing("signing-ca.key")
    );
    let mut data = m.to_data();
    data.insert("tls.key".to_owned(), ByteString(vec![0xff, 0xfe]));
    assert_eq!(
        Material::from_data(&data).unwrap_err(),
        MaterialError::NotText("tls.key")
    );

    let other = Material::create(&hosts(), lifetimes(), NOW).expect("created");
    let mut swapped = m.clone();
    swapped.serving.key = other.serving.key.clone();
    let e = swapped.view(&hosts()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "\"tls.key\": the key does not belong to the certificate"
    );
    let mut garbage = m.clone();
    garbage.ca.cert = "hello".to_owned();
    assert!(matches!(
        garbage.view(&hosts()),
        Err(MaterialError::Certificate {
            key: "signing-ca.crt",
            ..
        })
    ));
    // A serving certificate from another CA does not fit.
    let mut foreign = m.clone();
    foreign.serving = other.serving.clone();
    assert!(!foreign.view(&hosts()).expect("valid").serving_fits);
}

#[test]
fn a_full_ca_rotation_keeps_every_served_certificate_trusted() {
    let (h, l) = (hosts(), lifetimes());
    let first = Material::create(&h, l, NOW).expect("created");

    let renewed = first
        .apply(Step::RenewServing, &h, l, NOW + 60)
        .expect("renewed");
    let v = renewed.view(&h).expect("valid");
    assert!(v.serving_fits);
    assert_eq!(v.serving.not_before, NOW + 60 - 9);
    assert_eq!(renewed.ca, first.ca);

    let announced = renewed
        .apply(Step::AnnounceCa, &h, l, NOW + 600)
        .expect("announced");
    assert_eq!(announced.serving, renewed.serving);
    let bundle = announced.bundle();
    assert!(bundle.starts_with(first.ca.cert.trim()));

    let promoted = announced
        .apply(Step::PromoteCa, &h, l, NOW + 630)
        .expect("promoted");
    let v = promoted.view(&h).expect("valid");
    assert!(v.serving_fits, "the new CA signed it");
    assert_eq!(Some(&promoted.ca), announced.next_ca.as_ref());
    assert_eq!(v.previous_until, Some(NOW + 60 + 90));
    // Both CAs stay trusted: the old one first signed what other replicas may still serve.
    assert_eq!(promoted.bundle().matches("BEGIN CERTIFICATE").count(), 2);
    assert!(promoted.bundle().contains(first.ca.cert.trim()));

    let retired = promoted
        .apply(Step::RetirePrevious, &h, l, NOW + 700)
        .expect("retired");
    assert_eq!(retired.bundle(), format!("{}\n", promoted.ca.cert.trim()));
    assert!(!retired.bundle().contains(first.ca.cert.trim()));
}

#[test]
fn a_serving_certificate_never_outlives_its_ca() {
    let (h, l) = (hosts(), lifetimes());
    let m = Material::create(&h, l, NOW).expect("created");
    let late = m
        .apply(Step::RenewServing, &h, l, NOW + 850)
        .expect("renewed");
    assert_eq!(late.view(&h).expect("valid").serving.not_after, NOW + 900);
}
