//! Command-line override grammar of Hydra 1.3 (`hydra/grammar/Override{Lexer,Parser}.g4`), cut as
//! Hydra cuts it: value types, lexer, parser and grammar functions. Parsing only: no file I/O and
//! no knowledge of the config tree. Re-exports only.
mod functions;
mod lexer;
mod parser;
#[cfg(test)]
mod tests;
mod types;

pub use parser::parse_override;
pub use types::{Element, Override, OverrideKind, ParseError, Sweep, Value};
