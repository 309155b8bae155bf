//! `diff`: which clusters a reload adds, removes, modifies (and why) or
//! leaves alone — including changes that only show in a referenced file.

use sluice_config::{Changes, MemoryFiles, ProxyConfig, diff, validate};

fn parse(text: &str, files: &MemoryFiles) -> ProxyConfig {
    let valid = validate(text.as_bytes(), files).unwrap_or_else(|e| panic!("{e:?}"));
    (*valid.config).clone()
}

fn cluster(name: &str, port: u16, extra: &str) -> String {
    format!(
        "  - name: {name}\n    upstream: {{ bootstrapServers: [kafka:9092] }}\n    gateway:\n      advertisedHost: proxy.local\n      bootstrapPort: {port}\n      brokerPorts: {{ start: {}, count: 3 }}\n{extra}",
        port + 1
    )
}

fn doc(header: &str, clusters: &[String]) -> String {
    format!("{header}virtualClusters:\n{}", clusters.concat())
}

#[test]
fn classifies_every_cluster_with_reasons_in_a_fixed_order() {
    let files = MemoryFiles::default();
    let old = parse(
        &doc(
            "",
            &[
                cluster("keep", 19000, ""),
                cluster("change", 19100, ""),
                cluster("gone", 19200, ""),
            ],
        ),
        &files,
    );
    let changed = cluster("change", 19150, "    limits: { maxConnections: 5 }\n    filters: [{ type: deny-apis, config: { apis: [DeleteTopics] } }]\n")
        .replace("kafka:9092", "kafka:9093")
        .replace("proxy.local", "proxy.example");
    let new = parse(
        &doc(
            "drainTimeout: 5s\nstartupPolicy: best-effort\n",
            &[
                cluster("new", 19300, ""),
                changed,
                cluster("keep", 19000, ""),
            ],
        ),
        &files,
    );
    let d = diff(&old, &new);
    assert_eq!(d.added, ["new"]);
    assert_eq!(d.removed, ["gone"]);
    assert_eq!(d.unchanged, ["keep"]);
    assert_eq!(d.modified.len(), 1);
    assert_eq!(d.modified[0].name, "change");
    assert_eq!(
        d.modified[0].reasons,
        [
            "upstream.bootstrapServers changed",
            "gateway.advertisedHost changed from proxy.local to proxy.example",
            "gateway.bootstrapPort changed from 19100 to 19150",
            "gateway.brokerPorts changed from 19101-19103 to 19151-19153",
            "limits.maxConnections changed from 10000 to 5",
            "filters changed",
        ]
    );
    assert_eq!(
        d.global,
        [
            "drainTimeout changed from 30s to 5s",
            "startupPolicy changed from fail-fast to best-effort"
        ]
    );
    assert!(!d.is_empty());
}

#[test]
fn whitespace_and_comments_change_the_version_but_nothing_else() {
    let files = MemoryFiles::default();
    let a = doc("", &[cluster("a", 19000, "")]);
    let b = format!("# a comment\n{a}\n\n");
    let (va, vb) = (
        validate(a.as_bytes(), &files).unwrap(),
        validate(b.as_bytes(), &files).unwrap(),
    );
    assert_ne!(va.version, vb.version);
    assert!(va.version.as_str().starts_with("sha256:"));
    assert_eq!(va.version.as_str().len(), 7 + 64);
    let d = diff(&va.config, &vb.config);
    assert!(d.is_empty());
    assert_eq!(
        d,
        Changes {
            unchanged: vec!["a".into()],
            ..Changes::default()
        }
    );
}

fn self_signed(name: &str) -> (String, String) {
    let leaf = sluice_testkit::certs::self_signed(&[name], None);
    (leaf.cert, leaf.key)
}

