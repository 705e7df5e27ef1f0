//! What Hydra fills into its own node after composing (`_load_configuration_impl`): the
//! overrides, runtime cwd, config sources and choices, the job's name, config name and override
//! dirname. The node itself is composed from `hydra/config` (builtin/) like any config.
use crate::tree::node::{Map, Node};
use indexmap::IndexMap;

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

/// The Hydra release whose behaviour the composer follows, and the `version_base` it runs under.
pub const HYDRA_VERSION: &str = "1.3.2";
pub const HYDRA_VERSION_BASE: &str = "1.3";

pub struct RuntimeInfo<'a> {
    pub config_name: &'a str,
    pub job_name: &'a str,
    pub task_overrides: &'a [String],
    pub hydra_overrides: &'a [String],
    pub choices: &'a IndexMap<String, Option<String>>,
    /// (path, schema, provider) in search order.
    pub config_sources: &'a [(String, &'static str, &'static str)],
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
        rt.insert("version".into(), s(HYDRA_VERSION));
        rt.insert("version_base".into(), s(HYDRA_VERSION_BASE));
        rt.insert("cwd".into(), s(&cwd));
        let choices = info
            .choices
            .iter()
            .map(|(k, v)| (k.clone(), v.as_deref().map(s).unwrap_or(Node::Null)))
            .collect::<Map>();
        rt.insert("choices".into(), Node::Map(choices));
        let sources = info
            .config_sources
            .iter()
            .map(|(path, schema, provider)| {
                map(vec![
                    ("path", s(path)),
                    ("schema", s(schema)),
                    ("provider", s(provider)),
                ])
            })
            .collect();
        rt.insert("config_sources".into(), Node::List(sources));
    }
    if let Some(Node::Map(job)) = h.get_mut("job") {
        if matches!(job.get("name"), None | Some(Node::Null | Node::Missing)) {
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
