//! Hydra 1.3 defaults lists (`hydra/_internal/defaults_list.py`, `hydra/core/default_element.py`):
//! builds the defaults tree from the primary config and the group overrides, in Hydra's order
//! (children expanded last-to-first so later `override` entries win), and flattens it into the
//! ordered list of (config path, package) to merge. No merging happens here.
use super::error::{composition, ConfigError};
use super::node::Node;
use super::overrides::{Element, Override, OverrideKind};
use super::repo::ConfigRepo;
use indexmap::IndexMap;
use std::collections::{HashMap, HashSet};

#[derive(Debug, Clone, PartialEq)]
pub enum GroupValue {
    Name(Option<String>),
    Options(Vec<String>),
}

#[derive(Debug, Clone, PartialEq)]
pub enum DefaultKind {
    /// `- path/to/config` or `_self_`.
    Config { path: String },
    /// `- group: option` with its keywords.
    Group {
        group: String,
        value: GroupValue,
        is_override: bool,
        external_append: bool,
    },
}

/// One entry of a defaults list (Hydra's InputDefault).
#[derive(Debug, Clone, PartialEq)]
pub struct InputDefault {
    pub kind: DefaultKind,
    pub package: Option<String>,
    pub optional: bool,
    pub parent_base_dir: Option<String>,
    pub parent_package: Option<String>,
    pub package_header: Option<String>,
    pub primary: bool,
    pub deleted: bool,
}

/// One config to merge, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct ResultDefault {
    pub config_path: String,
    pub package: String,
    pub is_self: bool,
    pub primary: bool,
    pub override_key: Option<String>,
}

impl InputDefault {
    fn new(kind: DefaultKind) -> Self {
        Self {
            kind,
            package: None,
            optional: false,
            parent_base_dir: None,
            parent_package: None,
            package_header: None,
            primary: false,
            deleted: false,
        }
    }

    pub fn config(path: &str, package: Option<String>) -> Self {
        let mut d = Self::new(DefaultKind::Config {
            path: path.to_string(),
        });
        d.package = package.map(|p| if p == "_here_" { String::new() } else { p });
        d
    }

    pub fn group(group: &str, value: GroupValue, package: Option<String>) -> Self {
        let mut d = Self::new(DefaultKind::Group {
            group: group.to_string(),
            value,
            is_override: false,
            external_append: false,
        });
        d.package = package.map(|p| if p == "_here_" { String::new() } else { p });
        d
    }

    /// Parse one item of a `defaults:` list as written in YAML.
    pub fn from_yaml(item: &Node) -> Result<Self, String> {
        match item {
            Node::Str(s) => {
                let (path, package) = split_group(s);
                Ok(Self::config(&path, package))
            }
            Node::Map(m) => {
                if m.len() != 1 {
                    return Err(if m.is_empty() {
                        "Missing group name in a defaults item".to_string()
                    } else {
                        format!(
                            "Too many keys in default item {}",
                            Node::Map(m.clone()).to_python_str()
                        )
                    });
                }
                let (key, value) = m.iter().next().expect("one entry");
                let words: Vec<&str> = key.split(' ').filter(|w| !w.is_empty()).collect();
                let (keywords, last) = words.split_at(words.len().saturating_sub(1));
                let mut optional = false;
                let mut is_override = false;
                for w in keywords {
                    match *w {
                        "optional" => optional = true,
                        "override" => is_override = true,
                        other => return Err(format!("unknown keyword '{other}' in defaults item '{key}' (use optional/override)")),
                    }
                }
                let group_pkg = last.first().copied().unwrap_or("");
                let (group, package) = split_group(group_pkg);
                if group.is_empty() {
                    return Err(format!("Missing group name in defaults item '{key}'"));
                }
                let value = match value {
                    Node::Null => GroupValue::Name(None),
                    Node::Str(s) => GroupValue::Name(Some(s.clone())),
                    Node::Missing => GroupValue::Name(Some("???".into())),
                    Node::List(items) => GroupValue::Options(
                        items
                            .iter()
                            .map(|i| match i {
                                Node::Str(s) => Ok(s.clone()),
                                other => Err(format!(
                                    "Unsupported item value in defaults : {}, nested list items must be strings",
                                    other.type_name()
                                )),
                            })
                            .collect::<Result<_, _>>()?,
                    ),
                    other => {
                        return Err(format!(
                            "Unsupported item value in defaults : {}. Supported: string or list",
                            other.type_name()
                        ))
                    }
                };
                let mut d = Self::group(&group, value, package);
                d.optional = optional;
                if let DefaultKind::Group { is_override: o, .. } = &mut d.kind {
                    *o = is_override;
                }
                Ok(d)
            }
            other => Err(format!(
                "Unsupported type in defaults : {}",
                other.type_name()
            )),
        }
    }

