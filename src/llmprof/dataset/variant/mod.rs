//! Dataset variants (docs/datasets.md): `datasets/<dataset>/<variant>/` holds a subset of the
//! source data and a `metadata.yaml` recording where it came from. `make.rs` creates one,
//! `dataset.variant=<name>` selects one for a run (`apply_variant`, in the front end), and the
//! worker records it in inputs.yaml (`variant_of`).
mod make;
mod metadata;
mod select;
mod source;

pub use make::{check_name, make_variant, VariantRequest};
pub use metadata::{Layout, Selection, VariantMetadata, VariantSize, VARIANT_METADATA};
pub use select::choose;

use crate::config::Node;
use crate::dataset::DatasetSpec;
use anyhow::{bail, Result};
use std::path::{Path, PathBuf};

/// The folder of `variant` of dataset `name`: `datasets/<name>/<variant>` under `cwd`, else
/// under the repository `repo`.
pub fn variant_dir(name: &str, variant: &str, cwd: &Path, repo: Option<&Path>) -> PathBuf {
    let rel = format!("datasets/{name}/{variant}");
    crate::dataset::paths::absolute(&rel, cwd, repo)
}

/// With `dataset.variant` set: points `dataset.root` at the variant's data (absolute) and
/// clears `dataset.subset_filelist` (the variant is the subset). Nothing changes without it.
pub fn apply_variant(resolved: &mut Node, cwd: &Path, repo: Option<&Path>) -> Result<()> {
    let Some(Node::Str(variant)) = resolved.get_path("dataset.variant").cloned() else {
        return Ok(());
    };
    check_name(&variant).map_err(|e| anyhow::anyhow!("dataset.variant: {e:#}"))?;
    let name = match resolved.get_path("dataset.name") {
        Some(Node::Str(n)) => n.clone(),
        _ => bail!("dataset.variant={variant} needs dataset.name"),
    };
    crate::untrusted::single_component(&name)
        .map_err(|e| anyhow::anyhow!("dataset.name {e}: it names a folder under datasets/"))?;
    let dir = variant_dir(&name, &variant, cwd, repo);
    if !dir.join(VARIANT_METADATA).is_file() {
        let parent = dir.parent().unwrap_or(&dir);
        let mut known: Vec<String> = std::fs::read_dir(parent)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| {
                e.path().join(VARIANT_METADATA).is_file()
                    && VariantMetadata::read(&e.path()).is_ok()
            })
            .map(|e| e.file_name().to_string_lossy().to_string())
            .collect();
        known.sort();
        let known = if known.is_empty() {
            "none yet".to_string()
        } else {
            known.join(", ")
        };
        bail!(
            "dataset.variant={variant}: {} is not a variant of dataset '{name}' (variants there: {known})\n  fix: make it with `llmprof dataset make-variant {name} --variant {variant} --num-samples <N>`, or drop dataset.variant",
            dir.display()
        );
    }
    let meta = VariantMetadata::read(&dir)?;
    if meta.parent != name {
        bail!(
            "dataset.variant={variant}: {} was made from dataset '{}', not '{name}'",
            dir.display(),
            meta.parent
        );
    }
    let root = match meta.data.as_str() {
        "." | "" => dir.clone(),
        data => dir.join(crate::untrusted::single_component(data).map_err(|e| {
            anyhow::anyhow!(
                "{}: `data` {e}: it names the variant's data folder inside the variant\n  fix: remake the variant with `llmprof dataset make-variant`",
                dir.join(VARIANT_METADATA).display()
            )
        })?),
    };
    if let Some(n) = resolved.get_path_mut("dataset.root") {
        *n = Node::Str(root.display().to_string());
    }
    if let Some(n) = resolved.get_path_mut("dataset.subset_filelist") {
        *n = Node::Null;
    }
    Ok(())
}

/// The metadata of the variant a (front-end prepared) spec reads, or None without a variant.
pub fn variant_of(spec: &DatasetSpec) -> Result<Option<VariantMetadata>> {
    if spec.variant.is_none() {
        return Ok(None);
    }
    let root = Path::new(&spec.root);
    let dir = if root.is_dir() {
        root
    } else {
        root.parent().unwrap_or(root)
    };
    VariantMetadata::read(dir).map(Some)
}

#[cfg(test)]
mod tests;
