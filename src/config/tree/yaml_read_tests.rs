//! Unit tests of the YAML reader: scalar typing, quoting, errors, aliases, merge keys, bounds.
use super::node::Node;
use super::yaml_read::*;

#[test]
fn plain_scalars_follow_yaml11_and_omegaconf_floats() {
    assert_eq!(resolve_plain_scalar("yes"), Node::Bool(true));
    assert_eq!(resolve_plain_scalar("Off"), Node::Bool(false));
    assert_eq!(resolve_plain_scalar("1_000"), Node::Int(1000));
    assert_eq!(resolve_plain_scalar("0x1f"), Node::Int(31));
    assert_eq!(resolve_plain_scalar("1e3"), Node::Float(1000.0));
    assert_eq!(resolve_plain_scalar("-2.5"), Node::Float(-2.5));
    assert_eq!(resolve_plain_scalar("1."), Node::Float(1.0));
    assert_eq!(resolve_plain_scalar(".5"), Node::Float(0.5));
    assert_eq!(
        resolve_plain_scalar("-.inf"),
        Node::Float(f64::NEG_INFINITY)
    );
    assert_eq!(resolve_plain_scalar("1.2.3"), Node::Str("1.2.3".into()));
    assert_eq!(resolve_plain_scalar("cuda:0"), Node::Str("cuda:0".into()));
    assert_eq!(resolve_plain_scalar("???"), Node::Missing);
    assert_eq!(resolve_plain_scalar("~"), Node::Null);
}

#[test]
fn quoted_scalars_stay_strings_and_order_is_kept() {
    let n = parse("b: 'yes'\na: \"1\"\nc: [1, x]\n").unwrap();
    let m = n.as_map().unwrap();
    assert_eq!(m.keys().collect::<Vec<_>>(), ["b", "a", "c"]);
    assert_eq!(m["b"], Node::Str("yes".into()));
    assert_eq!(m["a"], Node::Str("1".into()));
    assert_eq!(
        m["c"],
        Node::List(vec![Node::Int(1), Node::Str("x".into())])
    );
}

#[test]
fn syntax_errors_carry_the_line() {
    let err = parse("name: broken\nlayers: [1, 2\n").unwrap_err();
    assert!(err.line >= 2, "{err}");
}

#[test]
fn duplicate_keys_are_rejected() {
    let err = parse("a: 1\na: 2\n").unwrap_err();
    assert!(err.message.contains("duplicate key 'a'"), "{err}");
}

#[test]
fn anchors_and_aliases_copy_values() {
    let n = parse("a: &x {k: 1}\nb: *x\n").unwrap();
    assert_eq!(n.get_path("b.k"), Some(&Node::Int(1)));
}

#[test]
fn package_header_reads_leading_comments_only() {
    assert_eq!(
        package_header("# @package _global_\na: 1\n").unwrap(),
        Some("_global_".into())
    );
    assert_eq!(package_header("a: 1\n# @package x\n").unwrap(), None);
    assert_eq!(package_header("# plain\n# @package x\n").unwrap(), None);
    assert!(package_header("# @package\n").is_err());
}

#[test]
fn merge_keys_follow_pyyaml() {
    let n =
        parse("b: &b {x: 1, y: 2}\nd:\n  <<: *b\n  y: 3\nm:\n  <<: [{z: 5, x: 0}, *b]\n").unwrap();
    assert_eq!(n.get_path("d"), Some(&parse("{x: 1, y: 3}").unwrap()));
    // The first mapping of a merge list wins; own keys win over merged ones.
    assert_eq!(n.get_path("m"), Some(&parse("{x: 0, y: 2, z: 5}").unwrap()));
    assert_eq!(
        parse("'<<': 1").unwrap(),
        parse("'<<': 1").unwrap(),
        "a quoted << is a plain key"
    );
    assert!(parse("a:\n  <<: 5\n").is_err());
}

#[test]
fn the_string_missing_value_is_missing_however_quoted() {
    let n = parse("a: '???'\nb: \"???\"\nc: ???\n").unwrap();
    for k in ["a", "b", "c"] {
        assert_eq!(n.get_path(k), Some(&Node::Missing), "{k}");
    }
}

#[test]
fn one_document_only_and_bounded_size() {
    let err = parse("a: 1\n---\nb: 2\n").unwrap_err();
    assert!(err.message.contains("single document"), "{err}");
    let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
    assert!(parse(&format!("a: {deep}")).is_ok());
    let deeper: String = (0..300).map(|i| format!("{}k:\n", " ".repeat(i))).collect();
    assert!(parse(&deeper)
        .unwrap_err()
        .message
        .contains("nested more than"));
    let mut bomb = "l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n".to_string();
    for i in 1..8 {
        let items = vec![format!("*l{}", i - 1); 10].join(", ");
        bomb.push_str(&format!("l{i}: &l{i} [{items}]\n"));
    }
    assert!(parse(&bomb)
        .unwrap_err()
        .message
        .contains("expands to more than"));
}

#[test]
fn core_tags_base_60_and_keys_follow_pyyaml_and_omegaconf() {
    let n = parse("i: !!int \"5\"\nf: !!float '1'\nb: !!bool \"yes\"\nz: !!null ''\ns: !!str 5\nt: 1:30\nu: 1:30.5\ntrue: k\n").unwrap();
    assert_eq!(n.get_path("i"), Some(&Node::Int(5)));
    assert_eq!(n.get_path("f"), Some(&Node::Float(1.0)));
    assert_eq!(n.get_path("b"), Some(&Node::Bool(true)));
    assert_eq!(n.get_path("z"), Some(&Node::Null));
    assert_eq!(n.get_path("s"), Some(&Node::Str("5".into())));
    assert_eq!(n.get_path("t"), Some(&Node::Int(90)));
    assert_eq!(n.get_path("u"), Some(&Node::Float(90.5)));
    assert_eq!(n.get_path("true"), Some(&Node::Str("k".into())));
    for bad in ["a: !!int x\n", "a: <<\n", "a: =\n", "null: x\n"] {
        assert!(parse(bad).is_err(), "{bad}");
    }
}
