//! A checkpoint's `config.json`, read as untrusted input (docs/security.md): a regular file only
//! (a FIFO or device is refused instead of read forever), at most [`MAX_BYTES`], parsed as JSON.
//! Every family's architecture reader and `model=hf` read it through here.
use anyhow::{bail, Context, Result};
use std::io::Read;
use std::path::Path;

/// A config.json larger than this is refused (released ones are a few KiB).
pub const MAX_BYTES: u64 = 4 << 20;

/// The parsed `config.json` at `file`.
pub fn read(file: &Path) -> Result<serde_json::Value> {
    let mut text = String::new();
    crate::dataset::file_kind::open_regular(file)
        .with_context(|| format!("reading {}", file.display()))?
        .take(MAX_BYTES + 1)
        .read_to_string(&mut text)
        .with_context(|| format!("reading {}", file.display()))?;
    if text.len() as u64 > MAX_BYTES {
        bail!(
            "{} is larger than {} MiB: not a model's config.json",
            file.display(),
            MAX_BYTES >> 20
        );
    }
    serde_json::from_str(&text).with_context(|| format!("{} is not JSON", file.display()))
}
