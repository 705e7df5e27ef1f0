//! Hydra's own config node (`hydra/conf/__init__.py` defaults, trimmed to what llmprof uses):
//! run/sweep directories, job name and overrides, runtime cwd, choices, output subdir.
use crate::tree::node::{Map, Node};
use indexmap::IndexMap;
use std::path::Path;

fn s(v: &str) -> Node {
    Node::Str(v.to_string())
}

fn map(items: Vec<(&str, Node)>) -> Node {
    Node::Map(
        items
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect::<Map>(),
    )
}

/// Hydra's defaults before the primary config's `hydra:` section is merged in.
pub fn defaults(multirun: bool) -> Node {
    map(vec![
        (
            "run",
            map(vec![("dir", s("outputs/${now:%Y-%m-%d}/${now:%H-%M-%S}"))]),
        ),
        (
            "sweep",
            map(vec![
                ("dir", s("multirun/${now:%Y-%m-%d}/${now:%H-%M-%S}")),
                ("subdir", s("${hydra.job.num}")),
            ]),
        ),
        ("mode", s(if multirun { "MULTIRUN" } else { "RUN" })),
        ("searchpath", Node::List(vec![])),
        ("callbacks", Node::empty_map()),
        ("output_subdir", s(".hydra")),
        (
            "overrides",
            map(vec![
                ("hydra", Node::List(vec![])),
                ("task", Node::List(vec![])),
            ]),
        ),
        (
            "job",
            map(vec![
                ("name", Node::Null),
                ("chdir", Node::Null),
                ("override_dirname", s("")),
                ("id", s("???")),
                ("num", s("???")),
                ("config_name", Node::Null),
                ("env_set", Node::empty_map()),
                ("env_copy", Node::List(vec![])),
                (
                    "config",
                    map(vec![(
                        "override_dirname",
                        map(vec![
                            ("kv_sep", s("=")),
                            ("item_sep", s(",")),
                            ("exclude_keys", Node::List(vec![])),
                        ]),
                    )]),
                ),
            ]),
        ),
        (
            "runtime",
            map(vec![
                ("version", s("1.3.2")),
                ("version_base", s("1.3")),
                ("cwd", Node::Null),
                ("config_sources", Node::List(vec![])),
                ("output_dir", Node::Null),
                ("choices", Node::empty_map()),
            ]),
        ),
        ("verbose", Node::Bool(false)),
    ])
}

pub struct RuntimeInfo<'a> {
    pub config_dir: &'a Path,
    pub config_name: &'a str,
    pub job_name: &'a str,
    pub task_overrides: &'a [String],
    pub hydra_overrides: &'a [String],
    pub choices: &'a IndexMap<String, Option<String>>,
}

/// Fill what Hydra computes after composition (`_load_configuration_impl`).
pub fn fill_runtime(hydra: &mut Node, info: &RuntimeInfo) {
    let Some(h) = hydra.as_map_mut() else { return };
    let strs = |v: &[String]| Node::List(v.iter().map(|x| s(x)).collect());
    if let Some(Node::Map(o)) = h.get_mut("overrides") {
        o.insert("task".into(), strs(info.task_overrides));
        o.insert("hydra".into(), strs(info.hydra_overrides));
    }
    let cwd = std::env::current_dir()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    if let Some(Node::Map(rt)) = h.get_mut("runtime") {
        rt.insert("cwd".into(), s(&cwd));
        let choices = info
            .choices
            .iter()
            .map(|(k, v)| (k.clone(), v.as_deref().map(s).unwrap_or(Node::Null)))
            .collect::<Map>();
        rt.insert("choices".into(), Node::Map(choices));
        let abs = std::fs::canonicalize(info.config_dir)
            .unwrap_or_else(|_| info.config_dir.to_path_buf());
        rt.insert(
            "config_sources".into(),
            Node::List(vec![map(vec![
                ("path", s(&abs.display().to_string())),
                ("schema", s("file")),
                ("provider", s("main")),
            ])]),
        );
    }
    if let Some(Node::Map(job)) = h.get_mut("job") {
        if matches!(job.get("name"), None | Some(Node::Null)) {
            job.insert("name".into(), s(info.job_name));
        }
        job.insert("config_name".into(), s(info.config_name));
        let mut lines: Vec<&String> = info.task_overrides.iter().collect();
        lines.sort();
        let joined = lines
            .iter()
            .map(|l| l.as_str())
            .collect::<Vec<_>>()
            .join(",");
        job.insert("override_dirname".into(), s(&joined));
    }
}
