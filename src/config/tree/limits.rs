//! Bounds on what one composition may build, so that no input recurses, allocates or loops
//! without bound (docs/fuzzing.md). Each bound sits well above what real Hydra 1.3.2 accepts
//! (Python's recursion limit ends its nesting at about 90 levels and its defaults lists at about
//! 470 configs), so no config Hydra composes is refused; past a bound the composer reports an
//! error where Hydra raises RecursionError or runs out of memory.

/// Nesting of containers in one YAML document, one override value or one interpolation, and the
/// number of segments of one dotted key or package.
pub const MAX_NESTING: usize = 256;

/// Configs nested in one defaults tree (a config, an option it lists, an option that one lists…).
pub const MAX_DEFAULTS_DEPTH: usize = 512;

/// Nodes one YAML document may expand to, aliases counted at their full size ("billion laughs").
pub const MAX_YAML_NODES: usize = 1_000_000;

/// Nested steps of one interpolation resolution (references to references, resolver arguments,
/// containers reached through interpolations).
pub const MAX_RESOLVE_DEPTH: usize = 512;

/// Work one resolution may do: values produced, one per 16 bytes of text built and one per
/// character of text parsed (interpolations that copy containers or strings, or decode text that
/// holds them, can grow a config exponentially). About 100 MiB at most.
pub const MAX_RESOLVE_WORK: usize = 1_000_000;

/// Jobs one multirun may expand to (and items one `range()` sweep may hold).
pub const MAX_SWEEP_JOBS: usize = 100_000;

/// The error text for a nesting bound.
pub fn too_deep(what: &str, limit: usize) -> String {
    format!("{what} is nested more than {limit} levels deep")
}