    pub fn is_self(&self) -> bool {
        match &self.kind {
            DefaultKind::Config { path } => path == "_self_",
            DefaultKind::Group { value, .. } => *value == GroupValue::Name(Some("_self_".into())),
        }
    }

    fn is_override(&self) -> bool {
        matches!(
            self.kind,
            DefaultKind::Group {
                is_override: true,
                ..
            }
        )
    }

    fn is_external_append(&self) -> bool {
        matches!(
            self.kind,
            DefaultKind::Group {
                external_append: true,
                ..
            }
        )
    }

    pub fn group_path(&self) -> String {
        let base = self.parent_base_dir.clone().unwrap_or_default();
        match &self.kind {
            DefaultKind::Config { path } => {
                let (p, absolute) = strip_abs(path);
                let group = p.rfind('/').map(|i| &p[..i]).unwrap_or("");
                if absolute || base.is_empty() {
                    group.to_string()
                } else if group.is_empty() {
                    base
                } else {
                    format!("{base}/{group}")
                }
            }
            DefaultKind::Group { group, .. } => {
                let (g, absolute) = strip_abs(group);
                if base.is_empty() || absolute {
                    g.to_string()
                } else {
                    format!("{base}/{g}")
                }
            }
        }
    }

    pub fn name(&self) -> Option<String> {
        match &self.kind {
            DefaultKind::Config { path } => {
                Some(path.rsplit('/').next().unwrap_or(path).to_string())
            }
            DefaultKind::Group {
                value: GroupValue::Name(n),
                ..
            } => n.clone(),
            DefaultKind::Group {
                value: GroupValue::Options(_),
                ..
            } => None,
        }
    }

    pub fn config_path(&self) -> String {
        match &self.kind {
            DefaultKind::Config { path } => {
                let (p, absolute) = strip_abs(path);
                let base = self.parent_base_dir.clone().unwrap_or_default();
                if absolute || base.is_empty() {
                    p.to_string()
                } else {
                    format!("{base}/{p}")
                }
            }
            DefaultKind::Group { .. } => {
                format!(
                    "{}/{}",
                    self.group_path(),
                    self.name().unwrap_or_else(|| "None".into())
                )
            }
        }
    }

    fn default_package(&self) -> String {
        self.group_path().replace('/', ".")
    }

    fn relative_group_path(&self) -> String {
        match &self.kind {
            DefaultKind::Config { path } => {
                let (p, _) = strip_abs(path);
                p.rfind('/').map(|i| p[..i].to_string()).unwrap_or_default()
            }
            DefaultKind::Group { group, .. } => strip_abs(group).0.to_string(),
        }
    }

    fn get_package(&self, default_to_header: bool) -> Option<String> {
        if self.package.is_none() && default_to_header {
            self.package_header.clone()
        } else {
            self.package.clone()
        }
    }

    pub fn final_package(&self, default_to_header: bool) -> String {
        let parent = self.parent_package.clone().unwrap_or_default();
        let package = self
            .get_package(default_to_header)
            .unwrap_or_else(|| self.relative_group_path().replace('/', "."));
        let ret = if parent.is_empty() {
            package
        } else if package.is_empty() {
            parent
        } else {
            format!("{parent}.{package}")
        };
        match ret.rfind("_global_") {
            None => ret,
            Some(i) => ret
                .get(i + "_global_".len() + 1..)
                .unwrap_or("")
                .to_string(),
        }
    }

    pub fn override_key(&self) -> String {
        let default_pkg = self.default_package();
        let final_pkg = self.final_package(false);
        let key = self.group_path();
        if default_pkg != final_pkg {
            let p = if final_pkg.is_empty() {
                "_global_".to_string()
            } else {
                final_pkg
            };
            format!("{key}@{p}")
        } else {
            key
        }
    }

    fn relative_override_key(&self) -> String {
        let DefaultKind::Group { group, .. } = &self.kind else {
            return self.config_path();
        };
        match &self.package {
            Some(p) if *p != self.default_package() => format!("{group}@{p}"),
            _ => group.clone(),
        }
    }

    fn update_parent(&mut self, base_dir: &str, package: &str) {
        self.parent_base_dir = Some(base_dir.to_string());
        self.parent_package = Some(package.to_string());
        if let Some(p) = &self.package {
            if p.contains("_group_") {
                let resolved = p.replace("_group_", &self.default_package());
                self.package = Some(format!("_global_.{resolved}"));
            }
        }
    }

