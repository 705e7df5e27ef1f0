//! `llmprof dataset make-variant` and `dataset.variant=` from the command line: a copy of the
//! sample pages in a scratch folder, a seeded variant made twice, and a run on it (with a
//! stand-in worker) reading the variant's folder.
use crate::support::{repo_root, run_in, scratch, stderr, stdout};
use std::path::Path;
use std::process::Command;

/// A scratch folder holding datasets/samples (the shipped pages and their metadata).
fn with_samples(name: &str) -> std::path::PathBuf {
    let dir = scratch(name);
    let src = repo_root().join("datasets/samples");
    let dst = dir.join("datasets/samples");
    std::fs::create_dir_all(&dst).unwrap();
    for e in std::fs::read_dir(&src).unwrap().flatten() {
        if e.path().is_file() {
            std::fs::copy(e.path(), dst.join(e.file_name())).unwrap();
        }
    }
    dir
}

fn make(dir: &Path, variant: &str, seed: &str, extra: &[&str]) -> std::process::Output {
    let conf = repo_root().join("conf").display().to_string();
    let mut args = vec![
        "--config-dir",
        &conf,
        "dataset",
        "make-variant",
        "samples",
        "--variant",
        variant,
        "--num-samples",
        "3",
        "--seed",
        seed,
    ];
    args.extend_from_slice(extra);
    run_in(dir, &args)
}

fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect();
    v.sort();
    v
}

#[test]
fn make_variant_is_seeded_keeps_the_source_and_refuses_to_overwrite() {
    let dir = with_samples("variants-cli");
    let src = dir.join("datasets/samples");
    let before = listing(&src);
    let a = make(&dir, "subset-3", "5", &[]);
    assert!(a.status.success(), "{}", stderr(&a));
    let made = src.join("subset-3");
    assert_eq!(stdout(&a).trim(), made.display().to_string());
    let b = make(&dir, "again-3", "5", &[]);
    assert!(b.status.success(), "{}", stderr(&b));
    assert_eq!(listing(&made), listing(&src.join("again-3")));
    assert_eq!(listing(&made).len(), 4, "3 pages and metadata.yaml");
    let mut after = listing(&src);
    after.retain(|n| n != "subset-3" && n != "again-3");
    assert_eq!(before, after);
    let meta = std::fs::read_to_string(made.join("metadata.yaml")).unwrap();
    for key in [
        "parent: samples",
        "created:",
        "transform:",
        "size:",
        "seed: 5",
        "items:",
    ] {
        assert!(meta.contains(key), "metadata.yaml lacks {key}:\n{meta}");
    }
    let again = make(&dir, "subset-3", "6", &[]);
    assert!(!again.status.success());
    assert!(
        stderr(&again).contains("already exists"),
        "{}",
        stderr(&again)
    );
    assert_eq!(
        std::fs::read_to_string(made.join("metadata.yaml")).unwrap(),
        meta
    );
    let kinds = make(&dir, "formulas", "0", &["--kind", "formula"]);
    assert!(kinds.status.success(), "{}", stderr(&kinds));
    let pages: Vec<String> = listing(&src.join("formulas"))
        .into_iter()
        .filter(|n| n.ends_with(".png"))
        .collect();
    assert!(
        !pages.is_empty()
            && pages
                .iter()
                .all(|p| p.contains("formula") || p.contains("full")),
        "{pages:?}"
    );
}

#[test]
fn a_run_on_a_variant_reads_the_variant_folder() {
    let dir = with_samples("variants-run");
    assert!(make(&dir, "subset-3", "1", &[]).status.success());
    let worker = dir.join("fake-worker.sh");
    std::fs::write(&worker, "#!/bin/sh\nexit 0\n").unwrap();
    Command::new("chmod")
        .arg("+x")
        .arg(&worker)
        .status()
        .unwrap();
    let conf = repo_root().join("conf").display().to_string();
    let out = Command::new(crate::support::llmprof())
        .args([
            "--config-dir",
            &conf,
            "infer",
            "dataset.variant=subset-3",
            "hydra.run.dir=run",
        ])
        .current_dir(&dir)
        .env("LLMPROF_WORKER", &worker)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let resolved = std::fs::read_to_string(dir.join("run/config.resolved.yaml")).unwrap();
    let variant = dir.join("datasets/samples/subset-3");
    assert!(
        resolved.contains(&format!("root: {}", variant.display())),
        "{resolved}"
    );
    assert!(resolved.contains("variant: subset-3"), "{resolved}");
    let missing = run_in(
        &dir,
        &[
            "--config-dir",
            &conf,
            "infer",
            "dataset.variant=nope",
            "hydra.run.dir=run2",
        ],
    );
    assert!(!missing.status.success());
    let e = stderr(&missing);
    assert!(
        e.contains("make-variant samples --variant nope") && e.contains("subset-3"),
        "{e}"
    );
    assert!(
        !dir.join("run2").exists(),
        "no run folder for a bad variant"
    );
}
