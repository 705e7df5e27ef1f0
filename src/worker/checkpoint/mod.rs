//! Reading checkpoints, for every family: safetensors files (headers and offsets checked before
//! anything is read, docs/security.md) and tensors found under their official names. A family
//! names its tensors; this reads them.
pub mod safetensors;
pub mod tensors;

/// The `config.json` beside a checkpoint: in `weights` when it is a folder, else in the folder of
/// the file; `None` when there is none.
pub fn config_json_beside(weights: &std::path::Path) -> Option<std::path::PathBuf> {
    let dir = if weights.is_dir() {
        Some(weights)
    } else {
        weights.parent()
    };
    dir.map(|d| d.join("config.json")).filter(|p| p.is_file())
}
