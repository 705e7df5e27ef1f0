//! scripts/verify_vs_hf.sh's own checks of its settings, before it writes anything or needs
//! Python (the comparison itself needs transformers and runs on the GPU machine:
//! docs/verification.md).
use crate::support::{llmprof, repo_root, scratch};
use std::process::Command;

/// An `OPTIMS` that names no implementation, or an unknown one, is refused with exit code 2 and
/// the accepted names, and the working folder is not created: a check that compares nothing
/// must not report PASS.
#[test]
fn verify_script_refuses_optims_that_check_nothing() {
    for (optims, says) in [
        (" ", "OPTIMS is empty"),
        ("eager fastest", "unknown implementation 'fastest'"),
    ] {
        let work = scratch("verify-optims").join("work");
        let run = Command::new("bash")
            .arg(repo_root().join("scripts/verify_vs_hf.sh"))
            .arg(&work)
            .env("LLMPROF", llmprof())
            .env("OPTIMS", optims)
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&run.stdout);
        assert_eq!(run.status.code(), Some(2), "{optims:?}: {out}");
        assert!(
            out.contains(says) && out.contains("eager") && out.contains("fast"),
            "{optims:?}: {out}"
        );
        assert!(!work.exists(), "{optims:?} created {}", work.display());
    }
}
