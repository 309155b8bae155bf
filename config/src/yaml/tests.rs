//! The YAML tree: positions, nulls, and every bound hostile input hits.
use super::*;

fn root(text: &str) -> Node {
    parse(text).expect("valid yaml").expect("a document")
}

#[test]
fn marks_are_one_based_and_maps_point_at_their_first_key() {
    let node = root("a: 1\nb:\n  c: \"x\"\n");
    let Value::Map(entries) = node.value else {
        panic!("not a map")
    };
    assert_eq!(entries[0].key_mark, Mark { line: 1, column: 1 });
    assert_eq!(entries[0].value.mark, Mark { line: 1, column: 4 });
    assert_eq!(entries[1].value.mark, Mark { line: 3, column: 3 });
    let Value::Map(inner) = &entries[1].value.value else {
        panic!("not a map")
    };
    assert_eq!(
        inner[0].value.value,
        Value::Scalar {
            text: "x".into(),
            plain: false
        }
    );
}

#[test]
fn nulls_and_strings_are_told_apart() {
    let node = root("a: ~\nb: \"null\"\nc:\n");
    let Value::Map(entries) = node.value else {
        panic!("not a map")
    };
    assert_eq!(entries[0].value.value, Value::Null);
    assert!(matches!(entries[1].value.value, Value::Scalar { .. }));
    assert_eq!(entries[2].value.value, Value::Null);
}

#[test]
fn empty_documents_are_none() {
    assert_eq!(parse("").unwrap(), None);
    assert_eq!(parse("# nothing\n\n").unwrap(), None);
}

#[test]
fn duplicate_keys_are_rejected_with_both_lines() {
    let err = parse("a: 1\nb: 2\na: 3\n").unwrap_err();
    assert_eq!(err.message, "duplicate key \"a\" (first defined at line 1)");
    assert_eq!(err.mark, Mark { line: 3, column: 1 });
}

#[test]
fn second_documents_are_rejected() {
    let err = parse("a: 1\n---\nb: 2\n").unwrap_err();
    assert_eq!(
        err.message,
        "expected one YAML document, found more than one"
    );
}

#[test]
fn aliases_expand_but_bombs_stop() {
    let node = root("a: &x [1, 2]\nb: *x\n");
    let Value::Map(entries) = node.value else {
        panic!("not a map")
    };
    assert_eq!(entries[0].value.value, entries[1].value.value);

    let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..12 {
        let p = i - 1;
        bomb.push_str(&format!(
            "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
        ));
    }
    let err = parse(&bomb).unwrap_err();
    assert!(err.message.contains("once aliases are expanded"), "{err}");
}

#[test]
fn deep_nesting_stops_at_the_bound() {
    let deep = "[".repeat(100);
    let err = parse(&deep).unwrap_err();
    assert_eq!(err.message, "values are nested deeper than 32 levels");
    // Far deeper input is refused by the scanner's own limit first.
    assert!(parse(&"[".repeat(1_000_000)).is_err());

    let mut chain = String::from("a0: &a0 [[[[[[[[[[1]]]]]]]]]]\n");
    for i in 1..10 {
        chain.push_str(&format!("a{i}: &a{i} [[[[[[[[[[*a{}]]]]]]]]]]\n", i - 1));
    }
    let err = parse(&chain).unwrap_err();
    assert_eq!(err.message, "values are nested deeper than 32 levels");
}

#[test]
fn syntax_errors_carry_their_position() {
    let err = parse("a: 1\n b: 2\n").unwrap_err();
    assert_eq!(err.mark, Mark { line: 2, column: 3 });
    assert_eq!(
        err.message,
        "mapping values are not allowed in this context"
    );
}

#[test]
fn an_unclosed_flow_sequence_is_reported_where_it_opened_and_where_it_broke() {
    let text = "virtualClusters:\n  - name: a\n    upstream:\n      bootstrapServers: [127.0.0.1:9092\n    gateway: {}\n";
    let e = parse(text).expect_err("unclosed [");
    assert_eq!(
        e.mark,
        Mark {
            line: 4,
            column: 25
        }
    );
    assert!(
        e.message
            .ends_with("(while parsing a flow sequence started at 4:25)"),
        "{}",
        e.message
    );
    assert!(e.message.contains(" at 5:"), "{}", e.message);
}

#[test]
fn an_unclosed_flow_mapping_names_its_start_and_block_errors_keep_their_place() {
    let e = parse("a: {b: 1\n").expect_err("unclosed {");
    assert_eq!(e.mark, Mark { line: 1, column: 4 });
    assert!(
        e.message.contains("flow mapping started at 1:4"),
        "{}",
        e.message
    );
    let e = parse("a: 1\n\tb: 2\n").expect_err("tab");
    assert!(!e.message.contains("while parsing"), "{}", e.message);
}
