//! The renewal and rotation schedule, on validity periods alone.

use super::*;

const SERVING: i64 = 90;
const CA: i64 = 900;

fn valid(from: i64, lifetime: i64) -> Validity {
    Validity {
        not_before: from,
        not_after: from + lifetime,
    }
}

/// A CA made at 0 and a serving certificate it signed at `served_from`.
fn fresh(served_from: i64) -> View {
    View {
        ca: valid(0, CA),
        serving: valid(served_from, SERVING),
        serving_fits: true,
        next_ca: None,
        previous_until: None,
    }
}

#[test]
fn renewal_is_due_at_two_thirds_of_the_lifetime() {
    assert_eq!(valid(0, 90).renew_at(), 60);
    assert_eq!(valid(100, 10).renew_at(), 106);
    assert_eq!(valid(0, 1).renew_at(), 0);
    // No overflow on absurd dates.
    assert_eq!(valid(0, i64::MAX).renew_at(), 6_148_914_691_236_517_204);
    assert_eq!(valid(10, 0).renew_at(), 10);
}

#[test]
fn nothing_usable_means_create() {
    assert_eq!(plan(None, 0, false), Some(Step::Create));
    let mut expired = fresh(0);
    expired.ca = valid(0, 10);
    assert_eq!(plan(Some(&expired), 10, true), Some(Step::Create));
}

#[test]
fn the_serving_certificate_renews_from_the_same_ca() {
    let v = fresh(0);
    assert_eq!(plan(Some(&v), 59, true), None);
    assert_eq!(plan(Some(&v), 60, true), Some(Step::RenewServing));
    assert_eq!(plan(Some(&v), 60, false), Some(Step::RenewServing));
    let mut wrong = fresh(0);
    wrong.serving_fits = false;
    assert_eq!(plan(Some(&wrong), 1, true), Some(Step::RenewServing));
}

#[test]
fn the_ca_rotates_with_an_overlap() {
    // The CA reaches two thirds of its life: a new one is announced.
    let v = fresh(570);
    assert_eq!(plan(Some(&v), 599, true), None);
    assert_eq!(plan(Some(&v), 600, true), Some(Step::AnnounceCa));

    // Announced: nothing more until the serving certificate is due...
    let announced = View {
        next_ca: Some(valid(600, CA)),
        ..v.clone()
    };
    assert_eq!(plan(Some(&announced), 601, true), None);
    // ...and then the new CA signs only if the bundle is out.
    assert_eq!(plan(Some(&announced), 630, false), Some(Step::RenewServing));
    assert_eq!(plan(Some(&announced), 630, true), Some(Step::PromoteCa));

    // Promoted: the old CA stays until the last certificate it signed expires.
    let promoted = View {
        ca: valid(600, CA),
        serving: valid(630, SERVING),
        serving_fits: true,
        next_ca: None,
        previous_until: Some(660),
    };
    assert_eq!(plan(Some(&promoted), 659, true), None);
    assert_eq!(plan(Some(&promoted), 660, true), Some(Step::RetirePrevious));

    // While an old CA is still trusted, no new one is announced.
    let mut late = promoted.clone();
    late.ca = valid(0, 900);
    late.previous_until = Some(10_000);
    assert_eq!(plan(Some(&late), 700, true), Some(Step::RenewServing));
    late.serving = valid(700, SERVING);
    assert_eq!(plan(Some(&late), 701, true), None);
}

#[test]
fn the_next_check_is_the_next_due_step_within_bounds() {
    let resync = Duration::from_secs(300);
    let v = fresh(0);
    assert_eq!(next_check(&v, 10, resync), Duration::from_secs(50));
    assert_eq!(next_check(&v, 60, resync), Duration::from_secs(1));
    assert_eq!(next_check(&v, 1_000, resync), Duration::from_secs(1));
    let far = View {
        serving: valid(0, 100_000),
        ca: valid(0, 1_000_000),
        ..v.clone()
    };
    assert_eq!(next_check(&far, 0, resync), resync);
    // The CA's announcement comes before the serving renewal here.
    let late_ca = View {
        ca: valid(0, 90),
        serving: valid(50, SERVING),
        ..v.clone()
    };
    assert_eq!(next_check(&late_ca, 55, resync), Duration::from_secs(5));
    // The previous CA's retirement counts, the CA's announcement waits.
    let retiring = View {
        previous_until: Some(20),
        ca: valid(0, 15),
        ..v
    };
    assert_eq!(next_check(&retiring, 5, resync), Duration::from_secs(15));
}

#[test]
fn the_bundle_lists_each_ca_once_signing_first() {
    assert_eq!(bundle("A\n", None, None), "A\n");
    assert_eq!(bundle("A", Some("B"), Some("C")), "A\nB\nC\n");
    assert_eq!(bundle("A", Some("A\n"), Some("")), "A\n");
}
