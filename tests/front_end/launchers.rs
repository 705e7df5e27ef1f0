//! Launchers (`hydra/launcher=basic|local|slurm`, docs/launchers.md): the group in the composed
//! config, a CPU sweep of the tiny model through the local launcher (2 jobs at once) and through
//! a real Slurm cluster (scripts/slurm_local.sh up), `--resume`, and the error without sbatch.
//! The Slurm test is skipped, loudly, only when no cluster answers and `CI` is unset.
use crate::support::{repo_root, run_in, scratch, stderr};
use std::path::Path;
use std::process::Command;

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&read(p)).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// A 4-job sweep of the tiny model on CPU (runtime.repeats × runtime.batch_size), small enough
/// to take seconds per job.
fn sweep_args<'a>(conf: &'a str, sweep_dir: &'a str, launcher: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "--config-dir",
        conf,
        "-m",
        "stage1",
        "model=deepseek_ocr_tiny",
        "dataset.sampling.num_samples_per_epoch=1",
        "infer.max_new_tokens=2",
        "infer.ignore_eos=true",
        "runtime.warmup=0",
        "pipeline.torch_profiler.max_decode_steps=2",
        "runtime.repeats=1,2",
        "runtime.batch_size=1,2",
        sweep_dir,
    ];
    args.extend_from_slice(launcher);
    args
}

fn conf() -> String {
    repo_root().join("conf").display().to_string()
}

/// Every job of a 4-job sweep succeeded, in its own folder, with the launcher in status.json.
fn check_sweep(sweep: &Path, launcher: &str) -> Vec<serde_json::Value> {
    let summary = read(&sweep.join("summary.md"));
    assert_eq!(
        summary.matches("| succeeded |").count(),
        4,
        "every job succeeds:\n{summary}"
    );
    (0..4)
        .map(|num| {
            let status = json(&sweep.join(num.to_string()).join("status.json"));
            assert_eq!(status["state"], "succeeded", "{status}");
            assert_eq!(status["launcher"], launcher, "{status}");
            status
        })
        .collect()
}

#[test]
fn the_launcher_is_a_hydra_group() {
    let dir = scratch("launcher-group");
    let c = conf();
    let out = run_in(&dir, &["--config-dir", &c, "--cfg", "hydra"]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        text.contains("_target_: llmprof.launcher.BasicLauncher")
            && text.contains("hydra/launcher: basic"),
        "basic is the default:\n{text}"
    );
    let out = run_in(
        &dir,
        &[
            "--config-dir",
            &c,
            "--cfg",
            "hydra",
            "hydra/launcher=slurm",
            "hydra.launcher.partition=gpu",
        ],
    );
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        text.contains("_target_: llmprof.launcher.SlurmLauncher")
            && text.contains("partition: gpu")
            && text.contains("array_parallelism: 256"),
        "{text}{}",
        stderr(&out)
    );
    let out = run_in(
        &dir,
        &["--config-dir", &c, "--cfg", "hydra", "hydra/launcher=nope"],
    );
    assert!(!out.status.success());
    assert!(stderr(&out).contains("hydra/launcher"), "{}", stderr(&out));
}

#[test]
fn slurm_without_sbatch_says_how_to_get_it_or_what_else_to_choose() {
    let dir = scratch("launcher-nosbatch");
    let c = conf();
    let out = Command::new(crate::support::llmprof())
        .args(sweep_args(
            &c,
            "hydra.sweep.dir=sweep",
            &["hydra/launcher=slurm"],
        ))
        .current_dir(&dir)
        .env("PATH", dir.join("no-such-bin"))
        .output()
        .expect("llmprof runs");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("hydra/launcher=slurm needs `sbatch`")
            && err.contains("apt-get install slurm-client")
            && err.contains("hydra/launcher=local"),
        "{err}"
    );
}

/// The intervals [started_at, finished_at] of two jobs overlap.
fn overlap(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    let t = |v: &serde_json::Value, k: &str| {
        chrono::DateTime::parse_from_rfc3339(v[k].as_str().expect("a time")).expect("rfc3339")
    };
    t(a, "started_at") < t(b, "finished_at") && t(b, "started_at") < t(a, "finished_at")
}

