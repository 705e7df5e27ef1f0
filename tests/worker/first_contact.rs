//! The README's documented commands in their CPU form, exactly as a new user types them on a
//! fresh clone (the default dataset, the CPU fallback): stage 1 over 10 sample pages, stage 2
//! without Nsight Systems installed, and a batch-size sweep over fewer pages than the largest
//! batch, which must run the batch it names.
use crate::support::{llmprof, repo_root, scratch, stderr, stdout};
use llmprof::report::RunReport;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A scratch folder that sees the repository's datasets, as the repository root does.
fn user_folder(tag: &str) -> PathBuf {
    let dir = scratch(tag);
    std::os::unix::fs::symlink(repo_root().join("datasets"), dir.join("datasets"))
        .expect("linking the datasets");
    dir
}

/// `llmprof ARGS` in `cwd`, with nothing on PATH that could provide nsys or ncu.
fn llmprof_in(cwd: &Path, args: &[&str]) -> Output {
    Command::new(llmprof())
        .args(args)
        .current_dir(cwd)
        .env("PATH", "/usr/bin:/bin")
        .env("RUST_LOG", "warn")
        .output()
        .expect("llmprof runs")
}

/// The run folders under `cwd/tmp/profile-output` (Hydra's default run dir).
fn run_dirs(cwd: &Path) -> Vec<PathBuf> {
    let root = cwd.join("tmp/profile-output");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    dirs
}

fn metrics(run: &Path) -> RunReport {
    let text = std::fs::read_to_string(run.join("metrics.json"))
        .unwrap_or_else(|e| panic!("{}: {e}", run.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("metrics.json: {e}"))
}

#[test]
fn the_documented_stage1_over_ten_sample_pages_runs_on_the_cpu() {
    let dir = user_folder("first-contact-stage1");
    let out = llmprof_in(
        &dir,
        &[
            "stage1",
            "model=deepseek_ocr",
            "dataset.sampling.num_samples_per_epoch=10",
        ],
    );
    assert!(out.status.success(), "stage1 failed:\n{}", stderr(&out));
    let runs = run_dirs(&dir);
    assert_eq!(runs.len(), 1, "{runs:?}");
    let m = metrics(&runs[0]);
    assert_eq!(m.setup.inputs, 10);
    assert_eq!(m.setup.device, "Cpu");
    assert_eq!(m.setup.effective_batch_size, Some(m.setup.batch_size));
    assert!(stdout(&out).contains("# llmprof stage1 report"));
    // No libtorch/CUDA noise on a machine without a GPU.
    assert!(
        !stderr(&out).contains("gpuGetDeviceCount"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_documented_stage2_without_nsys_names_the_install() {
    let dir = user_folder("first-contact-stage2");
    let out = llmprof_in(&dir, &["stage2", "pipeline.nsys.enable=true"]);
    assert!(!out.status.success(), "stage2 without nsys succeeded");
    let err = stderr(&out);
    assert!(
        err.contains("`nsys` not found") && err.contains("Nsight Systems"),
        "{err}"
    );
}

#[test]
fn a_batch_sweep_over_two_pages_runs_batch_8_as_8_rows() {
    let dir = user_folder("first-contact-sweep");
    let out = llmprof_in(
        &dir,
        &[
            "-m",
            "stage1",
            "runtime.batch_size=1,8",
            "dataset.sampling.num_samples_per_epoch=2",
            // Shorter than the documented sweep: the rows per batch are what is checked.
            "infer.max_new_tokens=8",
            "runtime.repeats=1",
        ],
    );
    assert!(out.status.success(), "sweep failed:\n{}", stderr(&out));
    let sweeps = run_dirs(&dir);
    assert_eq!(sweeps.len(), 1, "{sweeps:?}");
    for (job, batch) in [("0", 1u32), ("1", 8)] {
        let run = sweeps[0].join(job);
        let m = metrics(&run);
        assert_eq!(m.setup.batch_size, batch, "job {job}");
        assert_eq!(m.setup.effective_batch_size, Some(batch), "job {job}");
        assert!(
            m.requests
                .iter()
                .all(|r| r.batch_rows == batch as usize && r.isl.len() == batch as usize),
            "job {job}: every timed request ran {batch} rows"
        );
        let inputs: serde_yaml::Value =
            serde_yaml::from_str(&std::fs::read_to_string(run.join("inputs.yaml")).unwrap())
                .unwrap();
        let batches = &inputs["batches"][0];
        let report = std::fs::read_to_string(run.join("report.md")).unwrap();
        if batch == 8 {
            // Pages 0, 1 cycled to 8 rows; rows 2..7 repeat them, and the report says so.
            assert_eq!(ints(&batches["rows"]), [0, 1, 0, 1, 0, 1, 0, 1]);
            assert_eq!(ints(&batches["repeated_rows"]), [2, 3, 4, 5, 6, 7]);
            let note = "runtime.batch_size=8 over 2 sampled inputs";
            assert!(report.contains(note), "{report}");
            assert!(m.notes.iter().any(|n| n.contains(note)), "{:?}", m.notes);
        } else {
            assert_eq!(ints(&batches["rows"]), [0]);
            assert!(ints(&inputs["batches"][1]["repeated_rows"]).is_empty());
            assert!(!report.contains("sampled input"), "{report}");
        }
    }
}

fn ints(v: &serde_yaml::Value) -> Vec<u64> {
    v.as_sequence()
        .unwrap_or_else(|| panic!("not a list: {v:?}"))
        .iter()
        .map(|x| x.as_u64().expect("an index"))
        .collect()
}
