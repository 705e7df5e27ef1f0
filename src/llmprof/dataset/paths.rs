//! Where a relative data path points (a dataset root, a subset list, a model folder).
use std::path::{Path, PathBuf};

/// Where a relative `path` points: under `cwd` when it exists there, else under `repo` (the
/// repository holding the config directory) when it exists there, else under `cwd` (so errors
/// name the place the user meant).
pub fn absolute(path: &str, cwd: &Path, repo: Option<&Path>) -> PathBuf {
    let p = Path::new(path);
    if p.is_absolute() {
        return p.to_path_buf();
    }
    let here = cwd.join(p);
    if here.exists() {
        return here;
    }
    match repo.map(|r| r.join(p)) {
        Some(there) if there.exists() => there,
        _ => here,
    }
}
