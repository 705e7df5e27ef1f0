//! The bootstrap scripts (models/, datasets/*/) run against fake HF caches and dataset trees in
//! scratch folders; nothing touches the network (`--offline`) or the repository's own links.
use crate::support::{repo_root, scratch};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, SystemTime};

const CACHE_ENTRY: &str = "models--deepseek-ai--DeepSeek-OCR";

/// Runs models/bootstrap.sh with the HF lookup pointed at `hub` and the link made in `models`.
fn model_bootstrap(hub: &Path, models: &Path, args: &[&str]) -> Output {
    Command::new("bash")
        .arg(repo_root().join("models/bootstrap.sh"))
        .args(args)
        .env("HF_HUB_CACHE", hub)
        .env_remove("HF_SNAPSHOTS_ROOT")
        .env("LLMPROF_MODELS_DIR", models)
        .output()
        .expect("bash runs")
}

/// A snapshot folder with the given files (shard names go into the index's weight_map).
fn fake_snapshot(hub: &Path, rev: &str, files: &[&str], shards_in_index: &[&str]) -> PathBuf {
    let snap = hub.join(CACHE_ENTRY).join("snapshots").join(rev);
    std::fs::create_dir_all(&snap).unwrap();
    for f in files {
        std::fs::write(snap.join(f), b"{}").unwrap();
    }
    if !shards_in_index.is_empty() {
        let map: Vec<String> = shards_in_index
            .iter()
            .enumerate()
            .map(|(i, s)| format!("\"t{i}\": \"{s}\""))
            .collect();
        let index = format!(
            "{{\"metadata\": {{}}, \"weight_map\": {{{}}}}}",
            map.join(", ")
        );
        std::fs::write(snap.join("model.safetensors.index.json"), index).unwrap();
    }
    snap
}

