//! The items of a dataset's source data that a variant can pick from: page images (with their
//! kinds where the dataset records them) or JSONL lines, after the optional subset-file filter.
use super::metadata::Layout;
use crate::dataset::OMNIDOCBENCH_JSON;
use crate::dataset::{list_images_entries, list_omnidocbench_entries, read_sample_metadata};
use anyhow::{bail, Context, Result};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// One item of the source.
#[derive(Debug, Clone)]
pub struct SourceItem {
    /// The name recorded in the selection: a path relative to the image folder, or the line
    /// number (from 1) of a JSONL line.
    pub name: String,
    /// The page kinds (samples: metadata.yaml `kinds`; OmniDocBench: `page_attribute.data_source`).
    pub kinds: Vec<String>,
    pub data: ItemData,
}

#[derive(Debug, Clone)]
pub enum ItemData {
    /// A file, linked or copied into the variant at `name`.
    File(PathBuf),
    /// An OmniDocBench page: its image and its ground-truth entry.
    Page(PathBuf, Option<serde_json::Value>),
    /// One JSONL line (without its newline).
    Line(String),
}

/// The source data of a dataset and what it offers.
#[derive(Debug)]
pub struct Source {
    pub layout: Layout,
    /// The folder (or JSONL file) read.
    pub root: PathBuf,
    pub items: Vec<SourceItem>,
    /// Whether the dataset records page kinds at all.
    pub has_kinds: bool,
}

/// Reads the source at `root` (dataset `name`), keeping only what `subset_file` lists.
pub fn read_source(name: &str, root: &Path, subset_file: Option<&Path>) -> Result<Source> {
    if let Some(jsonl) = jsonl_file(root)? {
        if subset_file.is_some() {
            bail!("--subset-file filters page images; {} is a JSONL dataset (use --num-samples alone)", jsonl.display());
        }
        return read_jsonl(root, &jsonl);
    }
    if name == "omnidocbench" || root.join(OMNIDOCBENCH_JSON).is_file() {
        return read_omnidocbench(root, subset_file);
    }
    let listing = list_images_entries(root, subset_file)?;
    let kinds: HashMap<String, Vec<String>> = match read_sample_metadata(root) {
        Ok(pages) => pages.into_iter().map(|p| (p.file, p.kinds)).collect(),
        Err(_) => HashMap::new(),
    };
    let items = listing
        .images
        .into_iter()
        .map(|p| {
            let name = relative(&p, root);
            SourceItem {
                kinds: kinds.get(&name).cloned().unwrap_or_default(),
                name,
                data: ItemData::File(p),
            }
        })
        .collect();
    Ok(Source {
        layout: Layout::Images,
        root: root.to_path_buf(),
        items,
        has_kinds: !kinds.is_empty(),
    })
}

/// The JSONL file a root names: the root itself, or the one `.jsonl` directly in it.
fn jsonl_file(root: &Path) -> Result<Option<PathBuf>> {
    let is_jsonl = |p: &Path| {
        p.extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("jsonl"))
    };
    if root.is_file() {
        return Ok(is_jsonl(root).then(|| root.to_path_buf()));
    }
    let Ok(rd) = std::fs::read_dir(root) else {
        return Ok(None);
    };
    let mut found: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && is_jsonl(p))
        .collect();
    found.sort();
    match found.len() {
        1 => Ok(found.pop()),
        0 => Ok(None),
        _ => bail!(
            "{} holds {} JSONL files: point dataset.root at the one to subset",
            root.display(),
            found.len()
        ),
    }
}

fn read_jsonl(root: &Path, file: &Path) -> Result<Source> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let items: Vec<SourceItem> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| SourceItem {
            name: (i + 1).to_string(),
            kinds: Vec::new(),
            data: ItemData::Line(l.to_string()),
        })
        .collect();
    if items.is_empty() {
        bail!("{} holds no lines to pick from", file.display());
    }
    Ok(Source {
        layout: Layout::Jsonl,
        root: root.to_path_buf(),
        items,
        has_kinds: false,
    })
}

fn read_omnidocbench(root: &Path, subset_file: Option<&Path>) -> Result<Source> {
    let listing = list_omnidocbench_entries(root, subset_file)?;
    let json_path = root.join(OMNIDOCBENCH_JSON);
    let mut entries: HashMap<String, serde_json::Value> = HashMap::new();
    if json_path.is_file() {
        let bytes = std::fs::read(&json_path)
            .with_context(|| format!("reading {}", json_path.display()))?;
        let pages: Vec<serde_json::Value> = serde_json::from_slice(&bytes)
            .with_context(|| format!("{}: expected a list of pages", json_path.display()))?;
        for page in pages {
            if let Some(p) = page
                .pointer("/page_info/image_path")
                .and_then(|v| v.as_str())
            {
                entries.entry(p.to_string()).or_insert(page);
            }
        }
    }
    let images = root.join("images");
    let items = listing
        .images
        .into_iter()
        .map(|p| {
            let name = relative(&p, &images);
            let entry = entries.get(&name).cloned();
            let kinds = entry
                .as_ref()
                .and_then(|e| e.pointer("/page_info/page_attribute/data_source"))
                .and_then(|v| v.as_str())
                .map(|s| vec![s.to_string()])
                .unwrap_or_default();
            SourceItem {
                name,
                kinds,
                data: ItemData::Page(p, entry),
            }
        })
        .collect();
    Ok(Source {
        layout: Layout::Omnidocbench,
        root: root.to_path_buf(),
        items,
        has_kinds: !entries.is_empty(),
    })
}

/// `path` relative to `base`, with `/` separators (the name as a subset file writes it).
fn relative(path: &Path, base: &Path) -> String {
    let rel = path.strip_prefix(base).unwrap_or(path);
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}
