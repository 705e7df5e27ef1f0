//! Which page images a run reads: list a dataset folder (or a subset file, or OmniDocBench's
//! ground-truth JSON), then pick samples per epoch (`sampling`). Pure std, no libtorch.
//!
//! Only regular files are read: FIFOs, sockets, devices and symlink loops among the images are
//! skipped with a warning each and returned in [`Listing::skipped`] so that a report can say so.
mod batching;
mod config;
pub mod file_kind;
mod image_limits;
mod input;
mod omnidocbench;
pub mod paths;
mod samples;
mod sampling;
pub mod text;
pub mod variant;

pub use batching::BatchPlan;
pub use config::{DatasetSpec, SamplingSpec};
pub use file_kind::{skipped_note, NotRegular, Skipped};
pub use image_limits::{
    default_max_image_bytes, default_max_image_pixels, ImageLimits, DEFAULT_MAX_IMAGE_BYTES,
    DEFAULT_MAX_IMAGE_PIXELS, PIL_MAX_IMAGE_PIXELS,
};
pub use input::{load_rgb, load_rgb_limited, InputItem, TextInput};
pub use omnidocbench::{list_omnidocbench, list_omnidocbench_entries, OMNIDOCBENCH_JSON};
pub use samples::{read_sample_metadata, SamplePage, SAMPLES_METADATA};
pub use sampling::{sample, SampleRef};

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// File extensions read as page images (lower case; matching ignores case). PDFs are not here:
/// no well-kept pure-Rust crate rasterises them, so convert them first (datasets/samples/README.md).
pub const IMAGE_EXTENSIONS: &[&str] = &["png", "jpg", "jpeg", "webp", "tiff", "tif", "bmp"];

/// True when `path` ends in one of [`IMAGE_EXTENSIONS`] (any case).
pub fn is_image(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| IMAGE_EXTENSIONS.iter().any(|x| x.eq_ignore_ascii_case(e)))
}

/// The images a listing found, and the image-named entries it skipped because they are not
/// regular files (each also logged as a warning).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Listing {
    pub images: Vec<PathBuf>,
    pub skipped: Vec<Skipped>,
}

/// The images of a plain folder dataset.
///
/// Without `subset_filelist`: every image file directly in `root` (not recursive, hidden files
/// skipped), sorted by file name. With it: the files it lists, in the order listed (one path
/// relative to `root` per line; blank lines and `#` comments ignored).
pub fn list_images(root: &Path, subset_filelist: Option<&Path>) -> Result<Vec<PathBuf>> {
    Ok(list_images_entries(root, subset_filelist)?.images)
}

/// [`list_images`] with the entries skipped as not regular files.
pub fn list_images_entries(root: &Path, subset_filelist: Option<&Path>) -> Result<Listing> {
    check_root(root, None)?;
    match subset_filelist {
        Some(list) => read_subset(list, root),
        None => list_folder(root),
    }
}

/// Lists the images of the dataset `spec` describes. Relative `root` and `subset_filelist` are
/// taken relative to `base_dir` (the directory llmprof was started from). `omnidocbench` reads
/// its page list from `OmniDocBench.json`; every other name is a folder of images.
pub fn list_dataset(spec: &DatasetSpec, base_dir: &Path) -> Result<Vec<PathBuf>> {
    Ok(list_dataset_entries(spec, base_dir)?.images)
}

/// [`list_dataset`] with the entries skipped as not regular files.
pub fn list_dataset_entries(spec: &DatasetSpec, base_dir: &Path) -> Result<Listing> {
    let root = base_dir.join(&spec.root);
    let subset = spec.subset_filelist.as_ref().map(|s| base_dir.join(s));
    let hint = missing_root_hint(&spec.name);
    check_root(&root, Some(&hint))?;
    match spec.name.as_str() {
        "omnidocbench" => list_omnidocbench_entries(&root, subset.as_deref()),
        _ => list_images_entries(&root, subset.as_deref()),
    }
}

