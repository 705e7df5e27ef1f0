//! `llmprof models download` and `model.weights=hub` against the local fake Hub
//! (tests/front_end/fake_hub.rs): full download, a transfer cut midway then resumed, a 404 naming repo and
//! file, offline with and without a cached snapshot, and a wrong hash that leaves no snapshot.
use crate::front_end::fake_hub::{sha256_hex, tiny_repo, FakeHub, COMMIT, REPO};
use crate::support::{llmprof, repo_root, scratch, stderr, stdout};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `llmprof <args>` with the Hub at `hub` and the HF cache under `home`.
pub(crate) fn run(hub: &FakeHub, home: &Path, extra_env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd = Command::new(llmprof());
    cmd.args(args)
        .current_dir(home)
        .env("RUST_LOG", "warn")
        .env("HF_ENDPOINT", &hub.url)
        .env("HF_HOME", home.join("hf"))
        .env_remove("HF_HUB_CACHE")
        .env_remove("HF_TOKEN")
        .env_remove("HF_HUB_OFFLINE")
        .env_remove("TRANSFORMERS_OFFLINE");
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    cmd.output().expect("llmprof runs")
}

/// A worker that exits 0 at once, in `home`: the front end's part of a run without libtorch.
fn fake_worker(home: &Path) -> PathBuf {
    let worker = home.join("fake-worker.sh");
    std::fs::write(&worker, "#!/bin/sh\nexit 0\n").unwrap();
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&worker)
        .status()
        .unwrap();
    worker
}

pub(crate) fn cache_entry(home: &Path) -> PathBuf {
    home.join("hf/hub/models--tiny-org--tiny-model")
}

pub(crate) fn download(hub: &FakeHub, home: &Path, env: &[(&str, &str)]) -> Output {
    let conf = repo_root().join("conf").display().to_string();
    run(
        hub,
        home,
        env,
        &["--config-dir", &conf, "models", "download", REPO],
    )
}

#[test]
fn full_download_fills_the_shared_cache_layout_with_only_the_model_files() {
    let hub = FakeHub::start(tiny_repo());
    let home = scratch("hub-full");
    let out = download(&hub, &home, &[("HF_TOKEN", "hf_test_token")]);
    assert!(out.status.success(), "{}", stderr(&out));
    let entry = cache_entry(&home);
    let snap = entry.join("snapshots").join(COMMIT);
    assert_eq!(stdout(&out).trim(), snap.display().to_string());
    assert_eq!(
        std::fs::read_to_string(entry.join("refs/main")).unwrap(),
        COMMIT
    );
    for f in tiny_repo()
        .iter()
        .filter(|f| f.name != "README.md" && f.name != "pytorch_model.bin")
    {
        let p = snap.join(&f.name);
        assert!(
            p.symlink_metadata().unwrap().file_type().is_symlink(),
            "{} is not a pointer",
            f.name
        );
        assert_eq!(std::fs::read(&p).unwrap(), f.bytes, "{}", f.name);
    }
    let weights = tiny_repo()
        .into_iter()
        .find(|f| f.name == "model.safetensors")
        .unwrap();
    assert!(entry
        .join("blobs")
        .join(sha256_hex(&weights.bytes))
        .is_file());
    assert!(!snap.join("README.md").exists() && !snap.join("pytorch_model.bin").exists());
    let paths = hub.paths();
    assert!(
        !paths
            .iter()
            .any(|p| p.ends_with("README.md") || p.ends_with(".bin")),
        "{paths:?}"
    );
    assert!(hub
        .seen
        .lock()
        .unwrap()
        .iter()
        .all(|s| s.auth.as_deref() == Some("Bearer hf_test_token")));
    // A second download finds every blob in the cache and fetches no bytes again.
    let n = hub.paths().len();
    let again = download(&hub, &home, &[]);
    assert!(again.status.success(), "{}", stderr(&again));
    let full_gets = hub.seen.lock().unwrap()[n..]
        .iter()
        .filter(|s| s.range.is_none() && s.path.contains("/resolve/"))
        .count();
    assert_eq!(full_gets, 0);
}