fn set_mtime(dir: &Path, t: SystemTime) {
    std::fs::File::open(dir).unwrap().set_modified(t).unwrap();
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

const COMPLETE: &[&str] = &[
    "config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "model-00001-of-000001.safetensors",
];

#[test]
fn model_bootstrap_links_the_newest_complete_snapshot() {
    let d = scratch("boot-newest");
    let (hub, models) = (d.join("hub"), d.join("models"));
    std::fs::create_dir_all(&models).unwrap();
    let old = fake_snapshot(
        &hub,
        "aaa111",
        COMPLETE,
        &["model-00001-of-000001.safetensors"],
    );
    let new = fake_snapshot(
        &hub,
        "bbb222",
        COMPLETE,
        &["model-00001-of-000001.safetensors"],
    );
    let now = SystemTime::now();
    set_mtime(&old, now - Duration::from_secs(3600));
    set_mtime(&new, now);

    let o = model_bootstrap(&hub, &models, &["--offline"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("ready"), "{}", text(&o));
    let link = models.join("deepseek-ocr");
    assert_eq!(std::fs::read_link(&link).unwrap(), new);

    // Idempotent; refs/main wins over the newest folder.
    std::fs::create_dir_all(hub.join(CACHE_ENTRY).join("refs")).unwrap();
    std::fs::write(hub.join(CACHE_ENTRY).join("refs/main"), "aaa111\n").unwrap();
    let o = model_bootstrap(&hub, &models, &["--offline"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(std::fs::read_link(&link).unwrap(), old);
}

#[test]
fn model_bootstrap_reports_each_missing_file() {
    let d = scratch("boot-missing");
    let (hub, models) = (d.join("hub"), d.join("models"));
    std::fs::create_dir_all(&models).unwrap();
    // No tokenizer_config.json; the index names a second shard that is absent.
    fake_snapshot(
        &hub,
        "ccc333",
        &[
            "config.json",
            "tokenizer.json",
            "model-00001-of-000002.safetensors",
        ],
        &[
            "model-00001-of-000002.safetensors",
            "model-00002-of-000002.safetensors",
        ],
    );
    let o = model_bootstrap(&hub, &models, &["--offline"]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("- tokenizer_config.json"), "{out}");
    assert!(out.contains("- model-00002-of-000002.safetensors"), "{out}");
    assert!(
        !out.contains("- model-00001-of-000002.safetensors"),
        "{out}"
    );
    assert!(!out.contains("- config.json"), "{out}");
}

#[test]
fn model_bootstrap_accepts_a_single_safetensors_file() {
    let d = scratch("boot-single");
    let (hub, models) = (d.join("hub"), d.join("models"));
    std::fs::create_dir_all(&models).unwrap();
    fake_snapshot(
        &hub,
        "ddd444",
        &[
            "config.json",
            "tokenizer.json",
            "tokenizer_config.json",
            "model.safetensors",
        ],
        &[],
    );
    let o = model_bootstrap(&hub, &models, &["--offline"]);
    assert!(o.status.success(), "{}", text(&o));
    // And without any weights the report says which forms are accepted.
    std::fs::remove_file(
        hub.join(CACHE_ENTRY)
            .join("snapshots/ddd444/model.safetensors"),
    )
    .unwrap();
    let o = model_bootstrap(&hub, &models, &["--offline"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o)
            .contains("model.safetensors.index.json + model-*.safetensors, or model.safetensors"),
        "{}",
        text(&o)
    );
}

#[test]
fn model_bootstrap_without_snapshot_is_optional_unless_required() {
    let d = scratch("boot-none");
    let (hub, models) = (d.join("hub"), d.join("models"));
    std::fs::create_dir_all(&models).unwrap();
    let o = model_bootstrap(&hub, &models, &["--offline"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("synthetic"), "{}", text(&o));
    assert!(!models.join("deepseek-ocr").exists());
    let o = model_bootstrap(&hub, &models, &["--offline", "--require"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let o = model_bootstrap(&hub, &models, &["--bogus"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

#[test]
fn model_bootstrap_keeps_a_real_folder() {
    let d = scratch("boot-realdir");
    let (hub, models) = (d.join("hub"), d.join("models"));
    let real = models.join("deepseek-ocr");
    std::fs::create_dir_all(&real).unwrap();
    for f in [
        "config.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "model.safetensors",
    ] {
        std::fs::write(real.join(f), b"{}").unwrap();
    }
    fake_snapshot(
        &hub,
        "eee555",
        COMPLETE,
        &["model-00001-of-000001.safetensors"],
    );
    let o = model_bootstrap(&hub, &models, &["--offline"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(std::fs::symlink_metadata(&real).unwrap().is_dir());
}

#[test]
fn samples_bootstrap_finds_every_page() {
    let o = Command::new("bash")
        .arg(repo_root().join("datasets/samples/bootstrap.sh"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let pngs = std::fs::read_dir(repo_root().join("datasets/samples"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "png")
        })
        .count();
    assert!(pngs >= 20, "{pngs} pages");
    assert!(
        text(&o).contains(&format!("{pngs} pages present")),
        "{}",
        text(&o)
    );
}

#[test]
fn omnidocbench_bootstrap_is_optional_when_absent() {
    let d = scratch("boot-odb");
    let o = Command::new("bash")
        .arg(repo_root().join("datasets/omnidocbench/bootstrap.sh"))
        .env("DATASETS_ROOT", d.join("nothing-here"))
        .output()
        .unwrap();
    // A developer's own source-data folder or link would change the answer; only check when absent.
    if !repo_root()
        .join("datasets/omnidocbench/source-data")
        .exists()
    {
        assert!(o.status.success(), "{}", text(&o));
        assert!(
            text(&o).contains("llmprof dataset download opendatalab/OmniDocBench"),
            "{}",
            text(&o)
        );
    }
}

#[test]
fn model_bootstrap_downloads_with_the_rust_command() {
    let hub = crate::front_end::fake_hub::FakeHub::start_as(
        "deepseek-ai/DeepSeek-OCR",
        crate::front_end::fake_hub::tiny_repo(),
    );
    let root = scratch("bootstrap-download");
    let (cache, models) = (root.join("hub"), root.join("models"));
    std::fs::create_dir_all(&models).unwrap();
    // A tokenizer already assembled, so the script never reaches for pip.
    std::fs::create_dir_all(models.join("tokenizer")).unwrap();
    std::fs::write(models.join("tokenizer/tokenizer.json"), "{}").unwrap();
    let o = Command::new("bash")
        .arg(repo_root().join("models/bootstrap.sh"))
        .arg("--download")
        .env("HF_HUB_CACHE", &cache)
        .env("HF_ENDPOINT", &hub.url)
        .env("LLMPROF_BIN", crate::support::llmprof())
        .env_remove("HF_SNAPSHOTS_ROOT")
        .env_remove("HF_HUB_OFFLINE")
        .env("LLMPROF_MODELS_DIR", &models)
        .output()
        .expect("bash runs");
    let out = text(&o);
    assert!(
        hub.paths().iter().any(|p| p.contains("/resolve/")),
        "no download: {out}"
    );
    let link =
        std::fs::read_link(models.join("deepseek-ocr")).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(
        link,
        cache
            .join(CACHE_ENTRY)
            .join("snapshots")
            .join(crate::front_end::fake_hub::COMMIT),
        "{out}"
    );
}

/// The tokenizer's output path taken by a file or by a link that leads nowhere (here: to itself)
/// is refused before any download, with exit 2, naming the path and the fix; the link stays.
#[test]
fn tokenizer_assembly_refuses_an_output_that_is_not_a_folder() {
    let root = scratch("assemble-bad-out");
    std::fs::create_dir_all(&root).unwrap();
    let looped = root.join("tokenizer");
    std::os::unix::fs::symlink(&looped, &looped).unwrap();
    let file = root.join("file");
    std::fs::write(&file, "x").unwrap();
    for (out, what) in [
        (&looped, "a link that leads to no folder"),
        (&file, "not a folder"),
    ] {
        let o = Command::new("python3")
            .arg(repo_root().join("scripts/assemble_tokenizer.py"))
            .arg("--out")
            .arg(out)
            .output()
            .expect("python3 runs");
        let err = text(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(what) && err.contains("rm "), "{err}");
    }
    assert!(std::fs::symlink_metadata(&looped)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "x");
}