#[test]
fn a_rotated_certificate_is_a_rotation_and_anything_more_a_modification() {
    let (cert1, key1) = self_signed("proxy.local");
    let (cert2, key2) = self_signed("proxy.local");
    let tls = "      tls: { certFile: /tls/tls.crt, keyFile: /tls/tls.key }\n";
    let text = doc(
        "",
        &[
            format!("{}{tls}", cluster("secure", 19000, "")),
            cluster("plain", 19100, ""),
        ],
    );
    let before = MemoryFiles::default()
        .with("/tls/tls.crt", cert1)
        .with("/tls/tls.key", key1);
    let after = MemoryFiles::default()
        .with("/tls/tls.crt", cert2)
        .with("/tls/tls.key", key2);
    let d = diff(&parse(&text, &before), &parse(&text, &after));
    assert_eq!(d.unchanged, ["plain"]);
    assert!(d.modified.is_empty());
    assert_eq!(d.rotated.len(), 1);
    assert_eq!(d.rotated[0].name, "secure");
    assert_eq!(
        d.rotated[0].reasons,
        [
            "gateway.tls.certFile content changed",
            "gateway.tls.keyFile content changed"
        ]
    );
    assert!(!d.is_empty());
    // New paths to the same kind of file: still a rotation.
    let moved = text.replace("/tls/tls.", "/tls2/tls.");
    let (cert3, key3) = self_signed("proxy.local");
    let at_new_paths = MemoryFiles::default()
        .with("/tls2/tls.crt", cert3)
        .with("/tls2/tls.key", key3);
    let d = diff(&parse(&text, &before), &parse(&moved, &at_new_paths));
    assert_eq!(d.rotated.len(), 1);
    assert_eq!(d.rotated[0].reasons[0], "gateway.tls.certFile changed");
    // The material and anything else: a modification, both reasons named.
    let more = text.replace("19000", "19500");
    let d = diff(&parse(&text, &before), &parse(&more, &after));
    assert!(d.rotated.is_empty());
    assert_eq!(d.modified[0].name, "secure");
    assert!(
        d.modified[0].reasons.len() > 2,
        "{:?}",
        d.modified[0].reasons
    );
}

#[test]
fn tls_sections_added_and_removed_are_named() {
    let (cert, key) = self_signed("kafka");
    let files = MemoryFiles::default()
        .with("/c.pem", cert)
        .with("/k.pem", key);
    let plain = doc("", &[cluster("a", 19000, "")]);
    let with_tls = plain.replace(
        "bootstrapServers: [kafka:9092] }",
        "bootstrapServers: [kafka:9092], tls: { caFile: /c.pem, certFile: /c.pem, keyFile: /k.pem } }",
    );
    let (p, t) = (parse(&plain, &files), parse(&with_tls, &files));
    assert_eq!(diff(&p, &t).modified[0].reasons, ["upstream.tls added"]);
    assert_eq!(diff(&t, &p).modified[0].reasons, ["upstream.tls removed"]);
}

#[test]
fn upstream_check_settings_change_no_cluster() {
    // checkTimeout and checkOnReload only steer the next reload's check: a
    // change to them must not drain anyone's connections.
    let files = MemoryFiles::default();
    let old = parse(&doc("", &[cluster("a", 19000, "")]), &files);
    let new = parse(
        &doc("", &[cluster("a", 19000, "")]).replace(
            "bootstrapServers: [kafka:9092] }",
            "bootstrapServers: [kafka:9092], checkTimeout: 3s, checkOnReload: false }",
        ),
        &files,
    );
    assert!(!new.virtual_clusters[0].upstream.check_on_reload);
    let d = diff(&old, &new);
    assert_eq!(d.unchanged, ["a"]);
    assert!(d.is_empty(), "{d:?}");
}

