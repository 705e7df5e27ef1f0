//! llmprof's trace.json in HolisticTraceAnalysis (HTA, PyPI), the standard analyser of PyTorch
//! profiler traces (#41 item 5): it loads a CPU run's trace without a warning about ranks or
//! iterations, finds rank 0 of 1 and one ProfilerStep per profiled step, and sees llmprof's regions
//! and module scopes as ranges. Needs a Python with HTA: `LLMPROF_HTA_PYTHON`, else
//! target/hta-venv/bin/python (`.ci/run` makes it). Without either the test says so and passes,
//! except in CI, where it fails. The breakdowns on a GPU trace: docs/analyze-trace.md.
use crate::support::{optional_python, repo_root, short_stage1};
use std::process::Command;

#[test]
fn hta_reads_the_trace_with_its_rank_steps_and_ranges() {
    let Some(python) = optional_python(
        "LLMPROF_HTA_PYTHON",
        "target/hta-venv/bin/python",
        "hta",
        ".ci/run installs HTA into target/hta-venv",
    ) else {
        return;
    };
    let (run, m) = short_stage1(
        "hta-trace",
        &[
            "model=qwen2_5_0_5b",
            "dataset=random_tokens",
            "dataset.input_len=8",
            "infer.max_new_tokens=4",
        ],
    );
    let steps = m.kineto.expect("the Kineto pass ran").decode_steps_profiled;
    let out = Command::new(&python)
        .arg(repo_root().join("scripts/hta_loads.py"))
        .arg(run.join("trace.json"))
        .args(["prefill", "decode_step", "module:layer", "module:lm_head"])
        .output()
        .expect("running HTA");
    assert!(
        out.status.success(),
        "HTA failed on the trace:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("hta_loads.py's JSON");
    // HTA 0.5's warnings about a trace without a rank or iterations (hta/common/trace_file.py,
    // trace.py, trace_filter.py).
    let about_ranks_or_steps = [
        "does not have the rank specified",
        "failed to create rank to trace map",
        "no item in the rank to trace file map",
        "ProfilerStep not found",
        "only one iteration",
        "no column named 'iteration'",
        "does not contain a 'rank' column",
    ];
    for w in v["warnings"].as_array().expect("warnings") {
        let w = w.as_str().unwrap_or_default();
        assert!(
            !about_ranks_or_steps.iter().any(|m| w.contains(m)),
            "HTA warned: {w}"
        );
    }
    assert_eq!(v["rank"], 0, "{v}");
    assert_eq!(v["world_size"], 1, "{v}");
    // ProfilerStep#0 is the prefill, #1.. the profiled decode steps; HTA leaves out the last
    // step by default (`include_last_profiler_step`, docs/analyze-trace.md).
    assert!(steps >= 2, "{steps} decode steps profiled");
    let want: Vec<u64> = (0..steps as u64).collect();
    assert_eq!(v["iterations"], serde_json::json!(want), "{v}");
    let ranges = &v["ranges"];
    assert_eq!(ranges["prefill"], 1, "{v}");
    assert_eq!(ranges["decode_step"], steps as u64 - 1, "{v}");
    assert!(ranges["module:layer"].as_u64().unwrap_or(0) > 0, "{v}");
    assert!(ranges["module:lm_head"].as_u64().unwrap_or(0) > 0, "{v}");
}