    fn set_package_header(&mut self, header: Option<&str>) {
        let Some(h) = header else { return };
        let h = if h == "_global_" || h.starts_with("_global_.") {
            h.to_string()
        } else if h.is_empty() {
            "_global_".to_string()
        } else if h == "_group_" {
            // Hydra 1.3 keeps `_group_` literal here, then update_parent-like expansion does not
            // apply to headers; expand it to the group path, which is what every user means.
            format!("_global_.{}", self.default_package())
        } else {
            format!("_global_.{h}")
        };
        self.package_header = Some(h);
    }

    fn is_missing(&self) -> bool {
        self.name().as_deref() == Some("???")
    }

    fn is_interpolation(&self) -> bool {
        matches!(&self.kind, DefaultKind::Group { value: GroupValue::Name(Some(n)), .. } if n.contains("${"))
    }
}

fn strip_abs(p: &str) -> (&str, bool) {
    match p.strip_prefix('/') {
        Some(r) => (r, true),
        None => (p, false),
    }
}

fn split_group(s: &str) -> (String, Option<String>) {
    match s.find('@') {
        None => (s.to_string(), None),
        Some(i) => {
            let pkg = &s[i + 1..];
            // `pkg:pkg2` renames are deprecated; keep the first part.
            let pkg = pkg.split(':').next().unwrap_or("");
            (s[..i].to_string(), Some(pkg.to_string()))
        }
    }
}

#[derive(Debug)]
struct OverrideMeta {
    external: bool,
    containing_config_path: Option<String>,
    used: bool,
    relative_key: Option<String>,
}

