//! Printing results to stdout when the reader may be gone (`llmprof … | head`, a pager quit):
//! a closed pipe ends the output quietly, as `cat` does; any other write error is an error. Use
//! these instead of `print!`/`println!` (clippy's `disallowed_macros` enforces it, .clippy.toml).
use std::io::{ErrorKind, Write};

/// Writes `text` to stdout. A closed pipe is not an error: the output just ends.
pub fn print(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// [`print`] with a final newline.
pub fn println(text: &str) -> std::io::Result<()> {
    print(&format!("{text}\n"))
}
