//! The Hydra 1.3 defaults-list algorithm (`hydra/_internal/defaults_list.py`): expands the defaults
//! tree from the primary config and the group overrides, children last-to-first so later `override`
//! entries win, and flattens it into the ordered (config path, package) list. No merging here.
use super::element::{DefaultKind, GroupValue, InputDefault, ResultDefault};
use super::flatten::{tree_to_list, Child, Tree};
use super::group_overrides::Overrides;
use super::repo::ConfigRepo;
use crate::error::{composition, ConfigError};
use crate::tree::limits::MAX_DEFAULTS_DEPTH;
use indexmap::IndexMap;
use std::collections::HashSet;

/// Hydra's own config (`HydraConf`, builtin/), put before the primary config in every list.
pub const HYDRA_CONFIG: &str = "hydra/config";

/// Compute the ordered list of configs to merge for `config_name` under `overrides`: Hydra's
/// own `hydra/config` subtree, then the primary config's.
/// `skip_missing` leaves `???` group defaults unset (used when sweeping).
pub fn create_defaults_list(
    repo: &ConfigRepo,
    config_name: &str,
    overrides: &mut Overrides,
    skip_missing: bool,
) -> Result<Vec<ResultDefault>, ConfigError> {
    build_list(repo, Some(config_name), overrides, skip_missing)
}

/// The list of `hydra/config` alone (Hydra's node with no primary config).
pub fn hydra_defaults_list(
    repo: &ConfigRepo,
    overrides: &mut Overrides,
) -> Result<Vec<ResultDefault>, ConfigError> {
    build_list(repo, None, overrides, false)
}

fn build_list(
    repo: &ConfigRepo,
    config_name: Option<&str>,
    overrides: &mut Overrides,
    skip_missing: bool,
) -> Result<Vec<ResultDefault>, ConfigError> {
    let mut b = Builder {
        repo,
        overrides,
        skip_missing,
        chain: Vec::new(),
    };
    // Hydra's virtual root: [hydra/config, primary], expanded last to first, so the primary's
    // `override hydra/...` entries are known before Hydra's own defaults list is read.
    let primary = match config_name {
        Some(name) => {
            let mut node = InputDefault::config(name, None);
            node.primary = true;
            let mut root = Tree {
                node,
                children: None,
            };
            b.expand(&mut root, true, false, None)?;
            Some(root)
        }
        None => None,
    };
    let mut hydra = Tree {
        node: InputDefault::config(HYDRA_CONFIG, None),
        children: None,
    };
    hydra.node.update_parent("", "");
    b.expand(&mut hydra, false, false, None)?;
    let mut out = Vec::new();
    tree_to_list(&hydra, None, &mut out);
    if let Some(root) = &primary {
        tree_to_list(root, None, &mut out);
    }
    let mut seen = HashSet::new();
    for r in &out {
        if let Some(k) = &r.override_key {
            if !r.is_self && !seen.insert(k.clone()) {
                return Err(composition(format!(
                    "{k} appears more than once in the final defaults list"
                )));
            }
        }
    }
    b.overrides.ensure_used()?;
    Ok(out)
}

struct Builder<'a> {
    repo: &'a ConfigRepo,
    overrides: &'a mut Overrides,
    skip_missing: bool,
    /// The configs being expanded, outermost first: a config met again is a cycle.
    chain: Vec<String>,
}

