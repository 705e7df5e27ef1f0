//! Which page images a run reads: list a dataset folder (or a subset file, or OmniDocBench's
//! ground-truth JSON), then pick samples per epoch (`sampling`). Pure std, no libtorch.
mod input;
mod omnidocbench;
mod samples;
mod sampling;

pub use input::{load_rgb, InputItem};
pub use omnidocbench::{list_omnidocbench, OMNIDOCBENCH_JSON};
pub use samples::{read_sample_metadata, SamplePage, SAMPLES_METADATA};
pub use sampling::{sample, SampleRef};

use crate::spec::DatasetSpec;
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

/// The images of a plain folder dataset.
///
/// Without `subset_filelist`: every image file directly in `root` (not recursive, hidden files
/// skipped), sorted by file name. With it: the files it lists, in the order listed (one path
/// relative to `root` per line; blank lines and `#` comments ignored).
pub fn list_images(root: &Path, subset_filelist: Option<&Path>) -> Result<Vec<PathBuf>> {
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
    let root = base_dir.join(&spec.root);
    let subset = spec.subset_filelist.as_ref().map(|s| base_dir.join(s));
    let hint = missing_root_hint(&spec.name);
    check_root(&root, Some(&hint))?;
    let images = match spec.name.as_str() {
        "omnidocbench" => list_omnidocbench(&root, subset.as_deref())?,
        _ => list_images(&root, subset.as_deref())?,
    };
    Ok(images)
}

/// The inputs a run reads, in order: [`plan`] turned into [`InputItem`]s.
pub fn inputs(spec: &DatasetSpec, base_dir: &Path) -> Result<Vec<InputItem>> {
    plan(spec, base_dir)?
        .into_iter()
        .map(|r| InputItem::from_path(r.path))
        .collect()
}

