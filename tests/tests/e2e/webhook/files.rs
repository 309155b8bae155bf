//! `--check-files`: the webhook reads the files a configuration names by the
//! proxy's rules, beneath `--files-root` (or the `--file-root`s) only; a
//! path outside gets one answer whatever exists there (issue 30, finding 6).

use serde_json::Value;

use super::harness::{Pki, Webhook, fixture, fixture_json, review_with};

fn start(pki: &Pki, extra: &[&str]) -> Webhook {
    Webhook::start(&pki.cert, &pki.key, &pki.ca.pem, extra)
}

#[tokio::test]
async fn check_files_reads_the_files_a_configuration_names_beneath_its_roots() {
    let pki = Pki::new();
    // By default only paths are checked: the TLS files live in the proxy pods.
    let paths_only = start(&pki, &[]);
    let (_, answer) = paths_only.review(fixture("valid-create.json")).await;
    assert_eq!(answer["response"]["allowed"], true);
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("tls")).expect("tls dir");
    std::fs::write(dir.path().join("tls/tls.crt"), "not a certificate").expect("cert");
    let checked = start(
        &pki,
        &[
            "--check-files",
            "--files-root",
            dir.path().to_str().expect("utf-8 path"),
        ],
    );
    let yaml = fixture_json("valid-create.json")["request"]["object"]["data"]["proxy.yaml"]
        .as_str()
        .expect("proxy.yaml")
        .to_owned();
    let lines = |message: &Value| -> Vec<String> {
        let text = message["response"]["status"]["message"]
            .as_str()
            .expect("a message");
        text.lines().skip(1).map(str::to_owned).collect()
    };
    let with = |cert: &str, key: &str| {
        yaml.replace("/etc/sluice/tls/tls.crt", cert)
            .replace("/etc/sluice/tls/tls.key", key)
    };
    let error = |col: u32, field: &str, path: &str, what: &str| {
        format!(
            "proxy.yaml:11:{col}: virtualClusters[0].gateway.tls.{field}: cannot read \"{path}\": {what}"
        )
    };
    let outside = "outside the allowed file roots";
    // Outside the root, one answer whether the file exists or not, by an
    // absolute path or a `..` escape: nothing is learnt of the webhook's pod.
    for (cert, key) in [
        ("/etc/sluice/tls/tls.crt", "/etc/sluice/tls/tls.key"),
        ("/etc/passwd", "../../../../../../../../etc/hostname"),
    ] {
        let (_, answer) = checked
            .review(review_with(with(cert, key).as_bytes()))
            .await;
        let key_col = 24 + cert.len() as u32 + 11;
        assert_eq!(
            lines(&answer),
            [
                error(24, "certFile", cert, outside),
                error(key_col, "keyFile", key, outside)
            ]
        );
    }
    // Beneath it, files are read and their problems said.
    let (_, answer) = checked
        .review(review_with(with("tls/tls.crt", "tls/tls.key").as_bytes()))
        .await;
    assert_eq!(
        lines(&answer),
        [
            "proxy.yaml:11:24: virtualClusters[0].gateway.tls.certFile: \"tls/tls.crt\" contains no PEM certificate".to_owned(),
            error(46, "keyFile", "tls/tls.key", "no such file"),
        ]
    );
}
