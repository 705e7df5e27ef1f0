//! The types of Hydra's own node (`hydra/conf/__init__.py`, the `HydraConf` dataclasses), which
//! make OmegaConf refuse what an untyped node would take: a dict for a string field, a scalar for
//! a dataclass, `null` for a field that is not Optional, a key a dataclass does not declare, a
//! value that does not convert (`hydra.job.chdir=abc`). Checks only; the node is hydra_node's.
use crate::tree::interpolate::is_interpolation;
use crate::tree::node::Node;

#[derive(Clone, Copy)]
enum Kind {
    Struct(&'static str, &'static [(&'static str, Kind)]),
    Str {
        optional: bool,
    },
    Int,
    OptBool,
    /// `Optional[RunMode]`.
    Mode,
    List,
    Dict,
    Any,
}

use Kind::*;

const STR: Kind = Str { optional: false };
const OPT_STR: Kind = Str { optional: true };
const HELP: &[(&str, Kind)] = &[
    ("app_name", STR),
    ("header", STR),
    ("footer", STR),
    ("template", STR),
];
const HYDRA_HELP: &[(&str, Kind)] = &[("hydra_help", STR), ("template", STR)];
const RUN_DIR: &[(&str, Kind)] = &[("dir", STR)];
const SWEEP_DIR: &[(&str, Kind)] = &[("dir", STR), ("subdir", STR)];
const OVERRIDES: &[(&str, Kind)] = &[("hydra", List), ("task", List)];
const OVERRIDE_DIRNAME: &[(&str, Kind)] =
    &[("kv_sep", STR), ("item_sep", STR), ("exclude_keys", List)];
const JOB_CONFIG: &[(&str, Kind)] = &[(
    "override_dirname",
    Struct("OverrideDirname", OVERRIDE_DIRNAME),
)];
const JOB: &[(&str, Kind)] = &[
    ("name", STR),
    ("chdir", OptBool),
    ("override_dirname", STR),
    ("id", STR),
    ("num", Int),
    ("config_name", OPT_STR),
    ("env_set", Dict),
    ("env_copy", List),
    ("config", Struct("JobConfig", JOB_CONFIG)),
];
const RUNTIME: &[(&str, Kind)] = &[
    ("version", STR),
    ("version_base", STR),
    ("cwd", STR),
    ("config_sources", List),
    ("output_dir", STR),
    ("choices", Dict),
];
const HYDRA: Kind = Struct(
    "HydraConf",
    &[
        ("defaults", List),
        ("mode", Mode),
        ("searchpath", List),
        ("run", Struct("RunDir", RUN_DIR)),
        ("sweep", Struct("SweepDir", SWEEP_DIR)),
        ("hydra_logging", Dict),
        ("job_logging", Dict),
        ("sweeper", Any),
        ("launcher", Any),
        ("callbacks", Dict),
        ("help", Struct("HelpConf", HELP)),
        ("hydra_help", Struct("HydraHelpConf", HYDRA_HELP)),
        ("output_subdir", OPT_STR),
        ("overrides", Struct("OverridesConf", OVERRIDES)),
        ("job", Struct("JobConf", JOB)),
        ("runtime", Struct("RuntimeConf", RUNTIME)),
        ("verbose", Any),
    ],
);

/// A value OmegaConf would refuse: its exception class and message.
#[derive(Debug, PartialEq)]
pub struct SchemaError {
    pub class: &'static str,
    pub message: String,
}

/// Check a config's `hydra:` section before it is merged into Hydra's node.
pub fn check_section(section: &Node) -> Result<(), SchemaError> {
    check(HYDRA, section, "hydra", false)
}

/// Check the value of an override of `hydra.<key>` (`hydra_key` without the `hydra.`);
/// `new_keys` when the override may add keys (`+`, `++`).
pub fn check_override(hydra_key: &str, value: &Node, new_keys: bool) -> Result<(), SchemaError> {
    let mut kind = HYDRA;
    let mut path = "hydra".to_string();
    for seg in hydra_key.split('.').filter(|s| !s.is_empty()) {
        let Struct(_, fields) = kind else {
            return Ok(()); // inside a Dict, a List or Any: untyped
        };
        match fields.iter().find(|(k, _)| *k == seg) {
            Some((_, k)) => kind = *k,
            None => return Ok(()), // a key the node lacks: the update reports it
        }
        path = format!("{path}.{seg}");
    }
    check(kind, value, &path, new_keys)
}

fn check(kind: Kind, v: &Node, path: &str, new_keys: bool) -> Result<(), SchemaError> {
    let invalid = |message: String| {
        Err(SchemaError {
            class: "ValidationError",
            message: format!("{message}\n    full_key: {path}"),
        })
    };
    let not_optional = || invalid(format!("field '{path}' is not Optional"));
    let container = |n: &Node| match n {
        Node::Map(_) => "DictConfig",
        _ => "ListConfig",
    };
    // Interpolations and `???` are allowed in every typed field.
    if matches!(v, Node::Missing) || matches!(v, Node::Str(s) if is_interpolation(s)) {
        return Ok(());
    }
    match (kind, v) {
        (Any, _) => Ok(()),
        (Struct(..) | Dict | List | Int, Node::Null) | (Str { optional: false }, Node::Null) => {
            not_optional()
        }
        (Struct(name, fields), Node::Map(m)) => {
            for (k, item) in m {
                match fields.iter().find(|(f, _)| f == k) {
                    Some((_, kind)) => check(*kind, item, &format!("{path}.{k}"), new_keys)?,
                    None if new_keys => {}
                    None => {
                        return Err(SchemaError {
                            class: "ConfigKeyError",
                            message: format!("Key '{k}' not in '{name}'\n    full_key: {path}.{k}"),
                        })
                    }
                }
            }
            Ok(())
        }
        (Struct(name, _), other) => invalid(format!(
            "Merge error: {} is not a subclass of {name}. value: {}",
            other.type_name(),
            other.to_python_str()
        )),
        (Dict, Node::Map(_)) | (List, Node::List(_)) => Ok(()),
        (Dict, other) => invalid(format!(
            "Cannot assign {} to a dict field",
            other.type_name()
        )),
        (List, other) => invalid(format!(
            "Invalid value assigned: {} is not a ListConfig, list or tuple.",
            other.type_name()
        )),
        (_, n @ (Node::Map(_) | Node::List(_))) => invalid(format!(
            "Cannot convert '{}' to {}: '{}'",
            container(n),
            match kind {
                Int => "int",
                OptBool => "bool",
                _ => "string",
            },
            n.to_python_str()
        )),
        (Str { .. } | OptBool | Mode, Node::Null) => Ok(()),
        (Str { .. }, _) => Ok(()),
        (Int, Node::Int(_)) => Ok(()),
        (Int, Node::Str(s)) if s.trim().parse::<i64>().is_ok() => Ok(()),
        (Int, other) => invalid(format!(
            "Value '{}' of type '{}' could not be converted to Integer",
            other.to_python_str(),
            other.type_name()
        )),
        (OptBool, Node::Bool(_) | Node::Int(_)) => Ok(()),
        (OptBool, Node::Str(s))
            if matches!(
                s.to_ascii_lowercase().as_str(),
                "y" | "yes" | "on" | "true" | "1" | "n" | "no" | "off" | "false" | "0"
            ) =>
        {
            Ok(())
        }
        (OptBool, other) => invalid(format!(
            "Value '{}' is not a valid bool (type {})",
            other.to_python_str(),
            other.type_name()
        )),
        (Mode, Node::Str(s)) if s == "RUN" || s == "MULTIRUN" => Ok(()),
        (Mode, other) => invalid(format!(
            "Invalid value '{}', expected one of [RUN, MULTIRUN]",
            other.to_python_str()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::yaml_read::parse;

    fn section(y: &str) -> Result<(), SchemaError> {
        check_section(&parse(y).unwrap())
    }

    #[test]
    fn typed_fields_refuse_what_omegaconf_refuses() {
        assert!(
            section("run: {dir: out}\njob: {chdir: true, env_set: {A: b}}\nverbose: 1").is_ok()
        );
        assert!(section("job_logging: {x: [1]}\nlauncher: 5\nrun: {dir: '${x}'}").is_ok());
        assert_eq!(section("newkey: 5").unwrap_err().class, "ConfigKeyError");
        for bad in [
            "job: {name: {x: 1}}",
            "run: 5",
            "run: null",
            "run: {dir: null}",
            "job: {num: abc}",
            "job: {chdir: abc}",
            "job: {env_set: 5}",
            "overrides: {task: 5}",
            "mode: WALK",
        ] {
            assert_eq!(section(bad).unwrap_err().class, "ValidationError", "{bad}");
        }
    }

    #[test]
    fn overrides_are_checked_at_their_key() {
        let v = |y: &str| parse(y).unwrap();
        assert!(check_override("job.chdir", &v("abc"), false).is_err());
        assert!(check_override("job.chdir", &v("yes"), false).is_ok());
        assert!(check_override("job.name", &v("[1]"), false).is_err());
        assert!(check_override("newkey", &v("1"), true).is_ok());
        assert!(check_override("job", &v("{newkey: 1}"), true).is_ok());
        assert!(check_override("job_logging.x.y", &v("{a: 1}"), false).is_ok());
    }
}
