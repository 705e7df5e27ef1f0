//! Composition (`hydra/_internal/config_loader_impl.py`): parse the overrides, build the defaults
//! list, merge the configs at their packages, fill Hydra's node, apply value overrides in struct
//! mode, and hand back a `Composed`. Running, printing or saving it is the caller's business.
use crate::composed::Composed;
use crate::defaults::{
    create_defaults_list, hydra_defaults_list, ConfigRepo, Overrides, ResultDefault,
};
use crate::error::{composition, ConfigError};
use crate::hydra_node;
use crate::hydra_schema::{self, SchemaError};
use crate::overrides::{self, Override, OverrideKind, Sweep, Value};
use crate::tree::limits::{too_deep, MAX_NESTING};
use crate::tree::merge::{self, MergeError};
use crate::tree::node::Node;
use crate::tree::update::{update, UpdateError};
use std::path::PathBuf;

/// What to compose.
#[derive(Debug, Clone)]
pub struct ComposeRequest {
    pub config_dir: PathBuf,
    pub config_name: String,
    pub overrides: Vec<String>,
    /// Multirun: sweeps are allowed (and expanded by the caller), `???` groups are skipped.
    pub multirun: bool,
    /// `hydra.job.name`.
    pub job_name: String,
}

/// Parse the overrides of a request (also used by the sweeper).
pub fn parse_overrides(items: &[String]) -> Result<Vec<Override>, ConfigError> {
    items
        .iter()
        .map(|s| overrides::parse_override(s).map_err(ConfigError::from))
        .collect()
}

pub fn compose(req: &ComposeRequest) -> Result<Composed, ConfigError> {
    compose_at(req, chrono::Local::now())
}

pub fn compose_at(
    req: &ComposeRequest,
    now: chrono::DateTime<chrono::Local>,
) -> Result<Composed, ConfigError> {
    if !req.config_dir.is_dir() {
        return Err(ConfigError::ConfigDirMissing(req.config_dir.clone()));
    }
    let repo = ConfigRepo::new(&req.config_dir);
    let config_name = req.config_name.trim_end_matches(".yaml").to_string();
    if !repo.config_exists(&config_name) {
        return Err(ConfigError::PrimaryNotFound {
            name: config_name,
            dir: req.config_dir.clone(),
            available: repo.group_options("").join(", "),
        });
    }
    let parsed = parse_overrides(&req.overrides)?;
    if !req.multirun {
        validate_no_sweeps(&parsed)?;
    }
    let mut ovr = Overrides::new(&repo, &parsed)?;
    let defaults = create_defaults_list(&repo, &config_name, &mut ovr, req.multirun)?;

    let (mut cfg, one_word_files) = merge_defaults(&repo, &defaults)?;

    // Hydra's own node came from `hydra/config` and its defaults list (builtin/) and the
    // primary config's `hydra:` section. A multirun is marked here; a run when it starts.
    if req.multirun {
        if let Some(Node::Map(h)) = cfg.as_map_mut().and_then(|m| m.get_mut("hydra")) {
            if matches!(h.get("mode"), None | Some(Node::Null)) {
                h.insert("mode".into(), Node::Str("MULTIRUN".into()));
            }
        }
    }

    apply_config_overrides(&mut cfg, &ovr.config_overrides, &one_word_files)?;

    let mut hydra = cfg
        .as_map_mut()
        .and_then(|m| m.shift_remove("hydra"))
        .unwrap_or(Node::Null);
    let task: Vec<String> = parsed
        .iter()
        .filter(|o| !o.is_hydra_override())
        .map(|o| o.input.clone())
        .collect();
    let hydra_ovr: Vec<String> = parsed
        .iter()
        .filter(|o| o.is_hydra_override())
        .map(|o| o.input.clone())
        .collect();
    hydra_node::fill_runtime(
        &mut hydra,
        &hydra_node::RuntimeInfo {
            config_name: &config_name,
            job_name: &req.job_name,
            task_overrides: &task,
            hydra_overrides: &hydra_ovr,
            choices: &ovr.known_choices,
            config_sources: &repo.sources(),
        },
    );
    Ok(Composed {
        job: cfg,
        hydra,
        parsed_overrides: parsed,
        now,
    })
}

/// A config file of the composition that held one word (read as `{word: null}`).
struct OneWordFile {
    package: String,
    config_path: String,
    word: String,
}

