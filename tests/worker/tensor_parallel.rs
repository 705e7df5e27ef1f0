//! `runtime.tensor_parallel` on the CPU (#45): the ranks run as worker processes joined through
//! files; each writes its own measurements; a split the model does not allow is refused before
//! a run directory exists; a rank that dies ends the run at once with every rank stopped.
use crate::support::{llmprof, repo_root, run_with_repo_conf, scratch, short_stage1, stderr};
use std::process::Command;
use std::time::{Duration, Instant};

const TEXT: &[&str] = &[
    "model=qwen3_0_6b",
    "dataset=random_tokens",
    "dataset.num_prompts=2",
    "dataset.input_len=10",
    "dataset.output_len=4",
    "infer.ignore_eos=true",
];

fn requests(run: &std::path::Path) -> Vec<(u64, Vec<u64>)> {
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("measurements.json")).unwrap())
            .unwrap();
    m["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let rows = r["rows"].as_array().unwrap();
            (
                r["output_tokens"].as_u64().unwrap(),
                rows.iter()
                    .map(|x| x["prompt_tokens"].as_u64().unwrap())
                    .collect(),
            )
        })
        .collect()
}

#[test]
fn two_ranks_run_stage1_each_with_its_measurements() {
    let mut args = TEXT.to_vec();
    args.push("runtime.tensor_parallel=2");
    let (run, m) = short_stage1("tp2", &args);
    assert!(
        m.notes.iter().any(|n| n.contains("rank 0 of 2")),
        "{:?}",
        m.notes
    );
    // Rank 1 ran the same requests in lock-step and wrote its own measurements.
    let rank1 = run.join("rank1");
    assert!(rank1.join("measurements.json").is_file());
    assert_eq!(requests(&run), requests(&rank1));
    assert!(
        !run.join("tp").exists(),
        "the collectives' folder is removed"
    );
    // Rank 0's report sets the ranks side by side; rank 1 has its own.
    let tp = m
        .tensor_parallel
        .as_ref()
        .expect("a tensor_parallel section");
    assert_eq!(tp.world, 2);
    assert_eq!(
        tp.ranks.iter().map(|r| r.rank).collect::<Vec<_>>(),
        vec![0, 1]
    );
    assert!(tp.slowest_rank < 2);
    assert!(tp.ranks.iter().all(|r| r.decode_step_p50_ms.is_some()));
    // The collectives are a module of their own in each rank's breakdown.
    assert!(
        tp.ranks
            .iter()
            .all(|r| r.communication_ms_per_step.is_some_and(|c| c > 0.0)),
        "{:?}",
        tp.ranks
    );
    let spread = tp.spread_pct.expect("both ranks decoded");
    assert!(spread >= 0.0, "{spread}");
    // Each rank's breakdown has its collectives: the straggler is found by the work outside them.
    assert_eq!(tp.compared, "work_outside_communication");
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(report.contains("## Tensor parallel: 2 ranks"), "{report}");
    assert!(rank1.join("metrics.json").is_file() && rank1.join("report.md").is_file());
    // `llmprof report` rebuilds rank 0's folder (the ranks side by side) and a rank's own.
    for (dir, side_by_side) in [(&run, true), (&rank1, false)] {
        let out = Command::new(llmprof())
            .arg("report")
            .arg(dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let m: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("metrics.json")).unwrap())
                .unwrap();
        assert_eq!(
            m.get("tensor_parallel").is_some(),
            side_by_side,
            "{}",
            dir.display()
        );
    }
    // Each rank's Kineto trace in the run directory's traces/ as trace.rank<k>.json with its rank
    // and world size (rank 0's is trace.json too), which `llmprof analyze trace` sets side by side.
    let traces: Vec<_> = std::fs::read_dir(run.join("traces")).unwrap().collect();
    assert_eq!(traces.len(), 2, "rank traces only: {traces:?}");
    for k in 0..2u64 {
        let path = run.join(format!("traces/trace.rank{k}.json"));
        let t: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(
            t["distributedInfo"],
            serde_json::json!({"backend": "file", "rank": k, "world_size": 2}),
            "{}",
            path.display()
        );
        assert!(t["traceEvents"].as_array().is_some_and(|e| !e.is_empty()));
    }
    assert_eq!(
        std::fs::read(run.join("traces/trace.rank0.json")).unwrap(),
        std::fs::read(run.join("trace.json")).unwrap()
    );
    // The run directory itself: its two rank traces, nothing else of its JSON files.
    let out = Command::new(llmprof())
        .args(["analyze", "trace"])
        .arg(&run)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("# Trace analysis: 2 ranks"), "{text}");
    assert!(!stderr(&out).contains("not a trace"), "{}", stderr(&out));
    // The same run on one rank makes the same requests.
    let (one, _) = short_stage1("tp1", TEXT);
    assert_eq!(requests(&run), requests(&one));
}

