//! Fuzz target: the YAML loader and the composer (llmprof_config::yaml, compose, --cfg output).
//! Random documents parse or are refused, and a parsed document written back as YAML reads back
//! the same; random config trees (defaults lists with groups, packages, headers, `_self_`,
//! `override`, interpolated and cyclic entries) with random overrides compose, resolve and print
//! or fail cleanly: no panic, no hang, bounded memory. Regressions at the end (docs/fuzzing.md).
use crate::front_end::fuzz_gen::{dotted, ident, override_line, yaml_doc, yaml_flow};
use crate::front_end::fuzz_support::{fuzz, scratch_dir};
use llmprof_config::{compose, yaml, ComposeRequest, Node};
use proptest::prelude::*;
use proptest::sample::select;

/// Nodes equal as OmegaConf means them (NaN equals NaN, `???` however it is held).
fn same(a: &Node, b: &Node) -> bool {
    let missing = |n: &Node| matches!(n, Node::Missing) || matches!(n, Node::Str(s) if s == "???");
    match (a, b) {
        _ if missing(a) && missing(b) => true,
        (Node::Float(x), Node::Float(y)) => x == y || (x.is_nan() && y.is_nan()),
        (Node::List(x), Node::List(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        (Node::Map(x), Node::Map(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|((k, p), (l, q))| k == l && same(p, q))
        }
        _ => a == b,
    }
}

// The driver hands each input over as `&Strategy::Value`, here `&String`.
#[allow(clippy::ptr_arg)]
fn check_yaml(text: &String) -> Result<(), String> {
    let Ok(node) = yaml::parse(text) else {
        return Ok(());
    };
    let written = node.to_yaml();
    let _ = node.to_json(true);
    match yaml::parse(&written) {
        Ok(back) if same(&back, &node) => Ok(()),
        Ok(back) => Err(format!(
            "written as {written:?}, reads back as {back:?}, not {node:?}"
        )),
        Err(e) => Err(format!("written as {written:?}, does not read back: {e}")),
    }
}

#[test]
fn fuzz_yaml_loader() {
    fuzz("yaml", yaml_doc(), check_yaml);
}

/// One config tree and the command line to compose it with.
#[derive(Clone, Debug)]
pub struct Tree {
    files: Vec<(String, String)>,
    overrides: Vec<String>,
    multirun: bool,
}

const FILES: &[&str] = &[
    "db/o1.yaml",
    "db/o2.yaml",
    "m/o1.yaml",
    "m/o2.yaml",
    "g/sub/o1.yaml",
    "g/o3.yaml",
];

fn defaults_entry() -> impl Strategy<Value = String> + Clone {
    select(vec![
        "_self_",
        "db: o1",
        "db: o2",
        "optional m: o2",
        "override db: o2",
        "/g/sub: o1",
        "o1",
        "o2",
        "db@pkg: o1",
        "db@_global_: o2",
        "m: ${db}",
        "db: ???",
        "db: null",
        "m: [o1, o2]",
        "config",
        "/db: o1",
        "g/sub: o1",
        "optional nope: x",
        "m@a.b: o1",
        "override m: o1",
        "{db: o1, m: o2}",
        "5",
    ])
    .prop_map(|e| format!("  - {e}\n"))
}

fn config_file() -> impl Strategy<Value = String> + Clone {
    (
        prop::option::of(select(vec!["_global_", "_group_", "pkg", "a.b", "", "x y"])),
        prop::option::of(prop::collection::vec(defaults_entry(), 0..4)),
        prop::collection::vec((ident(), yaml_flow()), 0..4),
        prop::option::of(yaml_flow()),
    )
        .prop_map(|(header, defaults, body, hydra)| {
            let mut s = String::new();
            if let Some(h) = header {
                s.push_str(&format!("# @package {h}\n"));
            }
            if let Some(d) = defaults {
                s.push_str("defaults:\n");
                s.extend(d);
            }
            for (k, v) in body {
                if k != "defaults" && k != "hydra" {
                    s.push_str(&format!("{k}: {v}\n"));
                }
            }
            if let Some(h) = hydra {
                s.push_str(&format!("hydra: {{job: {h}}}\n"));
            }
            s
        })
}

fn tree() -> impl Strategy<Value = Tree> {
    let file = prop_oneof![8 => config_file(), 1 => yaml_doc()];
    let overrides = prop::collection::vec(
        prop_oneof![
            3 => override_line(),
            2 => (select(vec!["db", "m", "+db", "~db", "+g/sub", "m@x"]), select(vec!["o1", "o2", "o3", "null", "[o1,o2]", "{a:1}"]))
                .prop_map(|(k, v)| format!("{k}={v}")),
            2 => (dotted(), yaml_flow()).prop_map(|(k, v)| format!("{k}={v}")),
        ],
        0..4,
    );
    (
        file.clone(),
        prop::collection::vec(prop::option::of(file), FILES.len()),
        overrides,
        prop::bool::weighted(0.1),
    )
        .prop_map(|(primary, others, overrides, multirun)| {
            let mut files = vec![("config.yaml".to_string(), primary)];
            for (name, text) in FILES.iter().zip(others) {
                if let Some(t) = text {
                    files.push((name.to_string(), t));
                }
            }
            Tree {
                files,
                overrides,
                multirun,
            }
        })
}

fn check_tree(t: &Tree) -> Result<(), String> {
    let dir = scratch_dir("compose");
    let conf = dir.join("conf");
    for (name, text) in &t.files {
        let p = conf.join(name);
        std::fs::create_dir_all(p.parent().expect("has a parent")).map_err(|e| e.to_string())?;
        std::fs::write(&p, text).map_err(|e| e.to_string())?;
    }
    let mut jobs = vec![t.overrides.clone()];
    if t.multirun {
        if let Ok(parsed) = llmprof_config::parse_overrides(&t.overrides) {
            if let Ok(j) = llmprof_config::sweep::expand(&conf, &parsed) {
                jobs = j.into_iter().take(4).collect();
            }
        }
    }
    for overrides in jobs {
        let req = ComposeRequest {
            config_dir: conf.clone(),
            config_name: "config".into(),
            overrides,
            multirun: t.multirun,
            job_name: "fuzz".into(),
        };
        if let Ok(c) = compose(&req) {
            if let Ok(job) = c.resolved_job() {
                let _ = (job.to_yaml(), job.to_json(true), job.to_serde_json());
            }
            let _ = c.full_config(true).map(|n| n.to_yaml());
            let _ = c.hydra_config(true);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

#[test]
fn fuzz_composer() {
    fuzz("compose", tree(), check_tree);
}

fn compose_files(files: &[(&str, &str)], overrides: &[&str]) -> Result<Node, String> {
    let dir = scratch_dir("compose-regression");
    for (name, text) in files {
        let p = dir.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
    }
    let req = ComposeRequest {
        config_dir: dir.clone(),
        config_name: "config".into(),
        overrides: overrides.iter().map(|s| s.to_string()).collect(),
        multirun: false,
        job_name: "fuzz".into(),
    };
    let r = compose(&req)
        .and_then(|c| c.resolved_job())
        .map_err(|e| e.to_string());
    let _ = std::fs::remove_dir_all(&dir);
    r
}

#[test]
fn regression_defaults_cycles_are_errors_not_stack_overflows() {
    for (files, wanted) in [
        (
            vec![("config.yaml", "defaults:\n  - config\n")],
            "config -> config",
        ),
        (
            vec![
                ("config.yaml", "defaults:\n  - a: x\n"),
                ("a/x.yaml", "defaults:\n  - /b: y\n"),
                ("b/y.yaml", "defaults:\n  - /a: x\n"),
            ],
            "config -> a/x -> b/y -> a/x",
        ),
        (
            vec![
                ("config.yaml", "defaults:\n  - g: s\n"),
                ("g/s.yaml", "defaults:\n  - s\n"),
            ],
            "config -> g/s -> g/s",
        ),
    ] {
        let err = compose_files(&files, &[]).expect_err("a cycle");
        assert!(
            err.contains(&format!(
                "Circular reference in the defaults list: {wanted}"
            )),
            "{err}"
        );
    }
}

#[test]
fn regression_deep_yaml_and_alias_bombs_are_refused() {
    // yaml-rust2's own loader recursed once per level: 5000 block levels overflowed the stack.
    let deep_block = (0..5_000)
        .map(|i| format!("{}k:\n", " ".repeat(i)))
        .collect::<String>();
    let err = yaml::parse(&deep_block).expect_err("too deep");
    assert!(err.message.contains("nested more than"), "{err}");
    let mut bomb = "l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n".to_string();
    for i in 1..12 {
        bomb.push_str(&format!(
            "l{i}: &l{i} [{}]\n",
            vec![format!("*l{}", i - 1); 10].join(", ")
        ));
    }
    let err = yaml::parse(&bomb).expect_err("too large");
    assert!(err.message.contains("expands to more than"), "{err}");
}

#[test]
fn regression_deep_packages_are_refused() {
    let pkg = vec!["p"; 100_000].join(".");
    let files = [
        ("config.yaml", "defaults:\n  - g: o\n".to_string()),
        ("g/o.yaml", format!("# @package {pkg}\nv: 1\n")),
    ];
    let files: Vec<(&str, &str)> = files.iter().map(|(a, b)| (*a, b.as_str())).collect();
    let err = compose_files(&files, &[]).expect_err("too deep");
    assert!(err.contains("nested more than"), "{err}");
}

#[test]
fn regression_yaml_writer_quotes_what_would_read_as_a_mapping() {
    // Found by fuzz_yaml_loader: `${a}:` was written plain and read back as `{${a}: null}`.
    for doc in [
        "[['${a}:']]",
        "a: 'x:'",
        "a: \"x:\\ty\"",
        "a: \"x\\t#y\"",
        "a: '<<'",
        "a: '='",
        "a: '1:30'",
    ] {
        assert!(check_yaml(&doc.to_string()).is_ok(), "{doc}");
    }
}
