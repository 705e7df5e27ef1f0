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
    assert!(s.contains("model: deepseek_ocr, deepseek_ocr_tiny"), "{s}");
    assert!(s.contains("profiling/nsys: "), "{s}");
}