/// The inputs a run reads, in order: [`plan`] turned into [`InputItem`]s.
pub fn inputs(spec: &DatasetSpec, base_dir: &Path) -> Result<Vec<InputItem>> {
    Ok(inputs_and_skipped(spec, base_dir)?.0)
}

/// [`inputs`], and the dataset entries skipped as not regular files (for the run's report:
/// [`skipped_note`] words them).
pub fn inputs_and_skipped(
    spec: &DatasetSpec,
    base_dir: &Path,
) -> Result<(Vec<InputItem>, Vec<Skipped>)> {
    let texts = match spec.name.as_str() {
        text::RANDOM_TOKENS => Some(text::random_tokens(spec)?),
        text::PROMPTS => Some(text::prompts(spec, base_dir)?),
        _ => None,
    };
    if let Some(all) = texts {
        let keys: Vec<PathBuf> = all.iter().map(|i| i.path.clone()).collect();
        let picked = sample_listing(spec, &keys)?
            .into_iter()
            .map(|r| all[r.index as usize].clone())
            .collect();
        return Ok((picked, Vec::new()));
    }
    let listing = list_dataset_entries(spec, base_dir)?;
    let items = sample_listing(spec, &listing.images)?
        .into_iter()
        .map(|r| InputItem::from_path(r.path))
        .collect::<Result<_>>()?;
    Ok((items, listing.skipped))
}

/// The samples a run reads: [`list_dataset`], then [`sample`] with `spec.sampling`.
pub fn plan(spec: &DatasetSpec, base_dir: &Path) -> Result<Vec<SampleRef>> {
    sample_listing(spec, &list_dataset(spec, base_dir)?)
}

fn sample_listing(spec: &DatasetSpec, images: &[PathBuf]) -> Result<Vec<SampleRef>> {
    let s = &spec.sampling;
    sample(
        images,
        s.num_epochs,
        s.num_samples_per_epoch,
        s.randomize,
        s.seed,
    )
    .with_context(|| format!("sampling dataset '{}'", spec.name))
}

/// How to make a missing dataset root appear, per dataset name.
fn missing_root_hint(name: &str) -> String {
    match name {
        "omnidocbench" => "run datasets/omnidocbench/bootstrap.sh: it links source-data to \
             $DATASETS_ROOT/OmniDocBench (default $HOME/datasets/OmniDocBench), which must hold \
             OmniDocBench.json and images/ (see datasets/omnidocbench/README.md)"
            .to_string(),
        "samples" => {
            "the sample pages ship with the repository: run llmprof from the repository root, \
             or regenerate them with `python3 scripts/make_sample_pages.py`"
                .to_string()
        }
        _ => "set dataset.root=<folder of page images> (png, jpg, jpeg, webp, tiff, tif, bmp)"
            .to_string(),
    }
}

fn check_root(root: &Path, hint: Option<&str>) -> Result<()> {
    if root.is_dir() {
        return Ok(());
    }
    let what = if root.exists() {
        "is not a folder"
    } else {
        "does not exist"
    };
    let hint = hint.unwrap_or("set dataset.root to a folder of page images");
    bail!("dataset folder {} {what}: {hint}", root.display())
}

/// Image-named entries directly in `root` (hidden ones left out): regular files are images,
/// every other kind is skipped (a folder named `x.png` silently, the rest with a warning).
fn list_folder(root: &Path) -> Result<Listing> {
    let mut out = Listing::default();
    let entries = std::fs::read_dir(root)
        .with_context(|| format!("reading dataset folder {}", root.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("reading dataset folder {}", root.display()))?;
        let path = entry.path();
        let hidden = entry.file_name().to_string_lossy().starts_with('.');
        if hidden || !is_image(&path) {
            continue;
        }
        match file_kind::regular_file(&path) {
            Ok(_) => out.images.push(path),
            Err(s) if s.kind == NotRegular::Directory => {}
            Err(s) => out.skipped.push(s),
        }
    }
    out.images.sort();
    out.skipped.sort_by(|a, b| a.path.cmp(&b.path));
    file_kind::warn_skipped("dataset entry", &out.skipped);
    if out.images.is_empty() {
        let skipped = skipped_note(&out.skipped)
            .map(|n| format!("; {n}"))
            .unwrap_or_default();
        bail!(
            "dataset folder {} holds no images (looked for {}){skipped}",
            root.display(),
            IMAGE_EXTENSIONS.join(", ")
        );
    }
    Ok(out)
}

