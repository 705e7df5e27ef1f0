//! The config search path as Hydra's config repository sees it (`_internal/config_repository.py`):
//! Hydra's own `pkg://hydra.conf`, then the config directory (groups are folders, options
//! `<name>.yaml` files), then `structured://` (builtin/); the first source holding a config wins,
//! a group's options are those of all sources. Loads each config once (body, `# @package`
//! header, defaults entries). Knows defaults-list elements, not the defaults-list algorithm.
use super::element::InputDefault;
use crate::builtin::{BuiltinSource, HYDRA_CONF, STRUCTURED};
use crate::error::ConfigError;
use crate::tree::node::Node;
use crate::tree::yaml_read;
use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// One loaded config file.
#[derive(Debug)]
pub struct LoadedConfig {
    /// The body without its top-level `defaults` key.
    pub config: Node,
    pub package_header: Option<String>,
    pub defaults: Vec<InputDefault>,
    /// Hydra's own config (builtin/), not a file of the config directory.
    pub builtin: bool,
    /// The file held one word instead of `key: value` lines: OmegaConf (and so this composer)
    /// reads it as `{word: null}`; a later "Could not override" names the file with it.
    pub scalar_word: Option<String>,
}

pub struct ConfigRepo {
    /// The config directory; `None` for Hydra's own configs alone.
    dir: Option<PathBuf>,
    root: PathBuf,
    cache: RefCell<HashMap<String, Option<Rc<LoadedConfig>>>>,
}

impl ConfigRepo {
    pub fn new(root: &Path) -> Self {
        Self {
            dir: Some(root.to_path_buf()),
            root: root.to_path_buf(),
            cache: RefCell::new(HashMap::new()),
        }
    }

