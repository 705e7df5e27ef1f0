//! Hydra 1.3-compatible config composition: `compose(request) -> Composed` (an untyped tree plus
//! Hydra's own node). The facade: module declarations and the public names, nothing else; the work
//! is in tree/ (OmegaConf), overrides/, defaults/, hydra_node, hydra_schema, loader, composed and
//! sweep.
pub mod builtin;
pub mod composed;
pub mod defaults;
pub mod error;
pub mod hydra_node;
pub mod hydra_schema;
pub mod loader;
pub mod overrides;
pub mod sweep;
pub mod tree;

pub use composed::Composed;
pub use defaults::{list_groups, repo};
pub use error::ConfigError;
pub use loader::{
    compose, compose_at, hydra_defaults, parse_overrides, suggest_key, ComposeRequest,
};
pub use tree::node::{Map, Node};
pub use tree::{interpolate, merge, node};

/// The YAML reader under its old path (`yaml::parse`); writing is `Node::to_yaml`.
pub mod yaml {
    pub use crate::tree::yaml_read::{package_header, parse, resolve_plain_scalar, YamlError};
}
