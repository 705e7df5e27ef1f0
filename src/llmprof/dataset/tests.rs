//! Folder and subset listings on scratch folders, and the shipped sample pages.
use super::test_util::{temp_dir, touch};
use super::*;
use crate::dataset::SamplingSpec;

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
        variant: None,
        sampling: SamplingSpec {
            num_epochs: 1,
            num_samples_per_epoch: None,
            randomize: false,
            seed: 0,
        },
        max_image_pixels: DEFAULT_MAX_IMAGE_PIXELS,
        max_image_bytes: DEFAULT_MAX_IMAGE_BYTES,
        input_len: None,
        output_len: None,
        range_ratio: None,
        num_prompts: None,
        seed: None,
        file: None,
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

/// Entries of a subset file and of OmniDocBench.json name images inside the dataset's folder by
/// relative paths: `..` and absolute paths are refused, naming the file and the entry.
#[test]
fn dataset_entries_cannot_leave_the_dataset_folder() {
    let d = temp_dir("subset-escape");
    touch(&d, &["p1.png"]);
    for (entry, why) in [("../outside.png", "'..'"), ("/etc/outside.png", "absolute")] {
        let list = d.join("subset.txt");
        std::fs::write(&list, format!("p1.png\n{entry}\n")).unwrap();
        let e = format!("{:#}", list_images(&d, Some(&list)).unwrap_err());
        assert!(
            e.contains("subset.txt:2") && e.contains(why),
            "{entry}: {e}"
        );
    }
    let root = temp_dir("omnidocbench-escape");
    std::fs::create_dir_all(root.join("images")).unwrap();
    std::fs::write(root.join("images/a.jpg"), b"x").unwrap();
    std::fs::write(
        root.join("OmniDocBench.json"),
        r#"[{"page_info": {"image_path": "a.jpg"}}, {"page_info": {"image_path": "../../secret.jpg"}}]"#,
    )
    .unwrap();
    let e = format!(
        "{:#}",
        super::omnidocbench::list_omnidocbench(&root, None).unwrap_err()
    );
    assert!(e.contains("OmniDocBench.json") && e.contains("'..'"), "{e}");
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
        variant: None,
        sampling: SamplingSpec {
            num_epochs: 1,
            num_samples_per_epoch: None,
            randomize: false,
            seed: 0,
        },
        max_image_pixels: DEFAULT_MAX_IMAGE_PIXELS,
        max_image_bytes: DEFAULT_MAX_IMAGE_BYTES,
        input_len: None,
        output_len: None,
        range_ratio: None,
        num_prompts: None,
        seed: None,
        file: None,
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
    assert!(got.len() >= 20, "{got:?}");
    assert!(names(&got)[0].starts_with("page-01"));
}
