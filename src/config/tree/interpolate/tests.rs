//! Unit tests of interpolation resolution (references, resolvers, errors and bounds).
use super::*;
use crate::tree::limits::{MAX_RESOLVE_DEPTH, MAX_RESOLVE_WORK};
use crate::tree::node::Node;
use crate::tree::yaml_read as yaml;

fn ctx_env(k: &str) -> Option<String> {
    (k == "SET_VAR").then(|| "from_env".to_string())
}

fn resolve(text: &str) -> Result<Node, InterpolationError> {
    let root = yaml::parse(text).unwrap();
    let hydra = yaml::parse("runtime: {cwd: /work}\njob: {name: llmprof}\n").unwrap();
    let ctx = ResolveContext {
        hydra: Some(&hydra),
        now: chrono::Local::now(),
        env: &ctx_env,
    };
    resolve_tree(&root, &ctx)
}

#[test]
fn absolute_relative_and_string_interpolation() {
    let n = resolve(
        "m: {len: 8192, name: ocr}\ni: {max: 512, b: {t: '${..max}'}, s: '${.max}'}\nr: '${m.name}_t${i.max}'\nq: '${i.max}'\n",
    )
    .unwrap();
    assert_eq!(n.get_path("i.b.t"), Some(&Node::Int(512)));
    assert_eq!(n.get_path("i.s"), Some(&Node::Int(512)));
    assert_eq!(n.get_path("r"), Some(&Node::Str("ocr_t512".into())));
    assert_eq!(n.get_path("q"), Some(&Node::Int(512)));
}

#[test]
fn env_defaults_and_nested() {
    let n = resolve(
        "a: '${oc.env:UNSET_X,/tmp/c}'\nb: '${oc.env:SET_VAR,nobody}'\nc: '${oc.env:UNSET_X,null}'\nk: name\nd: {name: z}\ne: '${d.${k}}'\nf: '${oc.env:UNSET_X,${k}}'\n",
    )
    .unwrap();
    assert_eq!(n.get_path("a"), Some(&Node::Str("/tmp/c".into())));
    assert_eq!(n.get_path("b"), Some(&Node::Str("from_env".into())));
    assert_eq!(n.get_path("c"), Some(&Node::Null));
    assert_eq!(n.get_path("e"), Some(&Node::Str("z".into())));
    assert_eq!(n.get_path("f"), Some(&Node::Str("name".into())));
}

#[test]
fn hydra_and_now_resolvers() {
    let n = resolve("c: '${hydra:runtime.cwd}/data'\nj: '${hydra:job.name}'\nd: '${now:%Y}'\n")
        .unwrap();
    assert_eq!(n.get_path("c"), Some(&Node::Str("/work/data".into())));
    assert_eq!(n.get_path("j"), Some(&Node::Str("llmprof".into())));
    let year = chrono::Local::now().format("%Y").to_string();
    assert_eq!(n.get_path("d"), Some(&Node::Str(year)));
}

#[test]
fn errors_missing_cycle_and_escape() {
    assert!(matches!(
        resolve("a: '${b.c}'\n"),
        Err(InterpolationError::KeyNotFound { .. })
    ));
    assert!(matches!(
        resolve("a: '${b}'\nb: '${a}'\n"),
        Err(InterpolationError::Cycle { .. })
    ));
    assert!(matches!(
        resolve("a: '${nope:1}'\n"),
        Err(InterpolationError::UnknownResolver { .. })
    ));
    let n = resolve("a: '\\${b}'\n").unwrap();
    assert_eq!(n.get_path("a"), Some(&Node::Str("${b}".into())));
}

#[test]
fn containers_and_typed_resolver_args() {
    let n = resolve("a: {x: 1, y: '${.x}'}\nb: '${a}'\nc: '${oc.select:a.x,5}'\nd: '${oc.select:a.none,5}'\ne: '${oc.decode:\"[1, 2]\"}'\n").unwrap();
    assert_eq!(n.get_path("b.y"), Some(&Node::Int(1)));
    assert_eq!(n.get_path("c"), Some(&Node::Int(1)));
    assert_eq!(n.get_path("d"), Some(&Node::Int(5)));
    assert_eq!(
        n.get_path("e"),
        Some(&Node::List(vec![Node::Int(1), Node::Int(2)]))
    );
}