#[test]
fn local_launcher_runs_two_jobs_at_once() {
    let dir = scratch("launcher-local");
    let c = conf();
    let out = run_in(
        &dir,
        &sweep_args(
            &c,
            "hydra.sweep.dir=sweep",
            &["hydra/launcher=local", "hydra.launcher.n_jobs=2"],
        ),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let sweep = dir.join("sweep");
    let statuses = check_sweep(&sweep, "local");
    assert!(sweep.join("multirun.yaml").is_file());
    assert!(
        (0..4).any(|a| (0..4).any(|b| a != b && overlap(&statuses[a], &statuses[b]))),
        "two jobs ran at the same time: {statuses:?}"
    );
    // The most jobs running at once is reached at some job's start: count the jobs running then.
    let t = |v: &serde_json::Value, k: &str| {
        chrono::DateTime::parse_from_rfc3339(v[k].as_str().expect("a time")).expect("rfc3339")
    };
    assert!(
        statuses.iter().all(|a| statuses
            .iter()
            .filter(|b| t(b, "started_at") <= t(a, "started_at")
                && t(a, "started_at") < t(b, "finished_at"))
            .count()
            <= 2),
        "never more than 2 at once: {statuses:?}"
    );
    // Job 3 is repeats=2, batch_size=2.
    let resolved = read(&sweep.join("3/config.resolved.yaml"));
    assert!(resolved.contains("repeats: 2") && resolved.contains("batch_size: 2"));
}

#[test]
fn resume_runs_again_only_the_jobs_that_did_not_succeed() {
    let dir = scratch("launcher-resume");
    let c = conf();
    // batch_size=0 composes but fails as a run: job 1 fails, job 0 succeeds.
    let args = [
        "--config-dir",
        &c,
        "-m",
        "stage1",
        "model=deepseek_ocr_tiny",
        "dataset.sampling.num_samples_per_epoch=1",
        "infer.max_new_tokens=2",
        "runtime.warmup=0",
        "runtime.repeats=1",
        "pipeline.torch_profiler.max_decode_steps=2",
        "runtime.batch_size=1,0",
        "hydra.sweep.dir=sweep",
        "hydra/launcher=local",
    ];
    let out = run_in(&dir, &args);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let sweep = dir.join("sweep");
    let first = read(&sweep.join("summary.md"));
    assert!(
        first.contains("| succeeded |") && first.contains("| failed"),
        "{first}"
    );
    let ok_status = read(&sweep.join("0/status.json"));
    std::fs::remove_file(sweep.join(".llmprof/logs/1.log")).expect("job 1 had a log");
    let s = sweep.display().to_string();
    let bad = run_in(&dir, &["-m", "stage1", "--resume", &s, "runtime.repeats=3"]);
    assert!(
        !bad.status.success() && stderr(&bad).contains("only hydra/launcher"),
        "{}",
        stderr(&bad)
    );
    let wrong = run_in(&dir, &["-m", "infer", "--resume", &s]);
    assert!(
        stderr(&wrong).contains("ran `stage1`"),
        "{}",
        stderr(&wrong)
    );
    let again = run_in(
        &dir,
        &[
            "--config-dir",
            &c,
            "-m",
            "stage1",
            "--resume",
            &s,
            "hydra/launcher=basic",
        ],
    );
    assert_eq!(again.status.code(), Some(1), "{}", stderr(&again));
    // Job 0 was not run again; job 1 was (in-process with basic: its failure is in the summary).
    assert_eq!(read(&sweep.join("0/status.json")), ok_status);
    assert!(!sweep.join("0-1").exists());
    let second = read(&sweep.join("summary.md"));
    assert!(
        second.contains("| succeeded |") && second.contains("batch_size"),
        "{second}"
    );
    assert_eq!(
        json(&sweep.join(".llmprof/sweep.json"))["launcher"],
        "basic"
    );
}

/// Whether a Slurm cluster answers here.
fn slurm_up() -> bool {
    Command::new("sinfo")
        .args(["-h", "-o", "%t"])
        .output()
        .map(|o| {
            o.status.success()
                && String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .any(|l| ["idle", "mix", "alloc"].contains(&l.trim()))
        })
        .unwrap_or(false)
}

#[test]
fn slurm_launcher_runs_the_sweep_as_one_job_array() {
    if !slurm_up() {
        assert!(
            !crate::support::services_required(),
            "CI (or .ci/run's marker {}) asks for Slurm but no cluster answers: .ci/run starts one with scripts/slurm_local.sh up",
            crate::support::CI_SERVICES_MARKER
        );
        eprintln!(
            "\n!!! SKIPPED slurm_launcher_runs_the_sweep_as_one_job_array: no Slurm cluster answers (start one with `sudo scripts/slurm_local.sh up`) !!!\n"
        );
        return;
    }
    let dir = scratch("launcher-slurm");
    let c = conf();
    let out = run_in(
        &dir,
        &sweep_args(
            &c,
            "hydra.sweep.dir=sweep",
            &[
                "hydra/launcher=slurm",
                "hydra.launcher.poll_interval_s=1",
                "hydra.launcher.cpus_per_task=1",
                "hydra.launcher.timeout_min=10",
            ],
        ),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let sweep = dir.join("sweep");
    let statuses = check_sweep(&sweep, "slurm");
    let array = read(&sweep.join("slurm/array-1.id")).trim().to_string();
    assert!(array.parse::<u64>().is_ok(), "a job id: {array}");
    for (num, status) in statuses.iter().enumerate() {
        assert_eq!(status["slurm_job_id"], format!("{array}_{num}"), "{status}");
    }
    let script = read(&sweep.join("slurm/array-1.sbatch"));
    assert!(
        script.contains("#SBATCH --array=0-3%256") && script.contains("#SBATCH --cpus-per-task=1"),
        "{script}"
    );
    assert!(sweep.join(format!("slurm/logs/{array}_0.out")).is_file());
}

/// Slurm's four commands as shell scripts: `--version` answers, `sbatch` refuses (so nothing is
/// queued), leaving the batch script llmprof wrote in the sweep directory.
fn fake_slurm_bin(dir: &Path) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let bin = dir.join("fake-slurm-bin");
    std::fs::create_dir_all(&bin).unwrap();
    for tool in ["sbatch", "squeue", "scontrol", "scancel"] {
        let path = bin.join(tool);
        std::fs::write(
            &path,
            "#!/bin/sh\n[ \"$1\" = --version ] && { echo 'slurm 23.02 (fake)'; exit 0; }\necho 'fake: not submitting' >&2; exit 1\n",
        )
        .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    bin
}

/// The site's Slurm settings (docs/settings.md) reach the batch script: partition/account/qos
/// under what the config sets, setup lines and exported variables before the job; a variable
/// name bash cannot export is refused, naming the setting.
#[test]
fn slurm_settings_shape_the_batch_script() {
    let dir = scratch("launcher-slurm-settings");
    let bin = fake_slurm_bin(&dir);
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    std::fs::write(
        dir.join("llmprof.toml"),
        "[slurm]\naccount = \"site-acct\"\nsetup = [\"module load cuda/12.4\"]\n[slurm.env]\nHF_HOME = \"/shared/hf\"\n",
    )
    .unwrap();
    let c = conf();
    let run = |sweep: &str, env: &[(&str, &str)]| {
        let mut cmd = Command::new(crate::support::llmprof());
        cmd.args(sweep_args(
            &c,
            sweep,
            &["hydra/launcher=slurm", "hydra.launcher.qos=cfg-qos"],
        ))
        .current_dir(&dir)
        .env("PATH", &path)
        .env("HOME", &dir);
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().expect("llmprof runs")
    };
    let out = run(
        "hydra.sweep.dir=sweep",
        &[
            ("LLMPROF_SLURM__PARTITION", "site-part"),
            ("LLMPROF_SLURM__QOS", "site-qos"),
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "sbatch refused: {}",
        stderr(&out)
    );
    let script = read(&dir.join("sweep/slurm/array-1.sbatch"));
    for line in [
        "#SBATCH --partition=site-part",
        "#SBATCH --account=site-acct",
        "#SBATCH --qos=cfg-qos",
        "module load cuda/12.4",
        "export HF_HOME=/shared/hf",
    ] {
        assert!(
            script.lines().any(|l| l == line),
            "missing {line:?} in\n{script}"
        );
    }
    assert!(
        !script.contains("site-qos"),
        "the config's qos wins:\n{script}"
    );
    let out = run(
        "hydra.sweep.dir=sweep2",
        &[("LLMPROF_SLURM__ENV__BAD-NAME", "x")],
    );
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("slurm.env") && err.contains("not a shell variable name"),
        "{err}"
    );
}
