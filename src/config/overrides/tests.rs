//! Unit tests of the override parser: scalar typing, quoting, containers, keys, sweeps, errors
//! and the Display round trip.
use super::parser::parse_override;
use super::types::{Element, OverrideKind, Sweep, Value};

fn el(s: &str) -> Element {
    match parse_override(&format!("x={s}")).unwrap().value.unwrap() {
        Value::Element(e) => e,
        Value::Sweep(s) => panic!("sweep {s:?}"),
    }
}

fn string(s: &str) -> Element {
    Element::Str {
        text: s.into(),
        quote: None,
    }
}

#[test]
fn scalar_types_follow_the_lexer() {
    assert_eq!(el("42"), Element::Int(42));
    assert_eq!(el("-7"), Element::Int(-7));
    assert_eq!(el("1_000"), Element::Int(1000));
    assert_eq!(el("0.25"), Element::Float(0.25));
    assert_eq!(el("1e3"), Element::Float(1000.0));
    assert_eq!(el("-inf"), Element::Float(f64::NEG_INFINITY));
    assert!(matches!(el("nan"), Element::Float(f) if f.is_nan()));
    assert_eq!(el("True"), Element::Bool(true));
    assert_eq!(el("NULL"), Element::Null);
    assert_eq!(el("info"), string("info"));
    assert_eq!(el("cuda:1"), string("cuda:1"));
    assert_eq!(el("1.2.3"), string("1.2.3"));
    assert_eq!(el("/scratch/runs"), string("/scratch/runs"));
    assert_eq!(el("a b "), string("a b"));
    assert_eq!(el("${a.b}"), string("${a.b}"));
    assert_eq!(el("x_${a}"), string("x_${a}"));
}

#[test]
fn quoted_strings_and_escapes() {
    assert_eq!(
        el("'hello world'"),
        Element::Str {
            text: "hello world".into(),
            quote: Some('\'')
        }
    );
    assert_eq!(el(r#""a\"b""#).as_plain_str(), Some("a\"b"));
    assert_eq!(el(r#"'abc\\'"#).as_plain_str(), Some("abc\\"));
    assert_eq!(el(r"a\,b\ c"), string("a,b c"));
    assert_eq!(el("'42'").as_plain_str(), Some("42"));
}

#[test]
fn containers() {
    assert_eq!(
        el("[a, 'b c', 3.5, null]"),
        Element::List(vec![
            string("a"),
            Element::Str {
                text: "b c".into(),
                quote: Some('\'')
            },
            Element::Float(3.5),
            Element::Null
        ])
    );
    assert_eq!(
        el("{a:1,b:[x,y]}"),
        Element::Dict(vec![
            ("a".into(), Element::Int(1)),
            ("b".into(), Element::List(vec![string("x"), string("y")]))
        ])
    );
    assert_eq!(el("[]"), Element::List(vec![]));
}

#[test]
fn prefixes_keys_and_packages() {
    let o = parse_override("++infer.top_p=0.95").unwrap();
    assert_eq!(o.kind, OverrideKind::ForceAdd);
    assert_eq!(o.key_or_group, "infer.top_p");
    let o = parse_override("~profiling@pipeline.ncu").unwrap();
    assert_eq!(o.kind, OverrideKind::Delete);
    assert_eq!(o.package.as_deref(), Some("pipeline.ncu"));
    assert_eq!(o.value, None);
    let o = parse_override("hydra/launcher=basic").unwrap();
    assert!(o.is_hydra_override());
    let o = parse_override("x=").unwrap();
    assert_eq!(o.element(), Some(&string("")));
    assert_eq!(
        parse_override("runtime.batch_sizes.1=16")
            .unwrap()
            .key_or_group,
        "runtime.batch_sizes.1"
    );
}

#[test]
fn sweeps() {
    let o = parse_override("a=1,2,3").unwrap();
    assert_eq!(
        o.value,
        Some(Value::Sweep(Sweep::Choice {
            items: vec![Element::Int(1), Element::Int(2), Element::Int(3)],
            simple: true
        }))
    );
    let o = parse_override("a=range(1,7,2)").unwrap();
    assert_eq!(
        o.value,
        Some(Value::Sweep(Sweep::Range {
            items: vec![Element::Int(1), Element::Int(3), Element::Int(5)]
        }))
    );
    let o = parse_override("m=glob(*,exclude=tiny*)").unwrap();
    assert_eq!(
        o.value,
        Some(Value::Sweep(Sweep::Glob {
            include: vec!["*".into()],
            exclude: vec!["tiny*".into()]
        }))
    );
    let o = parse_override("a=choice([1,2],[3])").unwrap();
    assert!(matches!(
        o.value,
        Some(Value::Sweep(Sweep::Choice { simple: false, .. }))
    ));
    assert_eq!(
        parse_override("a=int(3.7)").unwrap().element(),
        Some(&Element::Int(3))
    );
}

#[test]
fn malformed_overrides_are_errors() {
    assert!(parse_override("novalue").is_err());
    assert!(parse_override("=3").is_err());
    assert!(parse_override("a=[1,2").is_err());
    assert!(parse_override("a=b=c").is_err());
    assert!(parse_override("a b=1").is_err());
    assert!(parse_override("a=nofunc(1)").is_err());
}

#[test]
fn elements_round_trip_through_display() {
    for s in [
        "[a,'b c',3.5,null]",
        "{a:1,b:[x,y]}",
        "1000.0",
        "'x,y'",
        r"a\,b",
    ] {
        let e = el(s);
        assert_eq!(el(&e.to_string()), e, "{s}");
    }
}