/// Reads a subset file: one path per line relative to `dir`; `#` starts a comment.
/// Every listed file must exist and be an image; the list must not be empty. A listed entry
/// that exists but is not a regular file (FIFO, socket, device, symlink loop) is skipped with a
/// warning.
pub(crate) fn read_subset(list: &Path, dir: &Path) -> Result<Listing> {
    if let Err(s) = file_kind::regular_file(list) {
        bail!("subset file {s}: dataset.subset_filelist must name a text file");
    }
    let text = std::fs::read_to_string(list)
        .with_context(|| format!("reading subset file {}", list.display()))?;
    let mut out = Listing::default();
    for (n, line) in text.lines().enumerate() {
        let entry = strip_comment(line).trim();
        if entry.is_empty() {
            continue;
        }
        // A subset file may come with a dataset (untrusted, docs/security.md): its entries name
        // images inside the dataset's folder, by relative paths.
        let path = crate::untrusted::join(dir, entry).map_err(|e| {
            anyhow::anyhow!(
                "{}:{}: the entry {e}: entries are image paths relative to {}",
                list.display(),
                n + 1,
                dir.display()
            )
        })?;
        if !is_image(&path) {
            bail!(
                "{}:{}: '{entry}' is not an image file name (expected one of {})",
                list.display(),
                n + 1,
                IMAGE_EXTENSIONS.join(", ")
            );
        }
        match file_kind::regular_file(&path) {
            Ok(_) => out.images.push(path),
            Err(s) if matches!(s.kind, NotRegular::Missing | NotRegular::BrokenSymlink) => bail!(
                "{}:{}: listed image {} does not exist",
                list.display(),
                n + 1,
                path.display()
            ),
            Err(s) => out.skipped.push(s),
        }
    }
    file_kind::warn_skipped("dataset entry", &out.skipped);
    if out.images.is_empty() {
        let skipped = skipped_note(&out.skipped)
            .map(|n| format!(" ({n})"))
            .unwrap_or_default();
        bail!(
            "subset file {} lists no images{skipped}: add one image path per line (relative to \
             {}), or set dataset.subset_filelist=null to read the whole folder",
            list.display(),
            dir.display()
        );
    }
    Ok(out)
}

/// Drops a `#` comment: one that starts the line or follows whitespace (so `a#b.png` stays a name).
fn strip_comment(line: &str) -> &str {
    let bytes = line.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'#' && (i == 0 || bytes[i - 1].is_ascii_whitespace()) {
            return &line[..i];
        }
    }
    line
}

#[cfg(test)]
pub(crate) mod test_util {
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicU32, Ordering};

    /// A fresh, empty temp folder per call.
    pub fn temp_dir(tag: &str) -> PathBuf {
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let d =
            std::env::temp_dir().join(format!("llmprof-dataset-{}-{tag}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("temp dir");
        d
    }

    pub fn touch(dir: &Path, names: &[&str]) {
        for n in names {
            let p = dir.join(n);
            std::fs::create_dir_all(p.parent().expect("has parent")).expect("mkdir");
            std::fs::write(p, b"x").expect("write");
        }
    }

    /// A FIFO at `path` (coreutils `mkfifo`: no libc binding needed).
    pub fn mkfifo(path: &Path) {
        let ok = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .expect("mkfifo runs");
        assert!(ok.success(), "mkfifo {}", path.display());
    }
}

#[cfg(test)]
mod tests;