impl Builder<'_> {
    fn expand(
        &mut self,
        root: &mut Tree,
        is_root: bool,
        interpolated_subtree: bool,
        parent_path: Option<&str>,
    ) -> Result<(), ConfigError> {
        if is_root {
            root.node.update_parent("", "");
            if !self.repo.config_exists(&root.node.config_path()) {
                return Err(self.not_found(&root.node, parent_path));
            }
        }
        if !root.node.is_missing() {
            if let Some(loaded) = self.repo.load(&root.node.config_path())? {
                root.node
                    .set_package_header(loaded.package_header.as_deref());
            }
        }
        if self.overrides.is_deleted(&root.node) {
            let node = &mut root.node;
            self.overrides.delete(node);
            return Ok(());
        }
        self.overrides.set_known_choice(&root.node)?;
        if root.node.name().is_none()
            && matches!(
                root.node.kind,
                DefaultKind::Group {
                    value: GroupValue::Name(None),
                    ..
                }
            )
        {
            return Ok(());
        }
        if root.node.is_missing() {
            if self.skip_missing {
                return Ok(());
            }
            let key = root.node.override_key();
            let options = self.repo.group_options(&root.node.group_path());
            return Err(composition(format!(
                "You must specify '{key}', e.g, {key}=<OPTION>\nAvailable options:\n{}",
                options
                    .iter()
                    .map(|o| format!("\t{o}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            )));
        }
        let path = root.node.config_path();
        let Some(loaded) = self.repo.load(&path)? else {
            if root.node.optional {
                root.node.deleted = true;
                return Ok(());
            }
            return Err(self.not_found(&root.node, parent_path));
        };
        self.enter(&path)?;
        let mut defaults = loaded.defaults.clone();
        if !defaults.is_empty() || (is_root && !self.overrides.append_group_defaults.is_empty()) {
            validate_self(&root.node, &mut defaults)?;
        }
        if is_root {
            defaults.extend(self.overrides.append_group_defaults.clone());
        }
        self.update_overrides(&mut defaults, &root.node, interpolated_subtree)?;

        let parent_group = root.node.group_path();
        let parent_final_pkg = root.node.final_package(true);
        let mut children: Vec<Child> = Vec::new();
        for mut d in defaults.into_iter().rev() {
            if d.is_self() {
                d.update_parent(
                    root.node.parent_base_dir.as_deref().unwrap_or(""),
                    &root.node.get_package(true).unwrap_or_default(),
                );
                children.push(Child::Leaf(d));
                continue;
            }
            if d.is_override() {
                continue;
            }
            d.update_parent(&parent_group, &parent_final_pkg);
            if self.overrides.is_overridden(&d) {
                self.overrides.override_default_option(&mut d);
            }
            if let DefaultKind::Group {
                value: GroupValue::Options(opts),
                group,
                ..
            } = &d.kind
            {
                for item in opts.iter().rev() {
                    if item.contains("${") {
                        return Err(composition(format!(
                            "In '{path}': Defaults List interpolation is not supported in options list items"
                        )));
                    }
                    let mut node =
                        InputDefault::config(&format!("{group}/{item}"), d.package.clone());
                    node.optional = d.optional;
                    if d.is_external_append() {
                        node.kind = DefaultKind::Config {
                            path: format!("{}/{item}", d.group_path()),
                        };
                        node.update_parent("", "");
                    } else {
                        node.update_parent(&parent_group, &parent_final_pkg);
                    }
                    children.push(self.child(node, interpolated_subtree, &path)?);
                }
                continue;
            }
            if d.is_interpolation() {
                children.push(Child::Leaf(d));
                continue;
            }
            children.push(self.child(d, interpolated_subtree, &path)?);
        }
        // Deferred interpolated defaults: resolved against the choices known now.
        for c in children.iter_mut() {
            let Child::Leaf(d) = c else { continue };
            if !d.is_interpolation() {
                continue;
            }
            let mut d2 = d.clone();
            let name = d2.name().unwrap_or_default();
            let resolved = resolve_choice_interpolation(&name, &self.overrides.known_choices)?;
            if let DefaultKind::Group { value, .. } = &mut d2.kind {
                *value = GroupValue::Name(Some(resolved));
            }
            let mut t = Tree {
                node: d2,
                children: None,
            };
            self.expand(&mut t, false, true, Some(&path))?;
            *c = if t.children.is_some() {
                Child::Tree(t)
            } else {
                Child::Leaf(t.node)
            };
        }
        if !children.is_empty() {
            children.reverse();
            root.children = Some(children);
        }
        self.chain.pop();
        Ok(())
    }

    /// Start expanding the config at `path`: refuse a cycle (Hydra 1.3.2 recurses until Python's
    /// RecursionError) and a tree deeper than the bound.
    fn enter(&mut self, path: &str) -> Result<(), ConfigError> {
        let chain = |extra: &str| {
            let mut c: Vec<&str> = self.chain.iter().map(String::as_str).collect();
            c.push(extra);
            if c.len() > 12 {
                c.splice(4..c.len() - 4, ["…"]);
            }
            c.join(" -> ")
        };
        let parent = self.chain.last().cloned().unwrap_or_default();
        if self.chain.iter().any(|p| p == path) {
            return Err(composition(format!(
                "In '{parent}': Circular reference in the defaults list: {}\n  fix: remove the entry of '{path}' from the defaults list of '{parent}' (or of another config on this chain)",
                chain(path)
            )));
        }
        if self.chain.len() >= MAX_DEFAULTS_DEPTH {
            return Err(composition(format!(
                "In '{parent}': the defaults list nests more than {MAX_DEFAULTS_DEPTH} configs: {}",
                chain(path)
            )));
        }
        self.chain.push(path.to_string());
        Ok(())
    }

    fn child(
        &mut self,
        d: InputDefault,
        interpolated: bool,
        parent_path: &str,
    ) -> Result<Child, ConfigError> {
        let mut t = Tree {
            node: d,
            children: None,
        };
        self.expand(&mut t, false, interpolated, Some(parent_path))?;
        Ok(if t.children.is_some() {
            Child::Tree(t)
        } else {
            Child::Leaf(t.node)
        })
    }

    fn update_overrides(
        &mut self,
        defaults: &mut [InputDefault],
        parent: &InputDefault,
        interpolated_subtree: bool,
    ) -> Result<(), ConfigError> {
        let mut seen_override: Option<InputDefault> = None;
        let parent_path = parent.config_path();
        for d in defaults.iter_mut() {
            if d.is_self() {
                continue;
            }
            d.update_parent(&parent.group_path(), &parent.final_package(true));
            if let Some(last) = &seen_override {
                if !(d.is_override() || d.is_external_append()) {
                    return Err(composition(format!(
                        "In {parent_path}: Override '{} : {}' is defined before '{}: {}'.\nOverrides must be at the end of the defaults list",
                        last.override_key(),
                        last.name().unwrap_or_default(),
                        d.override_key(),
                        d.name().unwrap_or_default()
                    )));
                }
            }
            if d.is_override() {
                if interpolated_subtree {
                    return Err(composition(format!(
                        "{parent_path}: Default List Overrides are not allowed in the subtree of an in interpolated config group (override {}={}).",
                        d.override_key(),
                        d.name().unwrap_or_default()
                    )));
                }
                seen_override = Some(d.clone());
                self.overrides.add_override(&parent_path, d);
            }
        }
        Ok(())
    }

    fn not_found(&self, d: &InputDefault, parent_path: Option<&str>) -> ConfigError {
        if d.primary {
            return composition(format!(
                "Cannot find primary config '{}'. Check that it's in your config search path: {}",
                d.config_path(),
                self.repo.root().display()
            ));
        }
        let mut msg = match &d.kind {
            DefaultKind::Group { .. } => {
                let group = d.group_path();
                let options = self.repo.group_options(&group);
                let mut m = format!("Could not find '{}'\n", d.config_path());
                if !options.is_empty() {
                    m.push_str(&format!(
                        "\nAvailable options in '{group}':\n{}",
                        options
                            .iter()
                            .map(|o| format!("\t{o}"))
                            .collect::<Vec<_>>()
                            .join("\n")
                    ));
                }
                m
            }
            DefaultKind::Config { .. } => format!("Could not load '{}'.\n", d.config_path()),
        };
        if let Some(p) = parent_path {
            msg = format!("In '{p}': {msg}");
        }
        msg.push_str(&format!(
            "\nConfig search path:\n{}",
            self.repo.search_path_lines()
        ));
        composition(msg)
    }
}

fn resolve_choice_interpolation(
    name: &str,
    choices: &IndexMap<String, Option<String>>,
) -> Result<String, ConfigError> {
    let mut out = String::new();
    let mut rest = name;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let end = rest[i..]
            .find('}')
            .ok_or_else(|| composition(format!("Error resolving interpolation '{name}'")))?;
        let key = &rest[i + 2..i + end];
        match choices.get(key) {
            Some(Some(v)) => out.push_str(v),
            _ => {
                let keys: Vec<&str> = choices.keys().map(String::as_str).collect();
                return Err(composition(format!(
                    "Error resolving interpolation '{name}', possible interpolation keys: {}",
                    keys.join(", ")
                )));
            }
        }
        rest = &rest[i + end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn validate_self(
    containing: &InputDefault,
    defaults: &mut Vec<InputDefault>,
) -> Result<(), ConfigError> {
    let mut has_self = false;
    let mut has_non_override = false;
    for d in defaults.iter() {
        if !d.is_override() {
            has_non_override = true;
        }
        if d.is_self() {
            if has_self {
                return Err(composition(format!(
                    "Duplicate _self_ defined in {}",
                    containing.config_path()
                )));
            }
            has_self = true;
        }
    }
    if (!has_self && has_non_override) || defaults.is_empty() {
        defaults.push(InputDefault::config("_self_", None));
    }
    Ok(())
}
