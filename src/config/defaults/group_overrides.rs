//! Group overrides of a defaults list (`Overrides` in `hydra/_internal/defaults_list.py`): the
//! command line's `group=option`, `+group=option`, `~group` and configs' `override` entries,
//! whether each was used, and the choices made. Walking the defaults tree is list.rs's job.
use super::element::{DefaultKind, GroupValue, InputDefault};
use super::repo::ConfigRepo;
use crate::error::{composition, ConfigError};
use crate::overrides::{Element, Override, OverrideKind};
use indexmap::IndexMap;
use std::collections::{HashMap, HashSet};

#[derive(Debug)]
struct OverrideMeta {
    external: bool,
    containing_config_path: Option<String>,
    used: bool,
}

/// Group-level overrides collected from the command line and from `override` entries.
pub struct Overrides {
    choices: IndexMap<String, GroupValue>,
    meta: IndexMap<String, OverrideMeta>,
    pub(super) append_group_defaults: Vec<InputDefault>,
    /// Overrides that target config values, applied after merging.
    pub config_overrides: Vec<Override>,
    /// Selected option per override key (Hydra's `hydra.runtime.choices`).
    pub known_choices: IndexMap<String, Option<String>>,
    known_choices_per_group: HashMap<String, HashSet<String>>,
    deletions: IndexMap<String, (Option<String>, bool)>,
}

impl Overrides {
    pub fn new(repo: &ConfigRepo, overrides: &[Override]) -> Result<Self, ConfigError> {
        let mut s = Self {
            choices: IndexMap::new(),
            meta: IndexMap::new(),
            append_group_defaults: Vec::new(),
            config_overrides: Vec::new(),
            known_choices: IndexMap::new(),
            known_choices_per_group: HashMap::new(),
            deletions: IndexMap::new(),
        };
        for o in overrides {
            if o.is_sweep() {
                continue;
            }
            let is_group = repo.group_exists(&o.key_or_group);
            let value = o.element();
            let is_dict = matches!(value, Some(Element::Dict(_)));
            // Hydra 1.3.2's order of tests, which decides which error a bad override gets.
            if is_dict || !is_group {
                s.config_overrides.push(o.clone());
            } else if o.kind == OverrideKind::ForceAdd {
                return Err(composition(format!(
                    "force-add of config groups is not supported: '{}'",
                    o.input
                )));
            } else if o.kind == OverrideKind::Delete {
                let name = match value {
                    None => None,
                    Some(Element::Str { text, .. }) => Some(text.clone()),
                    Some(_) => {
                        return Err(composition(format!(
                            "Config group override deletion value must be a string : {}",
                            o.input
                        )))
                    }
                };
                s.deletions.insert(o.key_without_prefix(), (name, false));
            } else {
                let gv = match value {
                    Some(Element::Str { text, .. }) => GroupValue::Name(Some(text.clone())),
                    Some(Element::List(items)) => GroupValue::Options(
                        items
                            .iter()
                            .map(|e| {
                                e.as_plain_str()
                                    .map(str::to_string)
                                    .unwrap_or_else(|| e.to_string())
                            })
                            .collect(),
                    ),
                    // Hydra's ValueError, word for word (Python's type names).
                    other => {
                        return Err(composition(format!(
                            "Config group override must be a string or a list. Got {}",
                            match other {
                                Some(Element::Int(_)) => "int",
                                Some(Element::Float(_)) => "float",
                                Some(Element::Bool(_)) => "bool",
                                _ => "NoneType",
                            }
                        )))
                    }
                };
                if o.kind == OverrideKind::Add {
                    let mut d = InputDefault::group(&o.key_or_group, gv, o.package.clone());
                    if let DefaultKind::Group {
                        external_append, ..
                    } = &mut d.kind
                    {
                        *external_append = true;
                    }
                    s.append_group_defaults.push(d);
                } else {
                    let key = o.key_without_prefix();
                    s.choices.insert(key.clone(), gv);
                    s.meta.insert(
                        key,
                        OverrideMeta {
                            external: true,
                            containing_config_path: None,
                            used: false,
                        },
                    );
                }
            }
        }
        Ok(s)
    }

