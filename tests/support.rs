//! Helpers shared by the integration tests: run the built binaries in a scratch folder.
// Shared by the two test binaries (front_end, worker); each uses a part of it.
#![allow(dead_code)]
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The `llmprof` binary: this package's own in the front-end tests; in the worker tests, the one
/// cargo built beside `llmprof-worker` (`cargo test --workspace` builds both).
pub fn llmprof() -> PathBuf {
    let built = (
        option_env!("CARGO_BIN_EXE_llmprof"),
        option_env!("CARGO_BIN_EXE_llmprof-worker"),
    );
    let exe = match built {
        (Some(exe), _) => return PathBuf::from(exe),
        (None, Some(worker)) => PathBuf::from(worker).with_file_name("llmprof"),
        (None, None) => unreachable!("each test package builds one of the two binaries"),
    };
    assert!(
        exe.is_file(),
        "{} is missing: run the tests with `cargo test --workspace` (scripts/test.sh) so both binaries are built",
        exe.display()
    );
    exe
}

/// The repository root (the test packages live two levels below, in src/<crate>).
/// Left by `.ci/run` once it has set the machine up (services, Pythons): from then on a test
/// whose service is missing fails instead of skipping, as with CI set, so the README's test
/// command that CI runs after `.ci/run` checks them without `.ci/run` running them first.
pub const CI_SERVICES_MARKER: &str = "target/ci-services-required";

/// Whether a missing test service (Slurm, Chromium, the Pythons of the parity and HTA tests)
/// fails its test instead of skipping it: CI set, or [`CI_SERVICES_MARKER`] present.
pub fn services_required() -> bool {
    std::env::var_os("CI").is_some() || repo_root().join(CI_SERVICES_MARKER).is_file()
}

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository root exists")
}

/// Run llmprof in `cwd` with `args`; returns the output.
pub fn run_in(cwd: &Path, args: &[&str]) -> Output {
    Command::new(llmprof())
        .args(args)
        .current_dir(cwd)
        .env("RUST_LOG", "warn")
        .output()
        .expect("llmprof runs")
}

/// Run llmprof in `cwd` against the repository's conf/ (`--config-dir`), then `args`.
pub fn run_with_repo_conf(cwd: &Path, args: &[&str]) -> Output {
    let conf = repo_root().join("conf").display().to_string();
    let mut all = vec!["--config-dir", conf.as_str()];
    all.extend_from_slice(args);
    run_in(cwd, &all)
}

/// A short stage 1 (1 warm-up, 2 repeats, 2 profiled decode steps) with `args` in a fresh
/// scratch folder `tag`; asserts that it succeeded and returns the run directory and its
/// metrics.json, read against the schema.
pub fn short_stage1(tag: &str, args: &[&str]) -> (PathBuf, llmprof::report::RunReport) {
    let dir = scratch(tag);
    let mut all = vec!["stage1"];
    all.extend_from_slice(args);
    all.extend_from_slice(&[
        "runtime.repeats=2",
        "runtime.warmup=1",
        "pipeline.torch_profiler.max_decode_steps=2",
        "hydra.run.dir=run",
    ]);
    let out = run_with_repo_conf(&dir, &all);
    assert!(
        out.status.success(),
        "{tag}: stage1 failed:\n{}",
        stderr(&out)
    );
    let run = dir.join("run");
    let text = std::fs::read_to_string(run.join("metrics.json")).unwrap();
    let m = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("metrics.json does not match the schema: {e}"));
    (run, m)
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}

/// A fresh empty folder `<name>-<pid>` under the target dir. The folders of earlier test
/// processes that have ended are removed first, so a run's output stays for inspection until the
/// same test runs again and repeated test runs do not fill the disk (they once left 31 GiB).
pub fn scratch(name: &str) -> PathBuf {
    let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    remove_ended(&root, name);
    let d = root.join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch dir");
    d
}

/// Removes `<prefix>-<pid>[-…]` folders in `root` whose process no longer runs (a process still
/// running keeps its folder: tests of other binaries may be using it).
pub fn remove_ended(root: &Path, prefix: &str) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(prefix)) else {
            continue;
        };
        let Some(pid) = rest.strip_prefix('-').and_then(|r| r.split('-').next()) else {
            continue;
        };
        let ended = pid.parse::<u32>().is_ok_and(|pid| {
            pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists()
        });
        if ended {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Write a small config tree: `files` are (relative path, YAML text).
pub fn config_tree(root: &Path, files: &[(&str, &str)]) -> PathBuf {
    let conf = root.join("conf");
    for (rel, text) in files {
        let p = conf.join(rel);
        std::fs::create_dir_all(p.parent().expect("has parent")).expect("mkdir");
        std::fs::write(&p, text).expect("write");
    }
    conf
}

/// The files every stage-1 run directory holds, none empty (report.html and .hydra/ come on top
/// of them where the run writes its own).
pub const STAGE1_FILES: [&str; 16] = [
    "report.md",
    "metrics.json",
    "measurements.json",
    "stakeholder_summary.md",
    "operators.md",
    "kernels.md",
    "kernels.json",
    "trace.json",
    "nvml.csv",
    "env.json",
    "inputs.yaml",
    "assumptions.md",
    "static_compute.json",
    "static_compute.md",
    "status.json",
    "config.resolved.yaml",
];

/// Fails, naming `what` and the file, unless every one of `files` is a non-empty file in `run`.
pub fn assert_non_empty_files(run: &Path, files: &[&str], what: &str) {
    for f in files {
        let p = run.join(f);
        assert!(
            p.is_file() && std::fs::metadata(&p).unwrap().len() > 0,
            "{what}: {f} missing or empty"
        );
    }
}

/// The Python a test needs beyond the project's torch: the one the environment variable `env`
/// names, else `venv` (relative to the repository) when it imports `modules`. `None` after
/// saying the test is skipped, which CI ([`services_required`]: `.ci/run` installs it) never allows.
pub fn optional_python(env: &str, venv: &str, modules: &str, install: &str) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(env).filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let venv = repo_root().join(venv);
    let imports = Command::new(&venv)
        .args(["-c", &format!("import {modules}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if imports {
        return Some(venv);
    }
    assert!(
        !services_required(),
        "CI must run this test: {install} (outside CI: remove {CI_SERVICES_MARKER})"
    );
    eprintln!("skipped: no Python with {modules} (set {env}, or {install})");
    None
}
