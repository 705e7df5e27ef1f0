//! OmegaConf 2.3 interpolation (`${...}`): the grammar (grammar.rs) apart from its resolution over
//! a tree with the built-in resolvers (resolve.rs). Re-exports only.
mod grammar;
mod resolve;

pub use grammar::is_interpolation;
pub use resolve::{resolve_tree, resolve_value_at, InterpolationError, ResolveContext};
