//! `llmprof dataset make-variant`: a new `datasets/<dataset>/<variant>/` from the source data.
//! The source is only read; page files are hard-linked (copied across file systems), the
//! variant is built in a hidden sibling folder and renamed into place when complete, and an
//! existing variant is never overwritten.
use super::metadata::{Layout, Selection, VariantMetadata, VariantSize, VARIANT_METADATA};
use super::select::choose;
use super::source::{read_source, ItemData, SourceItem};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// What to make.
#[derive(Debug, Clone)]
pub struct VariantRequest {
    /// `dataset.name` (the variant goes to `<datasets_dir>/<dataset>/<variant>`).
    pub dataset: String,
    /// The source data (`dataset.root`, absolute).
    pub source_root: PathBuf,
    /// The repository's `datasets/` folder.
    pub datasets_dir: PathBuf,
    pub variant: String,
    pub num_samples: u64,
    pub seed: u64,
    /// Keep only the pages this file lists (relative to the image folder).
    pub subset_file: Option<PathBuf>,
    /// Keep only pages of this kind.
    pub kind: Option<String>,
}

/// Makes the variant; returns its folder and metadata.
pub fn make_variant(req: &VariantRequest) -> Result<(PathBuf, VariantMetadata)> {
    check_name(&req.variant)?;
    crate::untrusted::single_component(&req.dataset)
        .map_err(|e| anyhow::anyhow!("the dataset name {e}: it names a folder under datasets/"))?;
    if req.num_samples == 0 {
        bail!("--num-samples 0: a variant needs at least one item");
    }
    let parent_dir = req.datasets_dir.join(&req.dataset);
    let target = parent_dir.join(&req.variant);
    if target.exists() || target.is_symlink() {
        bail!(
            "variant {} already exists: variants are never overwritten\n  fix: pick another --variant name, or delete that folder first",
            target.display()
        );
    }
    let source = read_source(&req.dataset, &req.source_root, req.subset_file.as_deref())?;
    let offered = filter_kind(
        &req.dataset,
        &source.items,
        source.has_kinds,
        req.kind.as_deref(),
    )?;
    let picked: Vec<&SourceItem> = choose(offered.len(), req.num_samples as usize, req.seed)
        .into_iter()
        .map(|i| offered[i])
        .collect();
    if (picked.len() as u64) < req.num_samples {
        tracing::warn!(
            asked = req.num_samples,
            available = picked.len(),
            "fewer items than --num-samples: the variant holds all of them"
        );
    }
    let building = parent_dir.join(format!(".{}.partial-{}", req.variant, std::process::id()));
    let _ = std::fs::remove_dir_all(&building);
    std::fs::create_dir_all(&building)
        .with_context(|| format!("creating {}", building.display()))?;
    let result = write_variant(
        req,
        &source.root,
        source.layout,
        &offered,
        &picked,
        &building,
    )
    .and_then(|meta| {
        std::fs::write(building.join(VARIANT_METADATA), meta.to_yaml()?)
            .with_context(|| format!("writing {}", building.join(VARIANT_METADATA).display()))?;
        Ok(meta)
    });
    let meta = match result {
        Ok(m) => m,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&building);
            return Err(e);
        }
    };
    if target.exists() {
        let _ = std::fs::remove_dir_all(&building);
        bail!(
            "variant {} appeared while this one was being made: not overwritten",
            target.display()
        );
    }
    std::fs::rename(&building, &target)
        .with_context(|| format!("moving the finished variant to {}", target.display()))?;
    Ok((target, meta))
}

