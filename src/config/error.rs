//! Errors of config composition; each message names the problem and how to fix it. `ConfigError`
//! wraps the override parser's and interpolation's own errors (arrows go from here to them only).
use crate::overrides::ParseError;
use crate::tree::interpolate::InterpolationError;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {reason}")]
    Io { path: PathBuf, reason: String },
    #[error("malformed YAML in {path}:{line}:{column}: {reason}\n  fix: correct the YAML syntax at that line")]
    Yaml {
        path: PathBuf,
        line: usize,
        column: usize,
        reason: String,
    },
    #[error("invalid config file {path}: {reason}\n  fix: a config file holds `key: value` lines (a mapping) or nothing; to set one value, override its key on the command line (group.key=value)")]
    BadFile { path: PathBuf, reason: String },
    #[error("config directory '{0}' does not exist\n  fix: pass an existing folder with --config-dir, or run from the repository root (which has conf/)")]
    ConfigDirMissing(PathBuf),
    #[error("Cannot find primary config '{name}' in {dir}\n  fix: --config-name must name a .yaml file in the config directory (available: {available})")]
    PrimaryNotFound {
        name: String,
        dir: PathBuf,
        available: String,
    },
    /// Hydra's ConfigCompositionException / MissingConfigException, with the same wording.
    #[error("{0}")]
    Composition(String),
    #[error(transparent)]
    Override(#[from] ParseError),
    #[error(transparent)]
    Interpolation(#[from] InterpolationError),
}

pub fn composition(msg: impl Into<String>) -> ConfigError {
    ConfigError::Composition(msg.into())
}
