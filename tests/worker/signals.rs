//! The shutdown path against real processes on the CPU: a signal to the front end alone stops
//! the worker and marks the run interrupted with the signal's name; a killed front end takes
//! the worker with it; an interrupted multirun writes its summary; two sweeps in one folder
//! never share it.
use crate::support::{llmprof, repo_root, scratch};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A stage1 long enough to be interrupted (the tiny model decodes thousands of tokens).
fn long_stage1(dir: &Path, extra: &[&str]) -> Child {
    let conf = repo_root().join("conf");
    Command::new(llmprof())
        .current_dir(dir)
        .env("RUST_LOG", "info")
        .args(["--config-dir", &conf.display().to_string()])
        .args(extra)
        .args([
            "model=deepseek_ocr_tiny",
            "dataset.sampling.num_samples_per_epoch=1",
            "infer.max_new_tokens=2500",
            "infer.ignore_eos=true",
            "runtime.warmup=0",
            "runtime.repeats=50",
            "pipeline.torch_profiler.enable=false",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("llmprof starts")
}

fn wait_for(what: &str, timeout: Duration, mut ready: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ready() {
        assert!(start.elapsed() < timeout, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits until the worker of `run` has loaded its model.
fn wait_for_worker(run: &Path) {
    wait_for(
        "the worker to load its model",
        Duration::from_secs(120),
        || {
            std::fs::read_to_string(run.join("llmprof.log"))
                .is_ok_and(|l| l.contains("model ready"))
        },
    );
}

fn status(run: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(run.join("status.json")).expect("status.json");
    serde_json::from_str(&text).expect("status.json parses")
}

/// Worker processes still running on `run`.
fn workers_on(run: &Path) -> usize {
    let out = Command::new("pgrep")
        .args(["-f", &format!("llmprof-worker stage1 {}", run.display())])
        .output()
        .expect("pgrep (procps) runs");
    String::from_utf8_lossy(&out.stdout).lines().count()
}

fn signal(child: &Child, sig: i32) {
    // SAFETY: kill(2) on a child we spawned.
    assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
}

#[test]
fn sigterm_to_the_front_end_alone_stops_the_worker_and_marks_the_run() {
    let dir = scratch("sigterm");
    let mut child = long_stage1(&dir, &["stage1", "hydra.run.dir=run"]);
    let run = dir.join("run");
    wait_for_worker(&run);
    signal(&child, libc::SIGTERM);
    let code = child.wait().expect("llmprof exits").code();
    assert_eq!(
        code,
        Some(128 + libc::SIGTERM),
        "exit code of a SIGTERM'd run"
    );
    let s = status(&run);
    assert_eq!(s["state"], "interrupted", "{s}");
    assert!(s["error"].as_str().unwrap().contains("SIGTERM"), "{s}");
    assert_eq!(workers_on(&run), 0, "the worker stopped with the run");
    // Nothing is written into the run after it was marked.
    std::thread::sleep(Duration::from_secs(2));
    assert!(!run.join("metrics.json").exists());
    assert_eq!(status(&run)["state"], "interrupted");
}

#[test]
fn a_killed_front_end_takes_its_worker_with_it() {
    let dir = scratch("sigkill");
    let mut child = long_stage1(&dir, &["stage1", "hydra.run.dir=run"]);
    let run = dir.join("run");
    wait_for_worker(&run);
    signal(&child, libc::SIGKILL);
    child.wait().expect("reaped");
    wait_for(
        "the orphaned worker to stop",
        Duration::from_secs(10),
        || workers_on(&run) == 0,
    );
}

#[test]
fn an_interrupted_multirun_writes_every_jobs_state() {
    let dir = scratch("sigint-multirun");
    let mut child = long_stage1(
        &dir,
        &[
            "-m",
            "stage1",
            "runtime.batch_size=1,2",
            "hydra.sweep.dir=sweep",
        ],
    );
    let job0 = dir.join("sweep/0");
    wait_for_worker(&job0);
    signal(&child, libc::SIGINT);
    assert_eq!(child.wait().unwrap().code(), Some(128 + libc::SIGINT));
    let summary = std::fs::read_to_string(dir.join("sweep/summary.md")).expect("summary.md");
    let job = |n: &str| {
        summary
            .lines()
            .find(|l| l.starts_with(&format!("| {n} | `runtime.batch_size=")))
            .unwrap_or_else(|| panic!("no row for job {n}:\n{summary}"))
    };
    assert!(job("0").ends_with("| interrupted | sweep/0 |"), "{summary}");
    assert!(job("1").contains("| not started |"), "{summary}");
    assert_eq!(status(&job0)["state"], "interrupted");
}

#[test]
fn two_sweeps_into_one_folder_never_share_it() {
    let dir = scratch("two-sweeps");
    let conf = repo_root().join("conf").display().to_string();
    let start = || {
        Command::new(llmprof())
            .current_dir(&dir)
            .args([
                "--config-dir",
                &conf,
                "-m",
                "stage1",
                "model=deepseek_ocr_tiny",
            ])
            .args([
                "hydra.sweep.dir=sweep",
                "runtime.repeats=1,2",
                "device=cuda:9",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("llmprof starts")
    };
    // device=cuda:9 makes every job fail fast in the worker: the sweeps finish quickly.
    let (mut a, mut b) = (start(), start());
    a.wait().unwrap();
    b.wait().unwrap();
    let sweeps: Vec<PathBuf> = ["sweep", "sweep-1"].iter().map(|s| dir.join(s)).collect();
    for s in &sweeps {
        let summary =
            std::fs::read_to_string(s.join("summary.md")).expect("each sweep has a summary");
        assert_eq!(summary.lines().count(), 4, "{summary}");
        assert!(s.join("multirun.yaml").is_file());
    }
}
