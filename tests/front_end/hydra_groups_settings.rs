//! Issue #16 in the front end: Hydra's `hydra/job_logging` deciding the run's log file, and
//! `llmprof settings` (layers, sources, errors with exit 2). No worker needed.
use crate::support::{llmprof, repo_root, scratch, stderr, stdout};
use std::path::Path;
use std::process::{Command, Output};

/// llmprof in `cwd` with a private HOME/XDG_CONFIG_HOME and no worker.
fn run(cwd: &Path, home: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd = Command::new(llmprof());
    cmd.args(args)
        .current_dir(cwd)
        .env("RUST_LOG", "warn")
        .env("HOME", home)
        .env_remove("XDG_CONFIG_HOME")
        .env("LLMPROF_WORKER", cwd.join("no-such-worker"));
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("llmprof runs")
}

#[test]
fn hydra_job_logging_decides_the_run_log_file() {
    // See: issue #16 (hydra/job_logging=disabled failed with "No match in the defaults list").
    let dir = scratch("job_logging");
    let conf = repo_root().join("conf").display().to_string();
    let shown = run(
        &dir,
        &dir,
        &[],
        &[
            "--config-dir",
            &conf,
            "stage1",
            "hydra/job_logging=disabled",
            "--cfg",
            "hydra",
        ],
    );
    assert!(shown.status.success(), "{}", stderr(&shown));
    let text = stdout(&shown);
    assert!(
        text.contains("job_logging:\n    version: 1\n    root:\n      level: ERROR"),
        "{text}"
    );
    assert!(text.contains("hydra/job_logging: disabled"), "{text}");
    for (option, log_file) in [
        ("default", true),
        ("stdout", false),
        ("disabled", false),
        ("none", false),
    ] {
        let run_dir = format!("out/{option}");
        let out = run(
            &dir,
            &dir,
            &[],
            &[
                "--config-dir",
                &conf,
                "stage1",
                "model=deepseek_ocr_tiny",
                &format!("hydra/job_logging={option}"),
                &format!("hydra.run.dir={run_dir}"),
            ],
        );
        assert!(!out.status.success(), "no worker: the run fails");
        let d = dir.join(&run_dir);
        assert!(
            d.join("status.json").is_file(),
            "{option}: no run directory\n{}",
            stderr(&out)
        );
        assert_eq!(
            d.join("llmprof.log").exists(),
            log_file,
            "{option}: llmprof.log should {}exist",
            if log_file { "" } else { "not " }
        );
    }
    // Removing the group leaves Hydra's `???`: no log file either.
    let out = run(
        &dir,
        &dir,
        &[],
        &[
            "--config-dir",
            &conf,
            "stage1",
            "~hydra/job_logging",
            "hydra.run.dir=out/removed",
        ],
    );
    assert!(
        dir.join("out/removed/status.json").is_file(),
        "{}",
        stderr(&out)
    );
    assert!(!dir.join("out/removed/llmprof.log").exists());
}

#[test]
fn settings_prints_each_value_with_its_layer() {
    let dir = scratch("settings_layers");
    let home = dir.join("home");
    let user = home.join(".config/llmprof/settings.toml");
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    std::fs::write(&user, "[slurm]\npartition = \"user\"\naccount = \"acct\"\n").unwrap();
    std::fs::write(
        dir.join("llmprof.toml"),
        "[slurm]\npartition = \"project\"\n",
    )
    .unwrap();
    let out = run(
        &dir,
        &home,
        &[("LLMPROF_TOOLS__NSYS", "/opt/nsys")],
        &["settings"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let line = |key: &str| {
        text.lines()
            .find(|l| l.starts_with(&format!("{key} = ")))
            .unwrap_or_else(|| panic!("{key} missing:\n{text}"))
    };
    assert!(line("slurm.partition").contains("\"project\""), "{text}");
    assert!(line("slurm.partition").ends_with("llmprof.toml"), "{text}");
    assert!(
        line("slurm.account").ends_with(&user.display().to_string()),
        "{text}"
    );
    assert!(line("tools.nsys").contains("LLMPROF_TOOLS__NSYS"), "{text}");
    assert!(line("slurm.qos").ends_with("# unset"), "{text}");

    // XDG_CONFIG_HOME takes the place of ~/.config.
    let xdg = dir.join("xdg");
    std::fs::create_dir_all(xdg.join("llmprof")).unwrap();
    std::fs::write(
        xdg.join("llmprof/settings.toml"),
        "[slurm]\nqos = \"high\"\n",
    )
    .unwrap();
    let out = run(
        &dir,
        &home,
        &[("XDG_CONFIG_HOME", xdg.to_str().unwrap())],
        &["settings"],
    );
    let text = stdout(&out);
    assert!(text.contains("slurm.qos = \"high\""), "{text}");
    assert!(
        !text.contains("\"acct\""),
        "~/.config is not read with XDG_CONFIG_HOME:\n{text}"
    );
}

#[test]
fn bad_settings_name_the_file_and_key_and_exit_2() {
    let dir = scratch("settings_bad");
    std::fs::write(dir.join("llmprof.toml"), "[slurm]\npartion = \"gpu\"\n").unwrap();
    let out = run(&dir, &dir, &[], &["settings"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("partion") && err.contains("llmprof.toml"),
        "{err}"
    );
    std::fs::write(dir.join("llmprof.toml"), "[slurm\n").unwrap();
    let out = run(&dir, &dir, &[], &["settings"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("llmprof.toml"), "{}", stderr(&out));
    // A run reads the settings too, and stops before making a run directory.
    let conf = repo_root().join("conf").display().to_string();
    let out = run(
        &dir,
        &dir,
        &[],
        &["--config-dir", &conf, "stage1", "hydra.run.dir=out/x"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(!dir.join("out/x").exists());
}