#[test]
fn an_interpolation_to_a_missing_value_resolves_to_missing() {
    // OmegaConf.resolve sets such a node to ??? (what `--cfg job --resolve` prints).
    let n = resolve(
        "m: ???\nd: {x: ???}\nref: ${m}\nsref: 'a_${m}'\nchain: ${ref}\ndx: ${d.x}\nmx: ${m.x}\nsel: '${oc.select:m,7}'\nq: '???'\n",
    )
    .unwrap();
    for k in ["m", "ref", "sref", "chain", "dx", "mx", "q"] {
        assert_eq!(n.get_path(k), Some(&Node::Missing), "{k}");
    }
    assert_eq!(n.get_path("sel"), Some(&Node::Int(7)));
    let root = yaml::parse("m: ???\nref: ${m}\n").unwrap();
    let ctx = ResolveContext {
        hydra: None,
        now: chrono::Local::now(),
        env: &ctx_env,
    };
    assert!(matches!(
        resolve_value_at(&root, "ref", &ctx),
        Err(InterpolationError::Missing { .. })
    ));
}

#[test]
fn keys_pass_through_interpolations_as_omegaconf_select_does() {
    let n = resolve("model: {name: n}\nalias: ${model}\nx: ${alias.name}\ny: '${oc.select:alias.name}'\nz: '${oc.select:.x}'\n").unwrap();
    assert_eq!(n.get_path("x"), Some(&Node::Str("n".into())));
    assert_eq!(n.get_path("y"), Some(&Node::Str("n".into())));
    assert_eq!(n.get_path("z"), Some(&Node::Str("n".into())));
}

#[test]
fn parent_references_and_container_cycles_are_errors() {
    assert!(matches!(
        resolve("a: {c: '${a}'}\n"),
        Err(InterpolationError::ParentNode { .. })
    ));
    assert!(matches!(
        resolve("a: {c: '${b}'}\nb: {c: '${a}'}\n"),
        Err(InterpolationError::Cycle { .. })
    ));
}

#[test]
fn long_chains_and_exponential_copies_are_bounded() {
    let mut chain = String::new();
    for i in 0..MAX_RESOLVE_DEPTH * 2 {
        chain.push_str(&format!("k{i}: ${{k{}}}\n", i + 1));
    }
    chain.push_str(&format!("k{}: 1\n", MAX_RESOLVE_DEPTH * 2));
    let r = std::thread::Builder::new()
        .stack_size(8 << 20)
        .spawn(move || resolve(&chain))
        .unwrap()
        .join()
        .unwrap();
    assert!(
        matches!(r, Err(InterpolationError::TooDeep { .. })),
        "{r:?}"
    );
    let mut doubling = "x0: [1, 2]\n".to_string();
    for i in 1..40 {
        doubling.push_str(&format!("x{i}: ['${{x{0}}}', '${{x{0}}}']\n", i - 1));
    }
    let r = resolve(&doubling);
    assert!(
        matches!(r, Err(InterpolationError::TooLarge { limit, .. }) if limit == MAX_RESOLVE_WORK),
        "{r:?}"
    );
    let mut strings = "s0: abcdefgh\n".to_string();
    for i in 1..64 {
        strings.push_str(&format!("s{i}: '${{s{0}}}${{s{0}}}'\n", i - 1));
    }
    assert!(matches!(
        resolve(&strings),
        Err(InterpolationError::TooLarge { .. })
    ));
}

#[test]
fn deeply_nested_interpolation_text_is_a_grammar_error() {
    let deep = format!(
        "a: '{}x{}'\n",
        "${oc.select:".repeat(1000),
        "}".repeat(1000)
    );
    assert!(matches!(
        resolve(&deep),
        Err(InterpolationError::Grammar { .. })
    ));
}
