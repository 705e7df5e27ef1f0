//! Run directories and multirun through both binaries: `.hydra/` files, one directory per run
//! and per job, summary.md.
use crate::support::{repo_root, run_in, scratch, stderr};
use std::path::Path;

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn each_run_gets_its_own_directory_with_hydra_files() {
    let dir = scratch("rundir");
    let conf = repo_root().join("conf").display().to_string();
    let args = [
        "--config-dir",
        conf.as_str(),
        "stage1",
        "model=deepseek_ocr_tiny",
        "runtime.repeats=1",
        "dataset.sampling.num_samples_per_epoch=2",
        // The directories are the subject, not the traces: the Kineto pass off (5.9 → 0.9 s a
        // run on a CI machine).
        "pipeline.torch_profiler.enable=false",
        "hydra.run.dir=out/run",
    ];
    let _first = run_in(&dir, &args);
    let _second = run_in(&dir, &args);
    for run in ["out/run", "out/run-1"] {
        let d = dir.join(run);
        assert!(d.is_dir(), "{run} missing");
        let overrides = read(&d.join(".hydra/overrides.yaml"));
        assert!(
            overrides.contains("- model=deepseek_ocr_tiny")
                && overrides.contains("- runtime.repeats=1"),
            "{overrides}"
        );
        assert!(read(&d.join(".hydra/config.yaml")).contains("name: deepseek_ocr_tiny"));
        let hydra = read(&d.join(".hydra/hydra.yaml"));
        assert!(
            hydra.contains("model: deepseek_ocr_tiny") && hydra.contains("output_dir:"),
            "{hydra}"
        );
        assert!(read(&d.join("config.resolved.yaml")).contains("repeats: 1"));
        let status: serde_json::Value =
            serde_json::from_str(&read(&d.join("status.json"))).unwrap();
        let state = status["state"].as_str().unwrap();
        assert!(
            state == "succeeded" || state == "failed",
            "a finished run is never left 'running': {status}"
        );
        if state == "failed" {
            assert!(
                status["error"].as_str().is_some_and(|e| !e.is_empty()),
                "a failed run says why: {status}"
            );
        }
    }
}

#[test]
fn multirun_makes_one_directory_per_job_and_a_summary() {
    let dir = scratch("multirun");
    let conf = repo_root().join("conf").display().to_string();
    let out = run_in(
        &dir,
        &[
            "--config-dir",
            &conf,
            "-m",
            "stage1",
            "model=deepseek_ocr_tiny",
            "runtime.repeats=1,2",
            "dataset.sampling.num_samples_per_epoch=2",
            "pipeline.torch_profiler.enable=false",
            "hydra.sweep.dir=sweep",
        ],
    );
    let sweep = dir.join("sweep");
    assert!(sweep.join("multirun.yaml").is_file(), "{}", stderr(&out));
    for job in ["0", "1"] {
        assert!(
            sweep.join(job).join(".hydra/config.yaml").is_file(),
            "job {job} missing"
        );
    }
    assert!(read(&sweep.join("1/config.resolved.yaml")).contains("repeats: 2"));
    let summary = read(&sweep.join("summary.md"));
    assert!(
        summary.contains("runtime.repeats=1") && summary.contains("runtime.repeats=2"),
        "{summary}"
    );
}
