//! Loading pairs and rotating them, on files in a temporary directory.

use std::path::Path;
use std::sync::Arc;

use sluice_testkit::certs::self_signed;

use super::*;
use crate::metrics::Metrics;

/// A self-signed pair with this serial: (certificate PEM, key PEM).
fn pair(serial: u64) -> (String, String) {
    let leaf = self_signed(&["localhost"], Some(serial));
    (leaf.cert, leaf.key)
}

fn write(dir: &Path, (cert, key): (&str, &str)) {
    std::fs::write(dir.join("tls.crt"), cert).expect("cert");
    std::fs::write(dir.join("tls.key"), key).expect("key");
}

#[test]
fn a_pair_loads_with_its_serial_and_expiry() {
    let (cert, key) = pair(0x2a);
    let loaded = parse(
        Path::new("c"),
        cert.as_bytes(),
        Path::new("k"),
        key.as_bytes(),
    )
    .expect("a valid pair");
    assert_eq!(loaded.serial, "2a");
    // rcgen's default validity ends in 4096.
    assert!(loaded.not_after > 4_000_000_000, "{}", loaded.not_after);
}

#[test]
fn broken_pairs_say_what_is_wrong() {
    let (cert, key) = pair(1);
    let (_, other_key) = pair(2);
    let p = |c: &str, k: &str| {
        parse(
            Path::new("tls.crt"),
            c.as_bytes(),
            Path::new("tls.key"),
            k.as_bytes(),
        )
    };
    let e = p(&cert, &other_key).expect_err("mismatch");
    assert!(matches!(e, CertError::Mismatch { .. }), "{e}");
    assert_eq!(
        e.to_string(),
        "tls.crt and tls.key do not belong together: the private key does not match the \
         certificate's public key"
    );
    let e = p("hello", &key).expect_err("no certificate");
    assert_eq!(
        e.to_string(),
        "tls.crt: no PEM certificate: the file has no CERTIFICATE section"
    );
    let e = p(&cert, "").expect_err("no key");
    assert!(matches!(e, CertError::NoKey { .. }), "{e}");
    let e = p(&cert, &cert).expect_err("a certificate is not a key");
    assert!(matches!(e, CertError::NoKey { .. }), "{e}");
}

#[test]
fn the_rotator_swaps_only_valid_new_pairs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (one, two, three) = (pair(1), pair(2), pair(3));
    write(dir.path(), (&one.0, &one.1));
    let metrics = Arc::new(Metrics::new());
    let mut rotator = Rotator::load(
        dir.path().join("tls.crt"),
        dir.path().join("tls.key"),
        Arc::clone(&metrics),
    )
    .expect("first pair");
    let resolver = rotator.resolver();
    let served = |r: &CertResolver| r.current().cert[0].clone();
    let first = served(&resolver);

    assert!(matches!(rotator.reload(), Rotation::Unchanged));

    // The certificate renewed before the key: rejected, the old pair stays.
    write(dir.path(), (&two.0, &one.1));
    assert!(matches!(
        rotator.reload(),
        Rotation::Rejected {
            error: CertError::Mismatch { .. }
        }
    ));
    assert_eq!(served(&resolver), first);
    // The same broken files again are not reported twice.
    assert!(matches!(rotator.reload(), Rotation::Unchanged));

    write(dir.path(), (&two.0, &two.1));
    assert!(matches!(rotator.reload(), Rotation::Applied { ref serial, .. } if serial == "02"));
    assert_ne!(served(&resolver), first);

    std::fs::remove_file(dir.path().join("tls.key")).expect("remove");
    assert!(matches!(
        rotator.reload(),
        Rotation::Rejected {
            error: CertError::Read { .. }
        }
    ));
    write(dir.path(), (&three.0, &three.1));
    assert!(matches!(rotator.reload(), Rotation::Applied { .. }));

    let text = metrics.encode();
    assert!(
        text.contains("sluice_webhook_certificate_reloads_total{result=\"applied\"} 2"),
        "{text}"
    );
    assert!(
        text.contains("sluice_webhook_certificate_reloads_total{result=\"rejected\"} 2"),
        "{text}"
    );
}