/// Group-level overrides collected from the command line and from `override` entries.
pub struct Overrides {
    choices: IndexMap<String, GroupValue>,
    meta: IndexMap<String, OverrideMeta>,
    append_group_defaults: Vec<InputDefault>,
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
            if o.kind == OverrideKind::Delete && is_group {
                let name = match value {
                    None => None,
                    Some(Element::Str { text, .. }) => Some(text.clone()),
                    Some(other) => {
                        return Err(composition(format!(
                        "Config group override deletion value must be a string : {} (got {other})",
                        o.input
                    )))
                    }
                };
                s.deletions.insert(o.key_without_prefix(), (name, false));
            } else if is_dict || !is_group {
                s.config_overrides.push(o.clone());
            } else if o.kind == OverrideKind::ForceAdd {
                return Err(composition(format!(
                    "force-add of config groups is not supported: '{}'",
                    o.input
                )));
            } else {
                let gv = match value {
                    Some(Element::Str { text, .. }) => GroupValue::Name(Some(text.clone())),
                    Some(Element::Null) => GroupValue::Name(None),
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
                    Some(other) => {
                        return Err(composition(format!(
                            "Config group override must be a string or a list. Got {} in '{}'",
                            match other {
                                Element::Int(_) => "int",
                                Element::Float(_) => "float",
                                Element::Bool(_) => "bool",
                                _ => "value",
                            },
                            o.input
                        )))
                    }
                    None => GroupValue::Name(None),
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
                            relative_key: None,
                        },
                    );
                }
            }
        }
        Ok(s)
    }

    fn add_override(&mut self, parent_config_path: &str, d: &InputDefault) {
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
                relative_key: Some(d.relative_override_key()),
            },
        );
    }

    fn is_overridden(&self, d: &InputDefault) -> bool {
        matches!(d.kind, DefaultKind::Group { .. }) && self.choices.contains_key(&d.override_key())
    }

    fn override_default_option(&mut self, d: &mut InputDefault) {
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

    fn set_known_choice(&mut self, d: &InputDefault) -> Result<(), ConfigError> {
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

    fn is_deleted(&self, d: &InputDefault) -> bool {
        if !matches!(d.kind, DefaultKind::Group { .. }) {
            return false;
        }
        match self.deletions.get(&d.override_key()) {
            Some((None, _)) => true,
            Some((Some(name), _)) => Some(name.clone()) == d.name(),
            None => false,
        }
    }

    fn delete(&mut self, d: &mut InputDefault) {
        d.deleted = true;
        if let Some(e) = self.deletions.get_mut(&d.override_key()) {
            e.1 = true;
        }
    }

    fn ensure_used(&self) -> Result<(), ConfigError> {
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
                if let Some(rk) = &meta.relative_key {
                    let _ = rk;
                }
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

enum Child {
    Leaf(InputDefault),
    Tree(Tree),
}

struct Tree {
    node: InputDefault,
    children: Option<Vec<Child>>,
}

/// Compute the ordered list of configs to merge for `config_name` under `overrides`.
/// `skip_missing` leaves `???` group defaults unset (used when sweeping).
pub fn create_defaults_list(
    repo: &ConfigRepo,
    config_name: &str,
    overrides: &mut Overrides,
    skip_missing: bool,
) -> Result<Vec<ResultDefault>, ConfigError> {
    let mut primary = InputDefault::config(config_name, None);
    primary.primary = true;
    let mut root = Tree {
        node: primary,
        children: None,
    };
    let mut b = Builder {
        repo,
        overrides,
        skip_missing,
    };
    b.expand(&mut root, true, false, None)?;
    let mut out = Vec::new();
    tree_to_list(&root, None, &mut out);
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
        let mut defaults = loaded.defaults.clone();
        let has_content = loaded.config.as_map().is_some_and(|m| !m.is_empty());
        let _ = has_content;
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
            "\nConfig search path:\n\tprovider=main, path=file://{}",
            self.repo.root().display()
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

fn tree_to_list(tree: &Tree, parent: Option<&Tree>, out: &mut Vec<ResultDefault>) {
    match &tree.children {
        None => collect(parent, &tree.node, out),
        Some(children) if children.is_empty() => collect(parent, &tree.node, out),
        Some(children) => {
            for c in children {
                match c {
                    Child::Leaf(d) => collect(Some(tree), d, out),
                    Child::Tree(t) => tree_to_list(t, Some(tree), out),
                }
            }
        }
    }
}

fn collect(tree: Option<&Tree>, node: &InputDefault, out: &mut Vec<ResultDefault>) {
    if node.deleted || node.is_missing() {
        return;
    }
    if node.name().is_none() {
        return;
    }
    if node.is_self() {
        let t = tree.expect("_self_ always has a containing config");
        out.push(ResultDefault {
            config_path: t.node.config_path(),
            package: t.node.final_package(true),
            is_self: true,
            primary: t.node.primary,
            override_key: None,
        });
    } else {
        out.push(ResultDefault {
            config_path: node.config_path(),
            package: node.final_package(true),
            is_self: false,
            primary: node.primary,
            override_key: matches!(node.kind, DefaultKind::Group { .. })
                .then(|| node.override_key()),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn override_key_names_the_package_when_it_differs() {
        let mut d = InputDefault::group(
            "profiling",
            GroupValue::Name(Some("nsys".into())),
            Some("pipeline.nsys".into()),
        );
        d.update_parent("", "");
        assert_eq!(d.override_key(), "profiling@pipeline.nsys");
        assert_eq!(d.final_package(true), "pipeline.nsys");
        let mut d = InputDefault::group("model", GroupValue::Name(Some("x".into())), None);
        d.update_parent("", "");
        assert_eq!(d.override_key(), "model");
        assert_eq!(d.config_path(), "model/x");
    }

    #[test]
    fn nested_group_paths_are_relative_to_the_parent() {
        let mut d = InputDefault::group("arch", GroupValue::Name(Some("tiny".into())), None);
        d.update_parent("model", "model");
        assert_eq!(d.config_path(), "model/arch/tiny");
        assert_eq!(d.final_package(true), "model.arch");
        let mut c = InputDefault::config("base", None);
        c.update_parent("dataset", "dataset");
        assert_eq!(c.config_path(), "dataset/base");
        assert_eq!(c.final_package(true), "dataset");
    }

    #[test]
    fn global_package_header_wins() {
        let mut d = InputDefault::group("hardware", GroupValue::Name(Some("a100".into())), None);
        d.update_parent("", "");
        d.set_package_header(Some("_global_"));
        assert_eq!(d.final_package(true), "");
        assert_eq!(d.override_key(), "hardware");
    }

    #[test]
    fn yaml_items_parse_keywords_and_packages() {
        let item = crate::yaml::parse("optional profiling@pipeline.ncu: ncu").unwrap();
        let d = InputDefault::from_yaml(&item).unwrap();
        assert!(d.optional);
        assert_eq!(d.package.as_deref(), Some("pipeline.ncu"));
        let item = crate::yaml::parse("override /model: qwen").unwrap();
        let d = InputDefault::from_yaml(&item).unwrap();
        assert!(d.is_override());
        assert!(
            InputDefault::from_yaml(&crate::yaml::parse("{a: 1, b: 2}").unwrap()).is_err()
        );
    }
}