    /// Hydra's own configs alone, with no config directory.
    pub fn builtin_only() -> Self {
        Self {
            dir: None,
            root: PathBuf::new(),
            cache: RefCell::new(HashMap::new()),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The file of a config in the config directory (`None` with no directory).
    fn file(&self, config_path: &str) -> Option<PathBuf> {
        let p = config_path.trim_start_matches('/');
        let p = p.strip_suffix(".yaml").unwrap_or(p);
        Some(self.dir.as_ref()?.join(format!("{p}.yaml")))
    }

    /// The folder of a group in the config directory (`None` with no directory).
    fn group_dir(&self, group: &str) -> Option<PathBuf> {
        Some(self.dir.as_ref()?.join(group.trim_start_matches('/')))
    }

    pub fn config_exists(&self, config_path: &str) -> bool {
        HYDRA_CONF.get(config_path).is_some()
            || self.file(config_path).is_some_and(|f| f.is_file())
            || STRUCTURED.get(config_path).is_some()
    }

    pub fn group_exists(&self, group: &str) -> bool {
        HYDRA_CONF.has_group(group)
            || self.group_dir(group).is_some_and(|d| d.is_dir())
            || STRUCTURED.has_group(group)
    }

    /// `hydra.runtime.config_sources`, in search order: (path, schema, provider).
    pub fn sources(&self) -> Vec<(String, &'static str, &'static str)> {
        let builtin = |b: &BuiltinSource| (b.path.to_string(), b.schema, b.provider);
        let mut out = vec![builtin(&HYDRA_CONF)];
        if let Some(dir) = &self.dir {
            let abs = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.clone());
            out.push((abs.display().to_string(), "file", "main"));
        }
        out.push(builtin(&STRUCTURED));
        out
    }

    /// The search path as Hydra's "Config search path" lines of a not-found error.
    pub fn search_path_lines(&self) -> String {
        self.sources()
            .iter()
            .map(|(path, schema, provider)| {
                let path = if *schema == "file" {
                    format!("file://{path}")
                } else {
                    format!("{schema}://{path}")
                };
                format!("\tprovider={provider}, path={path}")
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Options of a group (file names without `.yaml`), sorted.
    pub fn group_options(&self, group: &str) -> Vec<String> {
        let dir = self.group_dir(group);
        let mut out: Vec<String> = dir
            .and_then(|d| std::fs::read_dir(d).ok())
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().to_string();
                let is_file = e.file_type().map(|t| t.is_file()).unwrap_or(false);
                (is_file && name.ends_with(".yaml"))
                    .then(|| name.trim_end_matches(".yaml").to_string())
            })
            .chain(HYDRA_CONF.options(group).map(str::to_string))
            .chain(STRUCTURED.options(group).map(str::to_string))
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// Sub-groups of a group (folders), sorted.
    pub fn subgroups(&self, group: &str) -> Vec<String> {
        let dir = self.group_dir(group);
        let mut out: Vec<String> = dir
            .and_then(|d| std::fs::read_dir(d).ok())
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_type().map(|t| t.is_dir()).unwrap_or(false))
            .map(|e| e.file_name().to_string_lossy().to_string())
            .filter(|n| !n.starts_with('.'))
            .chain(HYDRA_CONF.subgroups(group).map(str::to_string))
            .chain(STRUCTURED.subgroups(group).map(str::to_string))
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// Load a config by path relative to the root (`model/deepseek_ocr`); `None` if absent.
    pub fn load(&self, config_path: &str) -> Result<Option<Rc<LoadedConfig>>, ConfigError> {
        let key = config_path.trim_start_matches('/').to_string();
        if let Some(c) = self.cache.borrow().get(&key) {
            return Ok(c.clone());
        }
        let file = self.file(&key);
        let builtin = |b: &BuiltinSource| {
            b.get(&key).map(|text| {
                let origin = PathBuf::from(format!("{}://{}/{key}.yaml", b.schema, b.path));
                (text.to_string(), origin)
            })
        };
        let found = match builtin(&HYDRA_CONF) {
            Some(t) => Some(t),
            None if file.as_ref().is_some_and(|f| f.is_file()) => {
                let file = file.clone().expect("checked above");
                let text = std::fs::read_to_string(&file).map_err(|e| ConfigError::Io {
                    path: file.clone(),
                    reason: e.to_string(),
                })?;
                Some((text, file))
            }
            None => builtin(&STRUCTURED),
        };
        let loaded = match found {
            Some((text, origin)) => {
                let mut c = self.read(&key, &text, &origin)?;
                c.builtin = file.as_ref() != Some(&origin);
                Some(Rc::new(c))
            }
            None => None,
        };
        self.cache.borrow_mut().insert(key, loaded.clone());
        Ok(loaded)
    }

    fn read(&self, key: &str, text: &str, file: &Path) -> Result<LoadedConfig, ConfigError> {
        let package_header =
            yaml_read::package_header(text).map_err(|reason| ConfigError::BadFile {
                path: file.to_path_buf(),
                reason,
            })?;
        let body = yaml_read::parse(text).map_err(|e| ConfigError::Yaml {
            path: file.to_path_buf(),
            line: e.line,
            column: e.column,
            reason: e.message,
        })?;
        let scalar_word = match &body {
            Node::Str(s) => {
                matches!(yaml_read::parse(s), Ok(Node::Str(_) | Node::Missing)).then(|| s.clone())
            }
            _ => None,
        };
        let mut body = file_body(body).map_err(|reason| ConfigError::BadFile {
            path: file.to_path_buf(),
            reason,
        })?;
        let raw_defaults = body.as_map_mut().and_then(|m| m.shift_remove("defaults"));
        let defaults = match raw_defaults {
            None => Vec::new(),
            Some(Node::List(items)) => items
                .iter()
                .map(InputDefault::from_yaml)
                .collect::<Result<_, String>>()
                .map_err(|reason| ConfigError::BadFile {
                    path: file.to_path_buf(),
                    reason: format!("In {key}: {reason}"),
                })?,
            Some(other) => {
                return Err(ConfigError::BadFile {
                    path: file.to_path_buf(),
                    reason: format!(
                        "Invalid defaults list in '{key}', defaults must be a list (got {})",
                        if matches!(other, Node::Map(_)) {
                            "mapping"
                        } else {
                            other.type_name()
                        }
                    ),
                })
            }
        };
        Ok(LoadedConfig {
            config: body,
            package_header,
            defaults,
            builtin: false,
            scalar_word,
        })
    }
}

/// What `OmegaConf.load` makes of a file's YAML: nothing is `{}`, a string is read again as YAML
/// (a word then becomes `{word: null}`), a mapping or a list stays; anything else is refused.
fn file_body(body: Node) -> Result<Node, String> {
    let body = match body {
        Node::Missing => return file_body(Node::Str("???".into())),
        Node::Str(s) => match yaml_read::parse(&s).map_err(|e| e.to_string())? {
            Node::Str(word) => {
                let mut m = crate::tree::node::Map::new();
                m.insert(word, Node::Null);
                return Ok(Node::Map(m));
            }
            Node::Missing => {
                let mut m = crate::tree::node::Map::new();
                m.insert(s, Node::Null);
                return Ok(Node::Map(m));
            }
            other @ (Node::Null | Node::Map(_) | Node::List(_)) => other,
            other => {
                return Err(format!(
                    "a config file that holds the string '{s}' reads as a {}, not a mapping",
                    other.type_name()
                ))
            }
        },
        other => other,
    };
    match body {
        Node::Null => Ok(Node::empty_map()),
        body @ (Node::Map(_) | Node::List(_)) => Ok(body),
        other => Err(format!("Invalid loaded object type: {}", other.type_name())),
    }
}

/// The application's groups and their options, for `--help` (Hydra's "Configuration groups",
/// `$APP_CONFIG_GROUPS`: Hydra's own `hydra/...` groups are left out).
pub fn list_groups(config_dir: &Path) -> Vec<(String, Vec<String>)> {
    let repo = ConfigRepo::new(config_dir);
    let mut out = Vec::new();
    fn walk(repo: &ConfigRepo, group: &str, out: &mut Vec<(String, Vec<String>)>) {
        for sub in repo.subgroups(group) {
            if group.is_empty() && sub == "hydra" {
                continue;
            }
            let path = if group.is_empty() {
                sub
            } else {
                format!("{group}/{sub}")
            };
            let options = repo.group_options(&path);
            if !options.is_empty() {
                out.push((path.clone(), options));
            }
            walk(repo, &path, out);
        }
    }
    walk(&repo, "", &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_bodies_are_read_as_omegaconf_load_reads_them() {
        let body = |y: &str| file_body(yaml_read::parse(y).unwrap());
        assert_eq!(body(""), Ok(Node::empty_map()));
        assert_eq!(
            body("hello"),
            Ok(yaml_read::parse("{hello: null}").unwrap())
        );
        assert_eq!(body("'a: 1'"), Ok(yaml_read::parse("{a: 1}").unwrap()));
        assert_eq!(body("[1, 2]"), Ok(yaml_read::parse("[1, 2]").unwrap()));
        assert_eq!(body("5"), Err("Invalid loaded object type: int".into()));
        assert!(
            body("'5'").is_err(),
            "OmegaConf asserts on a string that reads as a number"
        );
    }
}
