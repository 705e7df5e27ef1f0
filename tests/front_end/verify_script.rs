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

/// scripts/bench_families.py reads each family's table.json (as bench_vs_hf.py writes it) into
/// one row: llmprof's and transformers' decode step at batch 1 and tok/s at batch 32, the floors
/// from llmprof's metrics.json and the fractions; a family without a table is marked failed.
#[test]
fn family_bench_table_reads_each_bench_and_marks_a_missing_one() {
    let out = scratch("bench-families");
    std::fs::create_dir_all(out.join("fam_a")).unwrap();
    let table = serde_json::json!({
        "llmprof": [{"batch": 1, "step_ms": 4.0}, {"batch": 32, "step_ms": 16.0}],
        "hf": [{"batch": 1, "step_ms": 20.0}, {"batch": 32, "tokens_per_s": 500.0}],
        "floors": {"1": {"decode_step_ms": 3.0}, "32": {"decode_tok_s_ceiling": 4000.0}},
        "env": {"gpu": "a GPU", "transformers": "5.17.0"}
    });
    std::fs::write(out.join("fam_a/table.json"), table.to_string()).unwrap();
    let run = Command::new("python3")
        .arg(repo_root().join("scripts/bench_families.py"))
        .arg(&out)
        .args(["fam_a:4", "fam_b"])
        .output()
        .unwrap();
    assert!(run.status.success());
    let text = String::from_utf8_lossy(&run.stdout);
    // 32 rows × 1000 ÷ 16 ms = 2,000 tok/s, half of the 4,000 ceiling; 3 ms floor ÷ 4 ms = 75 %.
    assert!(
        text.contains("| fam_a | 4 | 4.00 | 20.00 | 3.00 | 75 % | 2,000 | 500 | 4,000 | 50 % |"),
        "{text}"
    );
    assert!(
        text.contains("| fam_b | all | failed: see fam_b.log"),
        "{text}"
    );
    assert!(text.contains("a GPU") && text.contains("5.17.0"), "{text}");
}