/// The samples a run reads: [`list_dataset`], then [`sample`] with `spec.sampling`.
pub fn plan(spec: &DatasetSpec, base_dir: &Path) -> Result<Vec<SampleRef>> {
    let images = list_dataset(spec, base_dir)?;
    let s = &spec.sampling;
    sample(
        &images,
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

fn list_folder(root: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let entries = std::fs::read_dir(root)
        .with_context(|| format!("reading dataset folder {}", root.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("reading dataset folder {}", root.display()))?;
        let path = entry.path();
        let hidden = entry.file_name().to_string_lossy().starts_with('.');
        if !hidden && is_image(&path) && path.is_file() {
            out.push(path);
        }
    }
    if out.is_empty() {
        bail!(
            "dataset folder {} holds no images (looked for {})",
            root.display(),
            IMAGE_EXTENSIONS.join(", ")
        );
    }
    out.sort();
    Ok(out)
}

/// Reads a subset file: one path per line relative to `dir`; `#` starts a comment.
/// Every listed file must exist and be an image; the list must not be empty.
pub(crate) fn read_subset(list: &Path, dir: &Path) -> Result<Vec<PathBuf>> {
    let text = std::fs::read_to_string(list)
        .with_context(|| format!("reading subset file {}", list.display()))?;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let entry = strip_comment(line).trim();
        if entry.is_empty() {
            continue;
        }
        let path = dir.join(entry);
        if !is_image(&path) {
            bail!(
                "{}:{}: '{entry}' is not an image file name (expected one of {})",
                list.display(),
                n + 1,
                IMAGE_EXTENSIONS.join(", ")
            );
        }
        if !path.is_file() {
            bail!(
                "{}:{}: listed image {} does not exist",
                list.display(),
                n + 1,
                path.display()
            );
        }
        out.push(path);
    }
    if out.is_empty() {
        bail!(
            "subset file {} lists no images: add one image path per line (relative to {}), \
             or set dataset.subset_filelist=null to read the whole folder",
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
}

#[cfg(test)]
mod tests {
    use super::test_util::{temp_dir, touch};
    use super::*;
    use crate::spec::SamplingSpec;

    fn names(v: &[PathBuf]) -> Vec<String> {
        v.iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn folder_listing_is_sorted_and_filtered() {
        let d = temp_dir("folder");
        touch(
            &d,
            &[
                "b.png",
                "a.JPG",
                "c.tif",
                "notes.txt",
                ".hidden.png",
                "doc.pdf",
                "sub/x.png",
            ],
        );
        let got = list_images(&d, None).unwrap();
        assert_eq!(names(&got), ["a.JPG", "b.png", "c.tif"]);
        assert!(got.iter().all(|p| p.starts_with(&d)));
    }

    #[test]
    fn empty_folder_is_an_error() {
        let d = temp_dir("empty");
        touch(&d, &["readme.md"]);
        let e = format!("{:#}", list_images(&d, None).unwrap_err());
        assert!(e.contains("holds no images"), "{e}");
    }

    #[test]
    fn missing_root_names_folder_and_fix() {
        let d = temp_dir("missing").join("nope");
        let e = format!("{:#}", list_images(&d, None).unwrap_err());
        assert!(
            e.contains(&d.display().to_string()) && e.contains("does not exist"),
            "{e}"
        );

        let spec = DatasetSpec {
            name: "omnidocbench".into(),
            root: "datasets/omnidocbench/source-data".into(),
            subset_filelist: None,
            sampling: SamplingSpec {
                num_epochs: 1,
                num_samples_per_epoch: None,
                randomize: false,
                seed: 0,
            },
        };
        let e = format!("{:#}", list_dataset(&spec, &d).unwrap_err());
        assert!(
            e.contains("source-data") && e.contains("datasets/omnidocbench/bootstrap.sh"),
            "{e}"
        );
        assert!(
            e.contains("OmniDocBench.json") && e.contains("images/"),
            "{e}"
        );
    }

    #[test]
    fn subset_keeps_order_and_skips_comments() {
        let d = temp_dir("subset");
        touch(&d, &["p1.png", "p2.png", "deep/p3.jpg", "a#b.png"]);
        let list = d.join("subset.txt");
        std::fs::write(
            &list,
            "# dev subset\n\ndeep/p3.jpg\np1.png  # first page\na#b.png\n",
        )
        .unwrap();
        let got = list_images(&d, Some(&list)).unwrap();
        assert_eq!(
            got,
            vec![d.join("deep/p3.jpg"), d.join("p1.png"), d.join("a#b.png")]
        );
    }

    #[test]
    fn subset_with_missing_file_names_it() {
        let d = temp_dir("subset-missing");
        touch(&d, &["p1.png"]);
        let list = d.join("subset.txt");
        std::fs::write(&list, "p1.png\ngone.png\n").unwrap();
        let e = format!("{:#}", list_images(&d, Some(&list)).unwrap_err());
        assert!(
            e.contains("subset.txt:2") && e.contains("gone.png") && e.contains("does not exist"),
            "{e}"
        );
    }

    #[test]
    fn subset_of_comments_only_says_how_to_fill_it() {
        let d = temp_dir("subset-empty");
        touch(&d, &["p1.png"]);
        let list = d.join("subset.txt");
        std::fs::write(&list, "# nothing yet\n").unwrap();
        let e = format!("{:#}", list_images(&d, Some(&list)).unwrap_err());
        assert!(e.contains("lists no images"), "{e}");
    }

    #[test]
    fn subset_rejects_non_images() {
        let d = temp_dir("subset-kind");
        touch(&d, &["doc.pdf"]);
        let list = d.join("subset.txt");
        std::fs::write(&list, "doc.pdf\n").unwrap();
        let e = format!("{:#}", list_images(&d, Some(&list)).unwrap_err());
        assert!(e.contains("not an image file name"), "{e}");
    }

    #[test]
    fn list_dataset_resolves_relative_paths() {
        let base = temp_dir("base");
        touch(&base, &["pages/b.png", "pages/a.png", "lists/one.txt"]);
        std::fs::write(base.join("lists/one.txt"), "b.png\n").unwrap();
        let mut spec = DatasetSpec {
            name: "folder".into(),
            root: "pages".into(),
            subset_filelist: None,
            sampling: SamplingSpec {
                num_epochs: 1,
                num_samples_per_epoch: None,
                randomize: false,
                seed: 0,
            },
        };
        assert_eq!(
            names(&list_dataset(&spec, &base).unwrap()),
            ["a.png", "b.png"]
        );
        spec.subset_filelist = Some("lists/one.txt".into());
        assert_eq!(names(&list_dataset(&spec, &base).unwrap()), ["b.png"]);
    }

    #[test]
    fn shipped_sample_pages_are_listed() {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let got = list_images(&repo.join("datasets/samples"), None).unwrap();
        assert_eq!(got.len(), 6, "{got:?}");
        assert!(names(&got)[0].starts_with("page-01"));
    }
}
