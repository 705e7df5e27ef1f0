//! The front-end binary on its own: version and help.
use crate::support::{repo_root, run_in, stdout};

#[test]
fn version_names_the_commit() {
    let out = run_in(&repo_root(), &["--version"]);
    assert!(out.status.success());
    assert!(stdout(&out).contains("(commit "), "{}", stdout(&out));
}

#[test]
fn help_lists_groups_and_options() {
    let out = run_in(&repo_root(), &["--help"]);
    assert!(out.status.success());
    let s = stdout(&out);
    assert!(s.contains("== Configuration groups =="), "{s}");
    let models: Vec<&str> = s
        .lines()
        .find_map(|l| l.strip_prefix("model: "))
        .unwrap_or_else(|| panic!("no `model:` group line:\n{s}"))
        .split(", ")
        .collect();
    for m in [
        "deepseek_ocr",
        "deepseek_ocr_tiny",
        "deepseek_ocr2",
        "llama3_1_8b",
    ] {
        assert!(models.contains(&m), "{m} missing from {models:?}");
    }
    assert!(s.contains("profiling/nsys: "), "{s}");
}

#[test]
fn a_closed_pipe_ends_the_output_quietly() {
    // `llmprof --cfg job | head -0`: the reader is gone before llmprof writes.
    let mut child = std::process::Command::new(crate::support::llmprof())
        .current_dir(repo_root())
        .args(["stage1", "--cfg", "job"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("llmprof starts");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("llmprof exits");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn subcommand_help_is_help_not_an_error() {
    for args in [
        &["analyze", "--help"][..],
        &["analyze", "ncu", "--help"][..],
    ] {
        let out = run_in(&repo_root(), args);
        assert!(out.status.success(), "{args:?}");
        assert!(stdout(&out).contains("Usage"), "{}", stdout(&out));
    }
}

/// An argument that is not valid UTF-8, in every position (a subcommand, an override, a flag's
/// value, after `--help`, forwarded to the worker), ends in a clear error, never a panic (exit
/// 101 from std::env::args, round 2's guarantee that regressed).
#[test]
fn arguments_that_are_not_utf8_get_an_error_not_a_panic() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let bad = OsStr::from_bytes(b"runtime.warmup=\xff\xfe");
    // (arguments, what the error says): clap's error for words, the missing folder for a path.
    let utf8 = "invalid UTF-8";
    let cases: Vec<(Vec<&OsStr>, &str)> = vec![
        (vec![bad], utf8),
        (vec![OsStr::new("stage1"), bad], utf8),
        (
            vec![OsStr::new("analyze"), OsStr::new("ncu"), bad],
            "does not exist",
        ),
        // Forwarded: the worker, which owns debug's arguments, names the one that is not UTF-8.
        (
            vec![OsStr::new("debug"), OsStr::new("logits"), bad],
            "is not valid UTF-8",
        ),
        (
            vec![OsStr::new("--config-dir"), bad, OsStr::new("stage1")],
            "does not exist",
        ),
    ];
    let dir = crate::support::scratch("cli-not-utf8");
    for (args, says) in cases {
        let out = std::process::Command::new(crate::support::llmprof())
            .args(&args)
            .current_dir(&dir)
            .output()
            .unwrap();
        let err = crate::support::stderr(&out);
        assert_ne!(out.status.code(), Some(101), "{args:?} panicked: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(!out.status.success(), "{args:?} succeeded");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    // The worker, started directly: its own error naming the argument.
    let worker = crate::support::llmprof().with_file_name("llmprof-worker");
    if worker.is_file() {
        let out = std::process::Command::new(&worker)
            .args([OsStr::new("stage1"), bad])
            .current_dir(&dir)
            .output()
            .unwrap();
        let err = crate::support::stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains("argument 2") && err.contains("not valid UTF-8"),
            "{err}"
        );
    }
    // With --help after it, help wins (exit 0), as for any other argument.
    let help = std::process::Command::new(crate::support::llmprof())
        .args([OsStr::new("stage1"), bad, OsStr::new("--help")])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(help.status.success(), "{}", crate::support::stderr(&help));
    assert!(crate::support::stdout(&help).contains("Usage"));
}

/// Environment values that are not UTF-8 (#40 item 8): a setting's variable and an unrelated
/// variable never panic a command; the setting's is an error naming the variable or is ignored,
/// the unrelated one is ignored.
#[test]
fn environment_values_that_are_not_utf8_never_panic() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let bad = OsStr::from_bytes(b"/tmp/\xff\xfe");
    for var in [
        "LLMPROF_HUB__CACHE_DIR",
        "SOME_OTHER_VARIABLE",
        "HF_TOKEN",
        "LLMPROF_WORKER",
    ] {
        let out = std::process::Command::new(crate::support::llmprof())
            .arg("settings")
            .env(var, bad)
            .output()
            .expect("llmprof runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !err.contains("panicked") && out.status.code() != Some(101),
            "{var}: {err}"
        );
        if !out.status.success() {
            assert!(err.contains(var) || err.contains("UTF-8"), "{var}: {err}");
        }
    }
}

/// `llmprof debug --help` is the worker's: it owns debug's arguments (#39 item 2) and lists the
/// subcommands, exit 0; a subcommand's `--help` too.
#[test]
fn debug_help_is_the_workers() {
    let dir = crate::support::scratch("cli-debug-help");
    for (args, says) in [
        (&["debug", "--help"][..], "fast-path"),
        (&["debug", "logits", "--help"][..], "--weights"),
    ] {
        let out = std::process::Command::new(crate::support::llmprof())
            .args(args)
            .current_dir(&dir)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            crate::support::stderr(&out)
        );
        assert!(
            text.contains("llmprof debug") && text.contains(says),
            "{args:?}: {text}"
        );
    }
}
