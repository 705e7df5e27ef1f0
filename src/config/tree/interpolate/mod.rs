//! OmegaConf 2.3 interpolation (`${...}`): the grammar (grammar.rs) apart from its resolution over
//! a tree (resolve.rs), resolver arguments (args.rs), finding nodes by key (reference.rs) and the built-in resolvers
//! (resolvers.rs). Re-exports only.
mod args;
mod grammar;
mod reference;
mod resolve;
mod resolvers;
#[cfg(test)]
mod tests;

pub use grammar::is_interpolation;
pub use reference::container_reference;
pub use resolve::{resolve_tree, resolve_value_at, InterpolationError, ResolveContext};