#[test]
fn a_change_of_limits_alone_applies_in_place() {
    let files = MemoryFiles::default();
    let old = parse(&doc("", &[cluster("a", 19000, "")]), &files);
    let limits = "    limits: { maxConnections: 5, maxFrameBytes: 4096, frameTimeout: 5s }\n";
    let new = parse(&doc("", &[cluster("a", 19000, limits)]), &files);
    let d = diff(&old, &new);
    assert!(d.modified.is_empty(), "{d:?}");
    assert_eq!(d.rotated.len(), 1);
    assert_eq!(
        d.rotated[0].reasons,
        [
            "limits.maxConnections changed from 10000 to 5",
            "limits.maxFrameBytes changed from 104857600 to 4096",
            "limits.frameTimeout changed from 30s to 5s",
        ]
    );
}

#[test]
fn a_change_of_filters_alone_applies_in_place() {
    let files = MemoryFiles::default();
    let old = parse(&doc("", &[cluster("a", 19000, "")]), &files);
    let deny = "    filters: [{ type: deny-apis, config: { apis: [DeleteTopics] } }]\n";
    let new = parse(&doc("", &[cluster("a", 19000, deny)]), &files);
    let d = diff(&old, &new);
    assert!(d.modified.is_empty(), "{d:?}");
    assert_eq!(d.rotated.len(), 1);
    assert_eq!(d.rotated[0].reasons, ["filters changed"]);
}

#[test]
fn a_change_of_authentication_alone_applies_in_place() {
    let ca = sluice_testkit::certs::Ca::new("diff CA");
    let server = ca.server("proxy", 1);
    let files = MemoryFiles::default()
        .with("/tls/tls.crt", server.cert.as_bytes())
        .with("/tls/tls.key", server.key.as_bytes())
        .with("/tls/ca.crt", ca.pem.as_bytes());
    let tls =
        "      tls: { certFile: /tls/tls.crt, keyFile: /tls/tls.key, clientCaFile: /tls/ca.crt }\n";
    let with = |auth: &str| doc("", &[format!("{}{tls}{auth}", cluster("a", 19000, ""))]);
    let old = parse(&with(""), &files);
    let rules = "    authentication:\n      mtls: { principals: [{ from: subject, match: \"CN=(.*)\", principal: \"$1\" }] }\n";
    let new = parse(&with(rules), &files);
    let required = parse(&with(&format!("{rules}      required: true\n")), &files);
    for (from, to) in [(&old, &new), (&new, &required), (&required, &old)] {
        let d = diff(from, to);
        assert!(d.modified.is_empty(), "{d:?}");
        assert_eq!(d.rotated.len(), 1);
        assert_eq!(d.rotated[0].reasons, ["authentication changed"]);
    }
}

#[test]
fn a_new_tenancy_prefix_is_a_new_generation_of_that_cluster_only() {
    let files = MemoryFiles::default();
    let with = |a: &str, b: &str| {
        let (a, b) = (format!("    tenancy: {a}\n"), format!("    tenancy: {b}\n"));
        doc("", &[cluster("a", 19000, &a), cluster("b", 19100, &b)])
    };
    let old = parse(&with("{}", "{ prefix: team-b. }"), &files);
    let new = parse(&with("{ prefix: team-a2. }", "{ prefix: team-b. }"), &files);
    let d = diff(&old, &new);
    assert!(d.rotated.is_empty(), "{d:?}");
    assert_eq!(d.modified.len(), 1, "{d:?}");
    assert_eq!(d.modified[0].name, "a");
    assert_eq!(
        d.modified[0].reasons,
        ["tenancy.prefix changed from \"a.\" to \"team-a2.\""]
    );
    assert_eq!(d.unchanged.len(), 1, "{d:?}");
    let none = parse(
        &doc(
            "",
            &[
                cluster("a", 19000, ""),
                cluster("b", 19100, "    tenancy: { prefix: team-b. }\n"),
            ],
        ),
        &files,
    );
    let d = diff(&none, &old);
    assert_eq!(
        d.modified[0].reasons,
        ["tenancy.prefix changed from (none) to \"a.\""]
    );
}