    pub(super) fn add_override(&mut self, parent_config_path: &str, d: &InputDefault) {
        let key = d.override_key();
        if self.choices.contains_key(&key) {
            return;
        }
        if let DefaultKind::Group { value, .. } = &d.kind {
            self.choices.insert(key.clone(), value.clone());
        }
        self.meta.insert(
            key,
            OverrideMeta {
                external: false,
                containing_config_path: Some(parent_config_path.to_string()),
                used: false,
            },
        );
    }

    pub(super) fn is_overridden(&self, d: &InputDefault) -> bool {
        matches!(d.kind, DefaultKind::Group { .. }) && self.choices.contains_key(&d.override_key())
    }

    pub(super) fn override_default_option(&mut self, d: &mut InputDefault) {
        let key = d.override_key();
        if let Some(v) = self.choices.get(&key).cloned() {
            if let DefaultKind::Group { value, .. } = &mut d.kind {
                *value = v;
            }
            if let Some(m) = self.meta.get_mut(&key) {
                m.used = true;
            }
        }
    }

    pub(super) fn set_known_choice(&mut self, d: &InputDefault) -> Result<(), ConfigError> {
        if !matches!(d.kind, DefaultKind::Group { .. }) {
            return Ok(());
        }
        let key = d.override_key();
        let name = d.name();
        match self.known_choices.get(&key) {
            None => {
                self.known_choices.insert(key.clone(), name);
            }
            Some(prev) if *prev != name => {
                return Err(composition(format!(
                    "Multiple values for {key}. To override a value use 'override {key}: {}'",
                    prev.clone().unwrap_or_else(|| "null".into())
                )))
            }
            Some(_) => {}
        }
        self.known_choices_per_group
            .entry(d.group_path())
            .or_default()
            .insert(key);
        Ok(())
    }

    pub(super) fn is_deleted(&self, d: &InputDefault) -> bool {
        if !matches!(d.kind, DefaultKind::Group { .. }) {
            return false;
        }
        match self.deletions.get(&d.override_key()) {
            Some((None, _)) => true,
            Some((Some(name), _)) => Some(name.clone()) == d.name(),
            None => false,
        }
    }

    pub(super) fn delete(&mut self, d: &mut InputDefault) {
        d.deleted = true;
        if let Some(e) = self.deletions.get_mut(&d.override_key()) {
            e.1 = true;
        }
    }

    pub(super) fn ensure_used(&self) -> Result<(), ConfigError> {
        for (key, meta) in &self.meta {
            if meta.used {
                continue;
            }
            let group = key.split('@').next().unwrap_or(key);
            let mut choices: Vec<&String> = self
                .known_choices_per_group
                .get(group)
                .map(|s| s.iter().collect())
                .unwrap_or_default();
            choices.sort();
            let mut msg = match choices.len() {
                0 => format!("Could not override '{key}'. No match in the defaults list."),
                1 => format!(
                    "Could not override '{key}'.\nDid you mean to override {}?",
                    choices[0]
                ),
                _ => format!(
                    "Could not override '{key}'.\nDid you mean to override one of {}?",
                    choices
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            if let Some(p) = &meta.containing_config_path {
                msg = format!("In '{p}': {msg}");
            }
            if meta.external {
                let v = match &self.choices[key] {
                    GroupValue::Name(Some(n)) => n.clone(),
                    GroupValue::Name(None) => "null".into(),
                    GroupValue::Options(o) => format!("[{}]", o.join(",")),
                };
                msg.push_str(&format!("\nTo append to your default list use +{key}={v}"));
            }
            return Err(composition(msg));
        }
        for (key, (name, used)) in &self.deletions {
            if !used {
                let desc = match name {
                    Some(n) => format!("{key}={n}"),
                    None => key.clone(),
                };
                return Err(composition(format!(
                    "Could not delete '{desc}'. No match in the defaults list"
                )));
            }
        }
        Ok(())
    }
}