/// Merge the configs of a defaults list, each at its package, in order; also the files among
/// them that held one word.
fn merge_defaults(
    repo: &ConfigRepo,
    defaults: &[ResultDefault],
) -> Result<(Node, Vec<OneWordFile>), ConfigError> {
    let mut cfg = Node::empty_map();
    let mut one_word = Vec::new();
    for d in defaults {
        let loaded = repo.load(&d.config_path)?.ok_or_else(|| {
            composition(format!(
                "config '{}' disappeared while composing",
                d.config_path
            ))
        })?;
        if d.primary && !matches!(loaded.config, Node::Map(_)) {
            return Err(composition(format!(
                "primary config '{}' must be a DictConfig, got ListConfig",
                d.config_path
            )));
        }
        if d.package.split('.').count() > MAX_NESTING {
            return Err(composition(format!(
                "In '{}': {}",
                d.config_path,
                too_deep(
                    &format!(
                        "package '{}…'",
                        d.package.chars().take(60).collect::<String>()
                    ),
                    MAX_NESTING
                )
            )));
        }
        let embedded = merge::embed_at_package(&loaded.config, &d.package);
        if let Some(section) = embedded.child("hydra").filter(|_| !loaded.builtin) {
            hydra_schema::check_section(section).map_err(|e| {
                composition(format!(
                    "In '{}': {} raised while composing config:\n{}",
                    d.config_path, e.class, e.message
                ))
            })?;
        }
        merge::merge_into(&mut cfg, &embedded).map_err(|e| merge_failed(&d.config_path, &e))?;
        if let Some(word) = loaded.scalar_word.clone().filter(|_| !loaded.builtin) {
            one_word.push(OneWordFile {
                package: d.package.clone(),
                config_path: d.config_path.clone(),
                word,
            });
        }
    }
    Ok((cfg, one_word))
}

/// For "Could not override `key`": the one-word file whose package holds `key`, named with the
/// fix (Hydra's message stays first and unchanged).
fn one_word_note(files: &[OneWordFile], key: &str) -> String {
    files
        .iter()
        .find(|f| f.package.is_empty() || key == f.package || key.starts_with(&format!("{}.", f.package)))
        .map(|f| format!(
            "\n  note: config '{}' holds the single word '{}', which YAML reads as {{{}: null}}, so '{}' has no other keys\n  fix: write that file as `key: value` lines",
            f.config_path, f.word, f.word, if f.package.is_empty() { "the config" } else { &f.package }
        ))
        .unwrap_or_default()
}

/// Hydra's node as its own defaults compose it, with no config directory and no overrides
/// (what `--cfg hydra` shows before a primary config's `hydra:` section and the runtime).
pub fn hydra_defaults(multirun: bool) -> Node {
    let repo = ConfigRepo::builtin_only();
    let mut ovr = Overrides::new(&repo, &[]).expect("no overrides to parse");
    let list = hydra_defaults_list(&repo, &mut ovr).expect("Hydra's own defaults list builds");
    let (mut cfg, _) = merge_defaults(&repo, &list).expect("Hydra's own configs merge");
    let mut hydra = cfg
        .as_map_mut()
        .and_then(|m| m.shift_remove("hydra"))
        .expect("hydra/config is at package hydra");
    if multirun {
        if let Some(h) = hydra.as_map_mut() {
            h.insert("mode".into(), Node::Str("MULTIRUN".into()));
        }
    }
    hydra
}

fn validate_no_sweeps(parsed: &[Override]) -> Result<(), ConfigError> {
    for o in parsed {
        match &o.value {
            Some(Value::Sweep(Sweep::Choice { simple: true, .. })) => {
                return Err(composition(format!(
                    "Ambiguous value for argument '{}'\n1. To use it as a list, use key=[value1,value2]\n2. To use it as string, quote the value: key=\\'value1,value2\\'\n3. To sweep over it, add --multirun to your command line",
                    o.input
                )))
            }
            Some(Value::Sweep(_)) => {
                return Err(composition(format!(
                    "Sweep parameters '{}' requires --multirun",
                    o.input
                )))
            }
            _ => {}
        }
    }
    Ok(())
}

/// Hydra's message when merging a config of the defaults list fails.
fn merge_failed(config_path: &str, e: &MergeError) -> ConfigError {
    composition(format!(
        "In '{config_path}': {} raised while composing config:\n{e}",
        e.class_name()
    ))
}

