//! OmniDocBench layout: `<root>/OmniDocBench.json` (ground truth, one entry per page, with
//! `page_info.image_path`) and `<root>/images/<image_path>`. The JSON sets the page list and order.
use super::file_kind::{self, NotRegular};
use super::{list_images_entries, read_subset, Listing};
use anyhow::{bail, Context, Result};
use serde::Deserialize;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// Ground-truth file name under the dataset root.
pub const OMNIDOCBENCH_JSON: &str = "OmniDocBench.json";
/// Image folder under the dataset root.
const IMAGES_DIR: &str = "images";

/// Only the fields we read; serde skips the rest (layout_dets, extra, ...).
#[derive(Deserialize)]
struct Page {
    page_info: PageInfo,
}

#[derive(Deserialize)]
struct PageInfo {
    image_path: String,
}

/// The page images of an OmniDocBench checkout at `root`.
///
/// With `subset_filelist`: the listed images, each a path relative to `root/images` (the names
/// in `page_info.image_path`), in the order listed. Otherwise the pages of `OmniDocBench.json`
/// in file order (duplicates dropped), or, without the JSON, every image in `root/images`
/// sorted by name. Every image returned exists.
pub fn list_omnidocbench(root: &Path, subset_filelist: Option<&Path>) -> Result<Vec<PathBuf>> {
    Ok(list_omnidocbench_entries(root, subset_filelist)?.images)
}

/// [`list_omnidocbench`] with the pages skipped as not regular files (FIFOs, symlink loops, ...).
pub fn list_omnidocbench_entries(root: &Path, subset_filelist: Option<&Path>) -> Result<Listing> {
    let images = root.join(IMAGES_DIR);
    if !images.is_dir() {
        bail!(
            "OmniDocBench folder {} has no images/ folder: run datasets/omnidocbench/bootstrap.sh \
             (expected layout: OmniDocBench/{{OmniDocBench.json, images/*.jpg}})",
            root.display()
        );
    }
    if let Some(list) = subset_filelist {
        return read_subset(list, &images);
    }
    let json = root.join(OMNIDOCBENCH_JSON);
    if let Err(s) = file_kind::regular_file(&json) {
        if s.kind != NotRegular::Missing {
            bail!("{s}: expected the OmniDocBench ground-truth JSON (a regular file)");
        }
        tracing::warn!(path = %json.display(), "no OmniDocBench.json: listing images/ by name");
        return list_images_entries(&images, None);
    }
    let pages = read_page_list(&json)?;
    let mut missing = Vec::new();
    let mut out = Listing::default();
    let mut paths = Vec::with_capacity(pages.len());
    for p in pages {
        // Names from the dataset's own index (untrusted, docs/security.md): relative to images/.
        paths.push(crate::untrusted::join(&images, &p).map_err(|e| {
            anyhow::anyhow!(
                "{}: image_path {e}: pages are paths relative to {}\n  fix: re-download the dataset",
                json.display(),
                images.display()
            )
        })?);
    }
    for path in paths {
        match file_kind::regular_file(&path) {
            Ok(_) => out.images.push(path),
            Err(s) if matches!(s.kind, NotRegular::Missing | NotRegular::BrokenSymlink) => {
                missing.push(path)
            }
            Err(s) => out.skipped.push(s),
        }
    }
    file_kind::warn_skipped("dataset entry", &out.skipped);
    if let Some(first) = missing.first() {
        bail!(
            "{} lists {} page image(s) missing from {} (first: {}); re-download the dataset or \
             set dataset.subset_filelist to the pages you have",
            json.display(),
            missing.len(),
            images.display(),
            first.display()
        );
    }
    if out.images.is_empty() {
        let note = file_kind::skipped_note(&out.skipped).unwrap_or_default();
        bail!("{} lists no readable page image: {note}", json.display());
    }
    Ok(out)
}

