use super::*;
use crate::dataset::test_util::temp_dir;
use std::collections::BTreeMap;

/// Every file under `dir` with its bytes (to prove a source unchanged).
fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(
                    p.strip_prefix(dir).unwrap().to_path_buf(),
                    std::fs::read(&p).unwrap(),
                );
            }
        }
    }
    out
}

fn pages(root: &Path, n: usize) {
    std::fs::create_dir_all(root).unwrap();
    let mut meta = String::from("font: x\npages:\n");
    for i in 0..n {
        let name = format!("p{i:02}.png");
        std::fs::write(root.join(&name), format!("page {i}")).unwrap();
        let kind = if i % 2 == 0 { "table" } else { "text" };
        meta.push_str(&format!(
            "  - file: {name}\n    width: 1\n    height: 1\n    kinds: [{kind}]\n    markdown: m\n"
        ));
    }
    std::fs::write(root.join("metadata.yaml"), meta).unwrap();
}

fn request(base: &Path, variant: &str, n: u64, seed: u64) -> VariantRequest {
    VariantRequest {
        dataset: "samples".into(),
        source_root: base.join("datasets/samples"),
        datasets_dir: base.join("datasets"),
        variant: variant.into(),
        num_samples: n,
        seed,
        subset_file: None,
        kind: None,
    }
}

#[test]
fn a_seed_makes_the_same_variant_and_the_source_is_untouched() {
    let base = temp_dir("variant-seed");
    let src = base.join("datasets/samples");
    pages(&src, 12);
    let before = tree(&src);
    let (a, ma) = make_variant(&request(&base, "a", 4, 9)).unwrap();
    let (b, mb) = make_variant(&request(&base, "b", 4, 9)).unwrap();
    let (_, mc) = make_variant(&request(&base, "c", 4, 10)).unwrap();
    assert_eq!(ma.selection.items, mb.selection.items);
    assert_ne!(ma.selection.items, mc.selection.items);
    assert_eq!(ma.size.items, 4);
    assert_eq!(ma.size.of, 12);
    let files = |d: &Path| {
        let mut t: Vec<PathBuf> = tree(d)
            .into_keys()
            .filter(|p| p != Path::new(VARIANT_METADATA))
            .collect();
        t.sort();
        t
    };
    assert_eq!(files(&a), files(&b));
    assert_eq!(files(&a).len(), 4);
    // The variant folders sit beside the source pages, not among them.
    let mut after = tree(&src);
    after.retain(|p, _| p.components().count() == 1);
    assert_eq!(before, after);
    // The listing of the variant is a folder dataset of those pages.
    let listed = crate::dataset::list_images(&a, None).unwrap();
    let names: Vec<String> = listed
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().to_string())
        .collect();
    assert_eq!(names, ma.selection.items);
}

#[test]
fn an_existing_variant_is_never_overwritten() {
    let base = temp_dir("variant-exists");
    pages(&base.join("datasets/samples"), 3);
    let (dir, _) = make_variant(&request(&base, "v", 2, 0)).unwrap();
    let meta_before = std::fs::read(dir.join(VARIANT_METADATA)).unwrap();
    let e = format!(
        "{:#}",
        make_variant(&request(&base, "v", 1, 5)).unwrap_err()
    );
    assert!(e.contains("already exists"), "{e}");
    assert_eq!(
        std::fs::read(dir.join(VARIANT_METADATA)).unwrap(),
        meta_before
    );
    let bad = format!(
        "{:#}",
        make_variant(&request(&base, "../x", 1, 0)).unwrap_err()
    );
    assert!(bad.contains("not a variant name"), "{bad}");
}

#[test]
fn kind_and_subset_filters_narrow_the_source() {
    let base = temp_dir("variant-kind");
    pages(&base.join("datasets/samples"), 6);
    let mut r = request(&base, "tables", 10, 0);
    r.kind = Some("table".into());
    let (_, m) = make_variant(&r).unwrap();
    assert_eq!(m.selection.items, vec!["p00.png", "p02.png", "p04.png"]);
    let list = base.join("few.txt");
    std::fs::write(&list, "p01.png\np02.png\n").unwrap();
    let mut r = request(&base, "listed", 10, 0);
    r.subset_file = Some(list);
    let (_, m) = make_variant(&r).unwrap();
    assert_eq!(m.selection.items, vec!["p01.png", "p02.png"]);
    let mut r = request(&base, "none", 1, 0);
    r.kind = Some("chart".into());
    let e = format!("{:#}", make_variant(&r).unwrap_err());
    assert!(e.contains("kind 'chart'") && e.contains("table"), "{e}");
}