/// Python's `==` between config values (`1 == 1.0 == True`), as `~key=value` compares them.
fn py_eq(a: &Node, b: &Node) -> bool {
    let num = |n: &Node| match n {
        Node::Int(i) => Some(*i as f64),
        Node::Float(f) => Some(*f),
        Node::Bool(b) => Some(f64::from(u8::from(*b))),
        _ => None,
    };
    match (num(a), num(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// Hydra's `_apply_overrides_to_config`: `key=value` is OmegaConf.update in struct mode,
/// `+key=value` adds, `++key=value` adds or overrides, `~key[=value]` deletes.
fn apply_config_overrides(
    cfg: &mut Node,
    list: &[Override],
    one_word_files: &[OneWordFile],
) -> Result<(), ConfigError> {
    for o in list {
        if o.package.is_some() {
            return Err(composition(format!(
                "Override {} looks like a config group override, but config group '{}' does not exist.",
                o.input, o.key_or_group
            )));
        }
        let key = &o.key_or_group;
        let value = o.element().map(|e| e.to_node());
        // OmegaConf.select(cfg, key, throw_on_missing=False): absent, null and ??? are None.
        let existing = cfg
            .get_path(key)
            .filter(|n| !matches!(n, Node::Null | Node::Missing))
            .cloned();
        let update_err = |e: UpdateError, cfg_snapshot: &Node| {
            composition(match e {
                UpdateError::KeyNotFound => format!(
                    "Could not override '{key}'.{}\nTo append to your config use +{}{}",
                    suggest_key(cfg_snapshot, key)
                        .filter(|s| s != key)
                        .map(|s| format!(" Did you mean '{s}'?"))
                        .unwrap_or_default(),
                    o.input,
                    one_word_note(one_word_files, key)
                ),
                UpdateError::Merge(m) => format!(
                    "Error merging override {}\n  {}",
                    o.input,
                    m.to_string().lines().next().unwrap_or_default()
                ),
                UpdateError::IndexOutOfRange(p) => {
                    format!(
                        "Error merging override {}\n  list index out of range: {p}",
                        o.input
                    )
                }
                UpdateError::NotAnIndex(msg) => msg,
            })
        };
        if let (Some(v), Some(hydra_key)) = (&value, hydra_key(key)) {
            let forced = matches!(o.kind, OverrideKind::Add | OverrideKind::ForceAdd);
            hydra_schema::check_override(hydra_key, v, forced).map_err(|e: SchemaError| {
                composition(format!(
                    "Error merging override {}\n  {}",
                    o.input,
                    e.message.lines().next().unwrap_or_default()
                ))
            })?;
        }
        match o.kind {
            OverrideKind::Delete => {
                let Some(current) = existing else {
                    return Err(composition(format!(
                        "Could not delete from config. '{key}' does not exist."
                    )));
                };
                if let Some(v) = &value {
                    if !py_eq(v, &current) {
                        return Err(composition(format!(
                            "Could not delete from config. The value of '{key}' is {} and not {}.",
                            current.to_python_str(),
                            v.to_python_str()
                        )));
                    }
                }
                merge::delete(cfg, key);
            }
            OverrideKind::Add => {
                let value = value.expect("+key always has a value");
                if existing.is_none() || matches!(value, Node::Map(_) | Node::List(_)) {
                    update(cfg, key, value, true).map_err(|e| update_err(e, cfg))?;
                } else {
                    return Err(composition(format!(
                        "Could not append to config. An item is already at '{key}'.\nEither remove + prefix: '{}'\nOr add a second + to add or override '{key}': '+{}'",
                        &o.input[1..],
                        o.input
                    )));
                }
            }
            OverrideKind::ForceAdd => {
                update(cfg, key, value.expect("++key always has a value"), true)
                    .map_err(|e| update_err(e, cfg))?;
            }
            OverrideKind::Change => {
                update(
                    cfg,
                    key,
                    value.expect("key=value always has a value"),
                    false,
                )
                .map_err(|e| update_err(e, cfg))?;
            }
        }
    }
    Ok(())
}

/// `hydra.job.name` → `Some("job.name")`; `hydra` → `Some("")`.
fn hydra_key(key: &str) -> Option<&str> {
    match key {
        "hydra" => Some(""),
        k => k.strip_prefix("hydra."),
    }
}

/// The closest existing key to a mistyped one: walk the longest existing prefix, then pick the
/// most similar child name at the first missing level.
pub fn suggest_key(cfg: &Node, key: &str) -> Option<String> {
    let segs: Vec<&str> = key.split('.').collect();
    let mut node = cfg;
    for (i, seg) in segs.iter().enumerate() {
        match node.child(seg) {
            Some(n) => node = n,
            None => {
                let close = node.as_map().and_then(|m| {
                    m.keys()
                        .map(|k| (strsim::jaro_winkler(seg, k), k))
                        .filter(|(s, _)| *s > 0.8)
                        .max_by(|a, b| a.0.total_cmp(&b.0))
                });
                let Some((_, best)) = close else {
                    // No close sibling: the key may live elsewhere under the same name (a
                    // switch that moved to another package).
                    return moved_key(cfg, &segs);
                };
                let mut out: Vec<String> = segs[..i].iter().map(|s| s.to_string()).collect();
                out.push(best.clone());
                out.extend(segs[i + 1..].iter().map(|s| s.to_string()));
                return Some(out.join("."));
            }
        }
    }
    None
}

/// The one other path of `cfg` whose last segment is `segs`' last (none when there are several).
fn moved_key(cfg: &Node, segs: &[&str]) -> Option<String> {
    fn walk(node: &Node, prefix: &mut Vec<String>, leaf: &str, found: &mut Vec<String>) {
        let Some(m) = node.as_map() else { return };
        for (k, child) in m {
            prefix.push(k.clone());
            if k == leaf {
                found.push(prefix.join("."));
            }
            walk(child, prefix, leaf, found);
            prefix.pop();
        }
    }
    let leaf = segs.last()?;
    let mut found = Vec::new();
    walk(cfg, &mut Vec::new(), leaf, &mut found);
    match found.as_slice() {
        [one] => Some(one.clone()),
        _ => None,
    }
}
