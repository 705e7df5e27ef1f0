//! One entry of a Hydra 1.3 defaults list (`hydra/core/default_element.py`): `InputDefault` as read
//! from a `defaults:` item, with its group path, config path, package and override key, and the
//! `ResultDefault` the algorithm emits. No file access and no list algorithm (list.rs).
use crate::tree::node::Node;

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

    pub(super) fn is_override(&self) -> bool {
        matches!(
            self.kind,
            DefaultKind::Group {
                is_override: true,
                ..
            }
        )
    }

    pub(super) fn is_external_append(&self) -> bool {
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

    pub(super) fn get_package(&self, default_to_header: bool) -> Option<String> {
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

    pub(super) fn update_parent(&mut self, base_dir: &str, package: &str) {
        self.parent_base_dir = Some(base_dir.to_string());
        self.parent_package = Some(package.to_string());
        if let Some(p) = &self.package {
            if p.contains("_group_") {
                let resolved = p.replace("_group_", &self.default_package());
                self.package = Some(format!("_global_.{resolved}"));
            }
        }
    }

    pub(super) fn set_package_header(&mut self, header: Option<&str>) {
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

    pub(super) fn is_missing(&self) -> bool {
        self.name().as_deref() == Some("???")
    }

    pub(super) fn is_interpolation(&self) -> bool {
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
        let item = crate::tree::yaml_read::parse("optional profiling@pipeline.ncu: ncu").unwrap();
        let d = InputDefault::from_yaml(&item).unwrap();
        assert!(d.optional);
        assert_eq!(d.package.as_deref(), Some("pipeline.ncu"));
        let item = crate::tree::yaml_read::parse("override /model: qwen").unwrap();
        let d = InputDefault::from_yaml(&item).unwrap();
        assert!(d.is_override());
        assert!(
            InputDefault::from_yaml(&crate::tree::yaml_read::parse("{a: 1, b: 2}").unwrap())
                .is_err()
        );
    }
}