#[test]
fn a_split_the_model_does_not_allow_is_refused_before_a_run_directory() {
    for (command, extra, says) in [
        (
            "stage1",
            vec!["runtime.tensor_parallel=3"],
            "runtime.tensor_parallel=3 does not divide num_attention_heads=16",
        ),
        // Qwen3-0.6B splits four ways, its CPU fallback (2 K/V heads) does not.
        (
            "stage1",
            vec!["runtime.tensor_parallel=4"],
            "the CPU fallback qwen3_0_6b_tiny (which runs without a GPU): runtime.tensor_parallel=4 does not divide num_key_value_heads=2",
        ),
        (
            "stage2",
            vec![
                "runtime.tensor_parallel=2",
                "pipeline.ncu.enable=true",
                "pipeline.ncu.rank=2",
            ],
            "pipeline.ncu.rank=2 but runtime.tensor_parallel=2: the ranks are 0 .. 1",
        ),
        (
            "stage1",
            vec!["model=deepseek_ocr_tiny", "runtime.tensor_parallel=2"],
            "DeepSeek-OCR runs on one GPU only",
        ),
        (
            "stage1",
            vec!["runtime.tensor_parallel=65"],
            "runtime.tensor_parallel=65 is out of range",
        ),
    ] {
        let dir = scratch("tp-refused");
        let mut args = vec![command];
        args.extend_from_slice(TEXT);
        args.extend(extra.iter().copied());
        args.push("hydra.run.dir=run");
        let out = run_with_repo_conf(&dir, &args);
        assert!(!out.status.success());
        assert!(stderr(&out).contains(says), "{says}: {}", stderr(&out));
        assert!(
            !dir.join("run").exists(),
            "{says}: a run directory was made"
        );
    }
}

/// A two-rank stage 1 in a fresh folder whose rank 1 runs `rank1` (a shell line) instead of the
/// worker: its output, how long it took, its status.json.
fn two_ranks_with_rank1(
    tag: &str,
    rank1: &str,
    extra: &[&str],
) -> (std::process::Output, Duration, serde_json::Value) {
    let dir = scratch(tag);
    let real = llmprof().with_file_name("llmprof-worker");
    let wrapper = dir.join("worker.sh");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nif [ \"$LLMPROF_TP_RANK\" = 1 ]; then {rank1}; fi\nexec '{}' \"$@\"\n",
            real.display()
        ),
    )
    .unwrap();
    Command::new("chmod")
        .arg("+x")
        .arg(&wrapper)
        .status()
        .unwrap();
    let started = Instant::now();
    let out = Command::new(llmprof())
        .current_dir(&dir)
        .env("LLMPROF_WORKER", &wrapper)
        .args([
            "--config-dir",
            &repo_root().join("conf").display().to_string(),
        ])
        .arg("stage1")
        .args(TEXT)
        .args(["runtime.tensor_parallel=2", "hydra.run.dir=run"])
        .args(extra)
        .output()
        .unwrap();
    let took = started.elapsed();
    let status =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run/status.json")).unwrap())
            .unwrap();
    assert!(
        !dir.join("run/heartbeat").exists(),
        "the progress marks are removed"
    );
    (out, took, status)
}

#[test]
fn a_rank_that_dies_ends_the_run_with_every_rank_stopped() {
    // Rank 1's worker dies at start; rank 0 would wait at its first collective for two minutes.
    let (out, took, status) = two_ranks_with_rank1(
        "tp-dies",
        "echo 'ERROR rank one failed on purpose' >&2; exit 3",
        &[],
    );
    assert!(!out.status.success());
    assert_eq!(status["state"], "failed", "{status}");
    let error = status["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("rank 1 of 2 exited with status 3") && error.contains("failed on purpose"),
        "{error}"
    );
    // Rank 0 was stopped, not left to its two-minute collective timeout.
    assert!(took < Duration::from_secs(60), "took {took:?}");
}

