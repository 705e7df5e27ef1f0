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
    let cases: Vec<Vec<&OsStr>> = vec![
        vec![bad],
        vec![OsStr::new("stage1"), bad],
        vec![OsStr::new("--config-dir"), bad, OsStr::new("stage1")],
        vec![OsStr::new("stage1"), bad, OsStr::new("--help")],
        vec![OsStr::new("analyze"), OsStr::new("ncu"), bad],
        vec![OsStr::new("debug"), OsStr::new("logits"), bad],
    ];
    let dir = crate::support::scratch("cli-not-utf8");
    for args in cases {
        let out = std::process::Command::new(crate::support::llmprof())
            .args(&args)
            .current_dir(&dir)
            .output()
            .unwrap();
        let err = crate::support::stderr(&out);
        assert_ne!(out.status.code(), Some(101), "{args:?} panicked: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(!out.status.success(), "{args:?} succeeded");
        assert!(
            err.contains("UTF-8") || err.contains("utf-8") || err.contains("invalid"),
            "{args:?}: {err}"
        );
    }
}
