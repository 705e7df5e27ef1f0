//! Fuzz target: the interpolation resolver (llmprof_config::interpolate) over random trees whose
//! strings are random and grammar-shaped interpolations: references (absolute, relative, through
//! other interpolations), nesting, escapes, the resolvers oc.env, oc.select, oc.decode, now and
//! hydra. Every tree resolves or fails cleanly: no panic, no hang, bounded memory.
//! Regressions at the end (docs/fuzzing.md).
use crate::front_end::fuzz_gen::{deep, ident, interpolation, noisy, repeated};
use crate::front_end::fuzz_support::{fuzz, replay};
use llmprof_config::interpolate::{is_interpolation, resolve_tree, ResolveContext};
use llmprof_config::{Map, Node};
use proptest::prelude::*;

fn value() -> impl Strategy<Value = Node> {
    let leaf = prop_oneof![
        6 => interpolation().prop_map(Node::Str),
        2 => noisy(12).prop_map(Node::Str),
        1 => deep(&["${", "${oc.select:a,", "${oc.decode:'"], &["}", "}", "'}"]).prop_map(Node::Str),
        1 => repeated(&["${", "\\${", "${a}", "${oc.select:", "'", "[", "{", ":", ",", "}", "\\"])
            .prop_map(Node::Str),
        1 => any::<i64>().prop_map(Node::Int),
        1 => Just(Node::Missing),
        1 => Just(Node::Null),
    ];
    leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Node::List),
            prop::collection::vec((ident(), inner), 0..4)
                .prop_map(|kv| Node::Map(kv.into_iter().collect::<Map>())),
        ]
    })
}

fn tree() -> impl Strategy<Value = Node> {
    prop::collection::vec((ident(), value()), 1..8)
        .prop_map(|kv| Node::Map(kv.into_iter().collect()))
}

fn env(k: &str) -> Option<String> {
    (k == "LLMPROF_FUZZ_SET").then(|| "${a}".to_string())
}

fn check(root: &Node) -> Result<(), String> {
    let hydra = llmprof_config::hydra_defaults(false);
    let ctx = ResolveContext {
        hydra: Some(&hydra),
        now: chrono::Local::now(),
        env: &env,
    };
    if let Ok(n) = resolve_tree(root, &ctx) {
        let _ = (n.to_json(true), n.to_yaml());
    }
    if let Some(m) = root.as_map() {
        for v in m.values() {
            if let Node::Str(s) = v {
                let _ = is_interpolation(s);
            }
        }
    }
    Ok(())
}

#[test]
fn fuzz_interpolation_resolver() {
    fuzz("interpolation", tree(), check);
}

fn resolve(text: &str) -> Result<Node, String> {
    let root = llmprof_config::yaml::parse(text).map_err(|e| e.to_string())?;
    let ctx = ResolveContext {
        hydra: None,
        now: chrono::Local::now(),
        env: &env,
    };
    resolve_tree(&root, &ctx).map_err(|e| e.to_string())
}

#[test]
fn regression_container_cycles_and_parent_references_are_errors() {
    assert!(resolve("a: {c: '${b}'}\nb: {c: '${a}'}\n")
        .unwrap_err()
        .contains("Cyclic"));
    assert!(resolve("a: {c: '${a}'}\n")
        .unwrap_err()
        .contains("parent node"));
    assert!(resolve("a: [1, '${a}']\n")
        .unwrap_err()
        .contains("parent node"));
}

#[test]
fn regression_exponential_interpolations_are_bounded() {
    let mut s = "x0: [1, 2]\n".to_string();
    for i in 1..60 {
        s.push_str(&format!("x{i}: ['${{x{0}}}', '${{x{0}}}']\n", i - 1));
    }
    assert!(resolve(&s).unwrap_err().contains("more than"));
}

#[test]
fn regression_nested_interpolations_parse_in_linear_time() {
    // Found by fuzz_interpolation_resolver: `${${${…}}}` 130 deep hung (the grammar tried a
    // resolver name, then a key, parsing every nested `${` twice: 2^depth).
    let deep = format!("a: '{}1{}'\n", "${".repeat(200), "}".repeat(200));
    let started = std::time::Instant::now();
    assert!(resolve(&deep).is_err());
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
}

#[test]
fn regression_long_concatenations_stop_at_the_bound() {
    // Found by fuzz_interpolation_resolver: 20 000 `${a}` of a long `a` built 256 MiB before the
    // size bound was checked (it now counts each piece as it is appended).
    let text = format!(
        "a: '{}'\nb: '{}'\n",
        "x".repeat(100_000),
        "${a}".repeat(20_000)
    );
    let started = std::time::Instant::now();
    assert!(resolve(&text).unwrap_err().contains("more than"));
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
}

#[test]
fn regression_decoding_a_container_that_holds_the_decode_stays_bounded() {
    // Found by the 10-minute run of fuzz_interpolation_resolver: `oc.decode` of a string that
    // holds `x` itself re-reads `x` (with a 178-deep `oc.select`) at every level of the
    // resolution; each read kept a parse of O(depth²) copied nodes, past 1 GiB. Parses now share
    // their nested interpolations and count as resolution work.
    let deep = format!("{}1{}", "${oc.select:a,".repeat(178), "}".repeat(178));
    let mut inner = Map::new();
    inner.insert(
        "hydra".into(),
        Node::List(vec![Node::Str(
            "${oc.decode:'${oc.select:x,{name: ${x[0]}}}'}".into(),
        )]),
    );
    inner.insert("k-1".into(), Node::Null);
    inner.insert("db".into(), Node::Str("${${.b}}".into()));
    let mut root = Map::new();
    root.insert(
        "c".into(),
        Node::List(vec![
            Node::Str("$%a|\u{202e}#},[".into()),
            Node::Str(String::new()),
        ]),
    );
    root.insert(
        "x".into(),
        Node::List(vec![Node::Map(inner), Node::Str(deep)]),
    );
    replay(Node::Map(root), check).unwrap();
}

#[test]
fn regression_decoding_its_own_container_with_long_text_stays_bounded() {
    // Found by the second 10-minute run of fuzz_interpolation_resolver: `oc.decode` of the map
    // holding it, beside 1 379 `${a}`, re-parsed that text at every level (256 MiB of parse
    // trees before the work bound). Parsing now costs one unit per character.
    let mut inner = Map::new();
    inner.insert(
        "a".into(),
        Node::List(vec![
            Node::Str("${oc.decode:'${defaults}'}".into()),
            Node::Str("${a}".repeat(1379)),
        ]),
    );
    let mut root = Map::new();
    root.insert("defaults".into(), Node::Map(inner));
    replay(Node::Map(root), check).unwrap();
}