#[test]
fn an_omnidocbench_variant_keeps_its_layout_and_ground_truth() {
    let base = temp_dir("variant-odb");
    let src = base.join("datasets/omnidocbench/source-data");
    std::fs::create_dir_all(src.join("images")).unwrap();
    let mut entries = Vec::new();
    for (i, ds) in ["book", "exam_paper", "book", "note"].iter().enumerate() {
        std::fs::write(src.join(format!("images/{i}.jpg")), format!("{i}")).unwrap();
        entries.push(format!(r#"{{"page_info": {{"image_path": "{i}.jpg", "page_attribute": {{"data_source": "{ds}"}}}}}}"#));
    }
    std::fs::write(
        src.join("OmniDocBench.json"),
        format!("[{}]", entries.join(",")),
    )
    .unwrap();
    let r = VariantRequest {
        dataset: "omnidocbench".into(),
        source_root: src.clone(),
        datasets_dir: base.join("datasets"),
        variant: "books".into(),
        num_samples: 5,
        seed: 1,
        subset_file: None,
        kind: Some("book".into()),
    };
    let (dir, m) = make_variant(&r).unwrap();
    assert_eq!(m.selection.items, vec!["0.jpg", "2.jpg"]);
    let listed = crate::dataset::list_omnidocbench(&dir, None).unwrap();
    assert_eq!(
        listed,
        vec![dir.join("images/0.jpg"), dir.join("images/2.jpg")]
    );
}

#[test]
fn a_jsonl_variant_is_a_jsonl_subset() {
    let base = temp_dir("variant-jsonl");
    let src = base.join("datasets/prompts");
    std::fs::create_dir_all(&src).unwrap();
    let lines: Vec<String> = (0..10)
        .map(|i| format!(r#"{{"prompt": "p{i}"}}"#))
        .collect();
    std::fs::write(src.join("prompts.jsonl"), lines.join("\n") + "\n").unwrap();
    let r = VariantRequest {
        dataset: "prompts".into(),
        source_root: src.join("prompts.jsonl"),
        datasets_dir: base.join("datasets"),
        variant: "subset-3".into(),
        num_samples: 3,
        seed: 2,
        subset_file: None,
        kind: None,
    };
    let (dir, m) = make_variant(&r).unwrap();
    assert_eq!(m.layout, Layout::Jsonl);
    assert_eq!(m.data, "prompts.jsonl");
    let got = std::fs::read_to_string(dir.join("prompts.jsonl")).unwrap();
    let want: Vec<&str> = m
        .selection
        .items
        .iter()
        .map(|n| lines[n.parse::<usize>().unwrap() - 1].as_str())
        .collect();
    assert_eq!(got.lines().collect::<Vec<_>>(), want);
    // A run on it reads the subset file and records the variant.
    let mut tree = crate::config::yaml::parse(&format!(
        "dataset: {{name: prompts, root: {}, subset_filelist: null, variant: subset-3}}\n",
        src.join("prompts.jsonl").display()
    ))
    .unwrap();
    apply_variant(&mut tree, &base, None).unwrap();
    assert_eq!(
        tree.get_path("dataset.root"),
        Some(&Node::Str(dir.join("prompts.jsonl").display().to_string()))
    );
}

#[test]
fn a_missing_variant_names_the_fix() {
    let base = temp_dir("variant-missing");
    pages(&base.join("datasets/samples"), 3);
    make_variant(&request(&base, "two", 2, 0)).unwrap();
    let mut tree = crate::config::yaml::parse(
        "dataset: {name: samples, root: datasets/samples, subset_filelist: x.txt, variant: nope}\n",
    )
    .unwrap();
    let e = format!("{:#}", apply_variant(&mut tree, &base, None).unwrap_err());
    assert!(
        e.contains("make-variant samples --variant nope") && e.contains("two"),
        "{e}"
    );
    let mut tree = crate::config::yaml::parse(
        "dataset: {name: samples, root: datasets/samples, subset_filelist: x.txt, variant: two}\n",
    )
    .unwrap();
    apply_variant(&mut tree, &base, None).unwrap();
    assert_eq!(tree.get_path("dataset.subset_filelist"), Some(&Node::Null));
}

/// Names from the dataset and links in it cannot make a variant read or write outside the source
/// and variant folders (docs/security.md); nothing outside changes, no variant is left.
#[test]
fn a_variant_holds_only_files_of_its_source_under_relative_names() {
    let base = temp_dir("variant-escape");
    let src = base.join("datasets/samples");
    pages(&src, 4);
    std::fs::write(base.join("outside.png"), b"secret").unwrap();
    let outside_before = tree(&base);
    // A subset file naming a page outside the folder, by `..` and by an absolute path.
    for entry in [
        "../../outside.png".to_string(),
        base.join("outside.png").display().to_string(),
    ] {
        let list = base.join("escape.txt");
        std::fs::write(&list, format!("p01.png\n{entry}\n")).unwrap();
        let mut r = request(&base, "escape", 10, 0);
        r.subset_file = Some(list.clone());
        let e = format!("{:#}", make_variant(&r).unwrap_err());
        // The subset reader refuses them first; make-variant checks names again before writing.
        assert!(
            e.contains("'..'") || e.contains("absolute path"),
            "{entry}: {e}"
        );
        assert!(
            !base.join("datasets/samples/escape").exists(),
            "{entry}: a variant was left"
        );
        std::fs::remove_file(&list).unwrap();
    }
    // A page that is a symbolic link to a file outside the folder.
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(base.join("outside.png"), src.join("p09.png")).unwrap();
        let mut meta = std::fs::read_to_string(src.join("metadata.yaml")).unwrap();
        meta.push_str(
            "  - file: p09.png\n    width: 1\n    height: 1\n    kinds: [text]\n    markdown: m\n",
        );
        std::fs::write(src.join("metadata.yaml"), meta).unwrap();
        let e = format!(
            "{:#}",
            make_variant(&request(&base, "linked", 10, 0)).unwrap_err()
        );
        assert!(e.contains("leads outside"), "{e}");
        assert!(!base.join("datasets/samples/linked").exists());
        std::fs::remove_file(src.join("p09.png")).unwrap();
    }
    assert_eq!(std::fs::read(base.join("outside.png")).unwrap(), b"secret");
    // A dataset name that is not one folder name.
    let mut r = request(&base, "ok", 2, 0);
    r.dataset = "../elsewhere".into();
    let e = format!("{:#}", make_variant(&r).unwrap_err());
    assert!(e.contains("the dataset name") && e.contains("'..'"), "{e}");
    let after: Vec<_> = tree(&base)
        .into_keys()
        .filter(|p| !p.starts_with("datasets/samples"))
        .collect();
    let before: Vec<_> = outside_before
        .into_keys()
        .filter(|p| !p.starts_with("datasets/samples"))
        .collect();
    assert_eq!(after, before, "files appeared outside the dataset folder");
}
