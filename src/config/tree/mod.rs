//! The OmegaConf layer, below everything Hydra: the config tree, its YAML reader, YAML and JSON
//! writers, merge and update rules, interpolation, and the scalar and token rules they share. Knows
//! nothing of config files, groups, defaults lists or command-line overrides.
pub mod interpolate;
mod json_write;
pub(crate) mod lex;
pub mod limits;
pub mod merge;
pub mod node;
pub mod scalar;
pub mod update;
pub mod yaml_read;
#[cfg(test)]
mod yaml_read_tests;
mod yaml_write;