#[test]
fn a_transfer_cut_midway_resumes_from_where_it_stopped() {
    let hub = FakeHub::start(tiny_repo());
    hub.faults
        .lock()
        .unwrap()
        .cut_once
        .insert("model.safetensors".into());
    let home = scratch("hub-resume");
    let first = download(&hub, &home, &[]);
    assert!(!first.status.success(), "a cut transfer must fail");
    let e = stderr(&first);
    assert!(
        e.contains("model.safetensors") && e.contains("resume"),
        "{e}"
    );
    let entry = cache_entry(&home);
    assert!(
        !entry.join("snapshots").join(COMMIT).exists(),
        "no snapshot after a failure"
    );
    let partial: Vec<PathBuf> = std::fs::read_dir(entry.join("blobs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "incomplete"))
        .collect();
    assert_eq!(partial.len(), 1, "{partial:?}");
    let have = std::fs::metadata(&partial[0]).unwrap().len();
    assert!(have > 0);
    let second = download(&hub, &home, &[]);
    assert!(second.status.success(), "{}", stderr(&second));
    let resumed = format!("bytes={have}-");
    assert!(
        hub.seen
            .lock()
            .unwrap()
            .iter()
            .any(|s| s.range.as_deref() == Some(resumed.as_str())),
        "no request resumed at {have}"
    );
    let weights = tiny_repo()
        .into_iter()
        .find(|f| f.name == "model.safetensors")
        .unwrap();
    let snap = entry.join("snapshots").join(COMMIT);
    assert_eq!(
        std::fs::read(snap.join("model.safetensors")).unwrap(),
        weights.bytes
    );
}

#[test]
fn a_missing_file_names_the_repository_and_the_file() {
    let hub = FakeHub::start(tiny_repo());
    hub.faults
        .lock()
        .unwrap()
        .missing
        .insert("tokenizer.json".into());
    let home = scratch("hub-404");
    let out = download(&hub, &home, &[]);
    assert!(!out.status.success());
    let e = stderr(&out);
    assert!(
        e.contains(REPO) && e.contains("tokenizer.json") && e.contains("404"),
        "{e}"
    );
    assert!(!cache_entry(&home).join("snapshots").join(COMMIT).exists());
    // A preset whose repository the Hub does not have: the error names the repository.
    let conf = repo_root().join("conf").display().to_string();
    let out = run(
        &hub,
        &home,
        &[],
        &["--config-dir", &conf, "models", "download", "deepseek_ocr"],
    );
    let e = stderr(&out);
    assert!(
        !out.status.success() && e.contains("deepseek-ai/DeepSeek-OCR"),
        "{e}"
    );
    let out = run(
        &hub,
        &home,
        &[],
        &[
            "--config-dir",
            &conf,
            "models",
            "download",
            "deepseek_ocr_tiny",
        ],
    );
    let e = stderr(&out);
    assert!(!out.status.success() && e.contains("model.repo_id"), "{e}");
}

#[test]
fn offline_uses_a_cached_snapshot_or_says_there_is_none() {
    let hub = FakeHub::start(tiny_repo());
    let home = scratch("hub-offline");
    let out = download(&hub, &home, &[("HF_HUB_OFFLINE", "1")]);
    assert!(!out.status.success());
    let e = stderr(&out);
    assert!(e.contains("HF_HUB_OFFLINE") && e.contains(REPO), "{e}");
    assert!(
        hub.paths().is_empty(),
        "offline must not reach the Hub: {:?}",
        hub.paths()
    );
    assert!(download(&hub, &home, &[]).status.success());
    let n = hub.paths().len();
    let out = download(&hub, &home, &[("HF_HUB_OFFLINE", "1")]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out).trim(),
        cache_entry(&home)
            .join("snapshots")
            .join(COMMIT)
            .display()
            .to_string()
    );
    assert_eq!(hub.paths().len(), n, "offline must not reach the Hub");
}

#[test]
fn a_wrong_hash_is_an_error_and_leaves_no_snapshot() {
    let hub = FakeHub::start(tiny_repo());
    hub.faults
        .lock()
        .unwrap()
        .corrupt
        .insert("model.safetensors".into());
    let home = scratch("hub-hash");
    let out = download(&hub, &home, &[]);
    assert!(!out.status.success());
    let e = stderr(&out);
    assert!(
        e.contains("model.safetensors") && e.contains("sha256") && e.contains(REPO),
        "{e}"
    );
    let entry = cache_entry(&home);
    assert!(!entry.join("snapshots").exists(), "a snapshot was written");
    assert!(!entry.join("refs/main").exists());
    let blobs: Vec<String> = std::fs::read_dir(entry.join("blobs"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect();
    assert!(
        blobs.iter().all(|b| !b.ends_with(".incomplete")),
        "{blobs:?}"
    );
    let weights = tiny_repo()
        .into_iter()
        .find(|f| f.name == "model.safetensors")
        .unwrap();
    assert!(
        !blobs.contains(&sha256_hex(&weights.bytes)),
        "the corrupted blob was kept"
    );
}

#[test]
fn a_run_with_hub_weights_hands_the_snapshot_to_the_worker() {
    let hub = FakeHub::start(tiny_repo());
    let home = scratch("hub-run");
    let worker = fake_worker(&home);
    let conf = repo_root().join("conf").display().to_string();
    let repo_override = format!("model.repo_id={REPO}");
    let out = run(
        &hub,
        &home,
        &[("LLMPROF_WORKER", worker.to_str().unwrap())],
        &[
            "--config-dir",
            &conf,
            "infer",
            "model=deepseek_ocr_tiny",
            "model.weights=hub",
            &repo_override,
            "hydra.run.dir=run",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let resolved = std::fs::read_to_string(home.join("run/config.resolved.yaml")).unwrap();
    let snap = cache_entry(&home).join("snapshots").join(COMMIT);
    assert!(
        resolved.contains(&format!("path: {}", snap.display())),
        "{resolved}"
    );
    assert!(resolved.contains("weights: hub"), "{resolved}");
}

/// `model=hf model.weights=hub model.repo=ORG/NAME` (#42): the snapshot is fetched first, its
/// config.json names the family and gives the architecture, and the run records both.
#[test]
fn model_hf_from_the_hub_reads_the_snapshot_config() {
    let mut files = tiny_repo();
    files[0].bytes = br#"{"model_type": "qwen3", "vocab_size": 512, "hidden_size": 64,
        "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 16, "max_position_embeddings": 2048,
        "tie_word_embeddings": true, "bos_token_id": 1, "eos_token_id": 2}"#
        .to_vec();
    let hub = FakeHub::start(files);
    let home = scratch("hub-hf");
    let worker = fake_worker(&home);
    let conf = repo_root().join("conf").display().to_string();
    let repo = format!("model.repo={REPO}");
    let out = run(
        &hub,
        &home,
        &[("LLMPROF_WORKER", worker.to_str().unwrap())],
        &[
            "--config-dir",
            &conf,
            "infer",
            "model=hf",
            "model.weights=hub",
            &repo,
            "hydra.run.dir=run",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let resolved = std::fs::read_to_string(home.join("run/config.resolved.yaml")).unwrap();
    let snap = cache_entry(&home).join("snapshots").join(COMMIT);
    for want in [
        format!("path: {}", snap.display()),
        format!("repo_id: {REPO}"),
        "family: dense_decoder".to_string(),
        "qk_norm: true".to_string(),
    ] {
        assert!(resolved.contains(&want), "{want} missing:\n{resolved}");
    }
}

/// The `hub.cache_dir` setting is where downloads go (it wins over HF_HOME's cache), and an error
/// caused by a setting names it: shown settings are used settings (#40 item 6).
#[test]
fn the_cache_dir_setting_is_where_the_snapshot_goes() {
    let hub = FakeHub::start(tiny_repo());
    let home = scratch("hub-cache-setting");
    let cache = home.join("site-cache");
    let out = download(
        &hub,
        &home,
        &[("LLMPROF_HUB__CACHE_DIR", cache.to_str().unwrap())],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let snap = cache
        .join("models--tiny-org--tiny-model/snapshots")
        .join(COMMIT);
    assert_eq!(stdout(&out).trim(), snap.display().to_string());
    assert!(snap.join("config.json").is_file());
    assert!(!cache_entry(&home).exists(), "nothing in HF_HOME's cache");
}