fn write_variant(
    req: &VariantRequest,
    root: &Path,
    layout: Layout,
    offered: &[&SourceItem],
    picked: &[&SourceItem],
    out: &Path,
) -> Result<VariantMetadata> {
    let mut bytes = 0u64;
    let mut data = ".".to_string();
    match layout {
        Layout::Images | Layout::Omnidocbench => {
            let sub = if layout == Layout::Omnidocbench {
                "images"
            } else {
                ""
            };
            let mut entries = Vec::new();
            for item in picked {
                let (file, entry) = match &item.data {
                    ItemData::File(p) => (p, None),
                    ItemData::Page(p, e) => (p, e.clone()),
                    ItemData::Line(_) => unreachable!("image layouts hold files"),
                };
                // Names come from the dataset (a subset file, OmniDocBench.json) and links in
                // it may point anywhere: a variant only holds files of its source folder, each
                // under its own relative name (docs/security.md).
                let name = crate::untrusted::relative_path(&item.name).map_err(|e| {
                    anyhow::anyhow!("dataset '{}': the item name {e}: a variant holds only files inside its source folder, under their relative names\n  fix: correct the subset file or the dataset's index", req.dataset)
                })?;
                crate::untrusted::inside(root, file).map_err(|e| {
                    anyhow::anyhow!("dataset '{}': {e}: a variant holds only files inside its source folder\n  fix: copy the file into the dataset instead of linking it", req.dataset)
                })?;
                let dest = out.join(sub).join(name);
                bytes += link_or_copy(file, &dest)?;
                entries.extend(entry);
            }
            if layout == Layout::Omnidocbench && !entries.is_empty() {
                let json = serde_json::to_vec(&entries).context("writing OmniDocBench.json")?;
                bytes += json.len() as u64;
                std::fs::write(out.join(crate::dataset::OMNIDOCBENCH_JSON), json)
                    .with_context(|| format!("writing {}", out.display()))?;
            }
        }
        Layout::Jsonl => {
            let name = if root.is_file() {
                root.file_name().map(|n| n.to_string_lossy().to_string())
            } else {
                None
            };
            let file_name = name.clone().unwrap_or_else(|| "data.jsonl".into());
            let mut text = String::new();
            for item in picked {
                if let ItemData::Line(l) = &item.data {
                    text.push_str(l);
                    text.push('\n');
                }
            }
            bytes += text.len() as u64;
            std::fs::write(out.join(&file_name), text)
                .with_context(|| format!("writing {}", out.join(&file_name).display()))?;
            if name.is_some() {
                data = file_name;
            }
        }
    }
    let filters: Vec<String> = [
        req.subset_file
            .as_ref()
            .map(|s| format!("pages listed in {}", s.display())),
        req.kind.as_ref().map(|k| format!("kind {k}")),
    ]
    .into_iter()
    .flatten()
    .collect();
    let filtered = if filters.is_empty() {
        String::new()
    } else {
        format!(" (filtered to {})", filters.join(" and "))
    };
    Ok(VariantMetadata {
        name: req.variant.clone(),
        parent: req.dataset.clone(),
        parent_root: root.display().to_string(),
        created: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        transform: format!(
            "random subset: {} of {} items{filtered}, chosen by a ChaCha8 Fisher-Yates shuffle with seed {}, kept in source order; files hard-linked or copied, source untouched",
            picked.len(),
            offered.len(),
            req.seed
        ),
        size: VariantSize {
            items: picked.len() as u64,
            of: offered.len() as u64,
            bytes,
        },
        seed: req.seed,
        selection: Selection {
            num_samples: req.num_samples,
            subset_file: req.subset_file.as_ref().map(|p| p.display().to_string()),
            kind: req.kind.clone(),
            items: picked.iter().map(|i| i.name.clone()).collect(),
        },
        layout,
        data,
        llmprof_version: crate::VERSION.to_string(),
    })
}

fn filter_kind<'a>(
    dataset: &str,
    items: &'a [SourceItem],
    has_kinds: bool,
    kind: Option<&str>,
) -> Result<Vec<&'a SourceItem>> {
    let Some(kind) = kind else {
        return Ok(items.iter().collect());
    };
    if !has_kinds {
        bail!("dataset '{dataset}' records no page kinds, so --kind {kind} cannot filter it (kinds exist for samples: metadata.yaml `kinds`, and omnidocbench: page_attribute.data_source)");
    }
    let kept: Vec<&SourceItem> = items
        .iter()
        .filter(|i| i.kinds.iter().any(|k| k == kind))
        .collect();
    if kept.is_empty() {
        let mut known: Vec<&str> = items
            .iter()
            .flat_map(|i| i.kinds.iter().map(String::as_str))
            .collect();
        known.sort_unstable();
        known.dedup();
        bail!(
            "no page of dataset '{dataset}' has kind '{kind}'; its kinds: {}",
            known.join(", ")
        );
    }
    Ok(kept)
}

/// Hard-links `from` (its real file, when it is a symlink) to `to`, or copies it when linking
/// fails (another file system); returns its size.
fn link_or_copy(from: &Path, to: &Path) -> Result<u64> {
    let real =
        std::fs::canonicalize(from).with_context(|| format!("reading {}", from.display()))?;
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    // Never onto an existing file: a copy would truncate it first (it may be the source).
    if to.symlink_metadata().is_ok() {
        bail!(
            "{} is already in the variant: two items have this name",
            to.display()
        );
    }
    if std::fs::hard_link(&real, to).is_err() {
        std::fs::copy(&real, to)
            .with_context(|| format!("copying {} to {}", real.display(), to.display()))?;
    }
    Ok(std::fs::metadata(to).map(|m| m.len()).unwrap_or(0))
}

/// A variant name is one folder name: letters, digits, `.`, `_`, `-`, not starting with `.`.
pub fn check_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        && !matches!(name, "source-data" | "subsets");
    if !ok {
        bail!("'{name}' is not a variant name: use letters, digits, '.', '_' and '-' (e.g. subset-20), not starting with '.', and not source-data or subsets");
    }
    Ok(())
}