#[test]
fn a_rank_that_hangs_ends_the_run_after_the_timeout_with_every_rank_stopped() {
    // Rank 1 never starts its worker and never exits; rank 0 would wait at its first collective
    // for two minutes. With a 3 s timeout the front end names rank 1 and stops both.
    let (out, took, status) = two_ranks_with_rank1(
        "tp-hangs",
        "exec sleep 600",
        &["runtime.tensor_parallel_timeout_s=3"],
    );
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("rank 1 of 2 made no progress") && err.contains("never started"),
        "{err}"
    );
    assert_eq!(status["state"], "failed", "{status}");
    assert!(took < Duration::from_secs(60), "took {took:?}");
}

#[test]
fn four_ranks_run_stage1_and_the_report_sets_them_side_by_side() {
    // #46 on the CPU: a Llama-shaped config with 8 heads on 4 kv heads, so that four ranks
    // split it (the presets' CPU fallbacks have 2 kv heads).
    let dir = scratch("tp4");
    let config = dir.join("config.json");
    std::fs::write(
        &config,
        r#"{"model_type": "llama", "vocab_size": 512, "hidden_size": 128, "intermediate_size": 384,
            "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 4,
            "head_dim": 16, "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
            "max_position_embeddings": 4096, "tie_word_embeddings": false,
            "bos_token_id": 1, "eos_token_id": 2}"#,
    )
    .unwrap();
    let model = format!("model.config={}", config.display());
    let mut args = vec!["model=hf", "model.weights=synthetic", model.as_str()];
    args.extend_from_slice(&TEXT[1..]);
    let mut four = args.clone();
    four.push("runtime.tensor_parallel=4");
    let (run, m) = short_stage1("tp4-run", &four);
    let tp = m
        .tensor_parallel
        .as_ref()
        .expect("a tensor_parallel section");
    assert_eq!(tp.world, 4);
    assert_eq!(
        tp.ranks.iter().map(|r| r.rank).collect::<Vec<_>>(),
        vec![0, 1, 2, 3]
    );
    for k in 1..4 {
        let rank = run.join(format!("rank{k}"));
        assert_eq!(requests(&run), requests(&rank), "rank {k}");
        assert!(rank.join("report.md").is_file(), "rank {k}");
    }
    let (one, _) = short_stage1("tp4-one", &args);
    assert_eq!(requests(&run), requests(&one));
}

#[test]
fn stage2_puts_the_profiler_before_the_chosen_ranks_worker_only() {
    // What stage 2 gives the child `llmprof stage1` for pipeline.ncu.rank=1: the profiler's
    // command line goes before rank 1's worker; rank 0 runs as it is. A stand-in profiler
    // records its arguments and runs the rest.
    let dir = scratch("tp-profiled");
    let log = dir.join("profiled.txt");
    let profiler = dir.join("profiler.sh");
    std::fs::write(
        &profiler,
        "#!/bin/sh\nlog=$2\nshift 2\necho \"$LLMPROF_TP_RANK $*\" >> \"$log\"\nexec \"$@\"\n",
    )
    .unwrap();
    Command::new("chmod")
        .arg("+x")
        .arg(&profiler)
        .status()
        .unwrap();
    let argv = serde_json::json!([
        profiler.display().to_string(),
        "--log",
        log.display().to_string()
    ]);
    let out = Command::new(llmprof())
        .current_dir(&dir)
        .env("LLMPROF_TP_PROFILED_RANK", "1")
        .env("LLMPROF_TP_PROFILER", argv.to_string())
        .args([
            "--config-dir",
            &repo_root().join("conf").display().to_string(),
        ])
        .arg("stage1")
        .args(TEXT)
        .args([
            "runtime.tensor_parallel=2",
            "runtime.repeats=1",
            "hydra.run.dir=run",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let lines: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with("1 ")
            && lines[0].contains("llmprof-worker stage1")
            && lines[0].ends_with("rank1"),
        "{lines:?}"
    );
}