/// `[*].page_info.image_path` in file order, duplicates dropped.
fn read_page_list(json: &Path) -> Result<Vec<String>> {
    let bytes = std::fs::read(json).with_context(|| format!("reading {}", json.display()))?;
    let pages: Vec<Page> = serde_json::from_slice(&bytes).with_context(|| {
        format!(
            "{}: expected a list of pages with page_info.image_path",
            json.display()
        )
    })?;
    if pages.is_empty() {
        bail!("{} lists no pages", json.display());
    }
    let mut seen = HashSet::new();
    Ok(pages
        .into_iter()
        .map(|p| p.page_info.image_path)
        .filter(|p| seen.insert(p.clone()))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::super::test_util::{temp_dir, touch};
    use super::*;

    fn page(path: &str) -> String {
        format!(
            r#"{{"layout_dets": [{{"category_type": "title", "poly": [1,2,3,4,5,6,7,8]}}],
                "page_info": {{"page_no": 0, "height": 1684, "width": 1200, "image_path": "{path}",
                               "page_attribute": {{"language": "en"}}}},
                "extra": {{"relation": []}}}}"#
        )
    }

    fn write_json(root: &Path, paths: &[&str]) {
        let body: Vec<String> = paths.iter().map(|p| page(p)).collect();
        std::fs::write(
            root.join(OMNIDOCBENCH_JSON),
            format!("[{}]", body.join(",")),
        )
        .unwrap();
    }

    #[test]
    fn json_sets_order_and_drops_duplicates() {
        let root = temp_dir("odb-json");
        touch(&root, &["images/z.jpg", "images/a.jpg", "images/extra.png"]);
        write_json(&root, &["z.jpg", "a.jpg", "z.jpg"]);
        let got = list_omnidocbench(&root, None).unwrap();
        assert_eq!(
            got,
            vec![root.join("images/z.jpg"), root.join("images/a.jpg")]
        );
    }

    #[test]
    fn json_page_without_image_is_reported() {
        let root = temp_dir("odb-missing");
        touch(&root, &["images/a.jpg"]);
        write_json(&root, &["a.jpg", "gone1.jpg", "gone2.jpg"]);
        let e = format!("{:#}", list_omnidocbench(&root, None).unwrap_err());
        assert!(
            e.contains("2 page image(s) missing") && e.contains("gone1.jpg"),
            "{e}"
        );
    }

    #[test]
    fn without_json_lists_images_folder() {
        let root = temp_dir("odb-nojson");
        touch(&root, &["images/b.jpg", "images/a.jpg"]);
        let got = list_omnidocbench(&root, None).unwrap();
        assert_eq!(
            got,
            vec![root.join("images/a.jpg"), root.join("images/b.jpg")]
        );
    }

    #[test]
    fn subset_is_relative_to_images() {
        let root = temp_dir("odb-subset");
        touch(&root, &["images/a.jpg", "images/b.jpg"]);
        write_json(&root, &["a.jpg", "b.jpg"]);
        let list = root.join("dev.txt");
        std::fs::write(&list, "# two pages\nb.jpg\n").unwrap();
        let got = list_omnidocbench(&root, Some(&list)).unwrap();
        assert_eq!(got, vec![root.join("images/b.jpg")]);
    }

    #[test]
    fn bad_json_names_the_file() {
        let root = temp_dir("odb-bad");
        touch(&root, &["images/a.jpg"]);
        std::fs::write(root.join(OMNIDOCBENCH_JSON), r#"[{"page_info": {}}]"#).unwrap();
        let e = format!("{:#}", list_omnidocbench(&root, None).unwrap_err());
        assert!(
            e.contains(OMNIDOCBENCH_JSON) && e.contains("image_path"),
            "{e}"
        );
    }

    #[test]
    fn no_images_folder_points_to_bootstrap() {
        let root = temp_dir("odb-noimages");
        let e = format!("{:#}", list_omnidocbench(&root, None).unwrap_err());
        assert!(e.contains("bootstrap.sh") && e.contains("images/"), "{e}");
    }
}
