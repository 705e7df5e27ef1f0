//! scripts/bench_vs_hf.py (the table of scripts/bench_vs_hf.sh) on real stage-1 runs of the tiny
//! model: the vision row takes HF's figure from bench_vision_hf.py's JSON, the long-page rows
//! (pages/s, TPOT without and with the n-gram rule), the distinct-pages row and the Kineto row
//! come from the runs' metrics.json. The HF reference itself needs a GPU and transformers (--skip-hf here).
use crate::support::{repo_root, scratch, short_stage1};
use std::process::Command;

/// The trimmed cells of the table row whose metric starts with `metric`: metric, llmprof, HF,
/// ratio, floor, fraction of floor.
fn row(table: &str, metric: &str) -> Vec<String> {
    table
        .lines()
        .find(|l| l.starts_with(&format!("| {metric}")))
        .unwrap_or_else(|| panic!("no row {metric:?} in:\n{table}"))
        .trim_matches('|')
        .split('|')
        .map(|c| c.trim().to_string())
        .collect()
}

#[test]
fn bench_table_reads_vision_long_page_and_kineto_rows_from_stage1_runs() {
    let tiny = [
        "model=deepseek_ocr_tiny",
        "dataset.sampling.num_samples_per_epoch=1",
        "infer.ignore_eos=true",
    ];
    let (plain, m) = short_stage1(
        "bench-plain",
        &[
            &tiny[..],
            &["infer.max_new_tokens=6", "infer.no_repeat_ngram_size=0"],
        ]
        .concat(),
    );
    let (ruled, m_rule) = short_stage1(
        "bench-rule",
        &[&tiny[..], &["infer.max_new_tokens=6"]].concat(),
    );
    let vision_ms = m.stages["vision"].p50_ms;
    let dir = scratch("bench-table");
    let hf_json = dir.join("hf_vision.json");
    // HF three times slower than llmprof's vision: the ratio column must say 3.00×.
    std::fs::write(
        &hf_json,
        format!(
            r#"{{"gpu": "test", "rows": [{{"batch": 1, "deepseek_ocr_vision_ms_per_page": {}}}]}}"#,
            3.0 * vision_ms
        ),
    )
    .unwrap();
    let run = |d: &std::path::Path| format!("1={}", d.display());
    let out = Command::new("python3")
        .arg(repo_root().join("scripts/bench_vs_hf.py"))
        .args(["--llmprof-run", &run(&plain)])
        .args(["--llmprof-long-run", &run(&plain)])
        .args(["--llmprof-long-default-run", &run(&ruled)])
        // Another run stands in for the distinct pages: its step must be the one compared.
        .args(["--llmprof-distinct-run", &run(&ruled)])
        .args(["--hf-vision-json", &hf_json.display().to_string()])
        .args(["--skip-hf", "--new-tokens", "6"])
        .output()
        .expect("python3 runs");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "bench_vs_hf.py failed:\n{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let vision = row(&text, "vision ms/page, batch 1");
    assert_eq!(vision[3], "3.00×", "{vision:?}");
    let e2e = m_rule.serving.e2e_ms.as_ref().unwrap().p50_ms;
    let pages = row(&text, "pages/s, batch 1, 6-token pages");
    assert!(pages[0].contains("default n-gram rule"), "{pages:?}");
    assert_eq!(pages[1], format!("{:.2}", 1000.0 / e2e), "{pages:?}");
    let (tpot, tpot_rule) = (
        m.serving.tpot_ms.as_ref().unwrap().p50_ms,
        m_rule.serving.tpot_ms.as_ref().unwrap().p50_ms,
    );
    let pct = (tpot_rule / tpot - 1.0) * 100.0;
    assert!(
        text.contains(&format!(
            "over 6 tokens: TPOT {tpot_rule:.3} vs {tpot:.3} ms ({pct:+.1} %)"
        )),
        "{text}"
    );
    let distinct = row(&text, "decode tok/s, batch 1, 1 distinct pages");
    assert_ne!(distinct[1], "—", "{distinct:?}");
    let (step, step_rule) = (
        m.stages["decode_step"].p50_ms,
        m_rule.stages["decode_step"].p50_ms,
    );
    assert!(
        text.contains(&format!(
            "1 distinct pages vs 1 copies of one page at batch 1: decode step {step_rule:.3} vs {step:.3} ms"
        )),
        "{text}"
    );
    let kineto = m.kineto.as_ref().expect("the Kineto pass ran").overhead_pct;
    let k = row(&text, "Kineto profiled pass ÷ timed pass, batch 1");
    assert_eq!(k[1], format!("{:.2}×", 1.0 + kineto / 100.0), "{k:?}");
}

/// An OUT_DIR that already holds an earlier benchmark's runs is refused (llmprof would put the
/// new runs beside them as NAME-1 and the table would read the old ones), with exit code 2 and
/// the fix; the earlier runs stay as they were.
#[test]
fn bench_script_refuses_an_out_dir_with_earlier_runs() {
    let out = scratch("bench-reused-out");
    let earlier = out.join("llmprof-b1");
    std::fs::create_dir_all(&earlier).unwrap();
    std::fs::write(earlier.join("metrics.json"), "{}").unwrap();
    let run = Command::new("bash")
        .arg(repo_root().join("scripts/bench_vs_hf.sh"))
        .arg(&out)
        .env("LLMPROF", crate::support::llmprof())
        .env("SKIP_HF", "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{err}");
    assert!(
        err.contains("already holds an earlier benchmark's runs") && err.contains("fresh OUT_DIR"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(earlier.join("metrics.json")).unwrap(),
        "{}"
    );
    assert!(!out.join("llmprof-b1-1").exists() && !out.join("page").exists());
}

/// scripts/bench_ngram.sh on the tiny model: every setting timed in every round, the two
/// differences computed from the medians it reports, and bench_vs_hf.py's rows read from its
/// ngram.json; without a rule to measure the worker says which key to set.
#[test]
fn bench_ngram_times_the_rule_over_one_token_stream() {
    let out = scratch("bench-ngram").join("out");
    let tiny = [
        "model=deepseek_ocr_tiny",
        "infer.no_repeat_ngram_size=2",
        "infer.ngram_window=8",
    ];
    let bench = |dir: &std::path::Path, extra: &[&str]| {
        Command::new("bash")
            .arg(repo_root().join("scripts/bench_ngram.sh"))
            .arg(dir)
            .args(tiny)
            .args(extra)
            .env("LLMPROF_BIN", crate::support::llmprof())
            .env("BATCH", "2")
            .env("TOKENS", "12")
            .env("REPEATS", "2")
            .env("RUST_LOG", "warn")
            .output()
            .unwrap()
    };
    let run = bench(&out, &[]);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "bench_ngram.sh failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("ngram.json")).unwrap()).unwrap();
    assert_eq!(
        (j["batch"].as_u64(), j["max_new_tokens"].as_u64()),
        (Some(2), Some(12))
    );
    let p50 = |arm: &str| {
        let samples = j["tpot_ms_per_repeat"][arm].as_array().unwrap();
        assert_eq!(samples.len(), 2, "{arm}: {samples:?}");
        assert!(
            samples.iter().all(|s| s.as_f64().unwrap() > 0.0),
            "{arm}: {samples:?}"
        );
        j["tpot_ms"][arm]["p50"].as_f64().unwrap()
    };
    let equal = 100.0 * (p50("rule, rule's stream") / p50("none, rule's stream") - 1.0);
    let free = 100.0 * (p50("rule, free") / p50("none, free") - 1.0);
    assert!((j["rule_vs_none_pct_equal_stream"].as_f64().unwrap() - equal).abs() < 1e-9);
    assert!((j["rule_vs_none_pct_free"].as_f64().unwrap() - free).abs() < 1e-9);
    assert!(
        stdout.contains(&format!(
            "rule vs none over one token stream: {equal:+.2} %"
        )),
        "{stdout}"
    );

    // bench_vs_hf.py's rows from it (a stage-1 run of the tiny model for the required run).
    let (plain, _) = short_stage1(
        "bench-ngram-run",
        &[
            "model=deepseek_ocr_tiny",
            "dataset.sampling.num_samples_per_epoch=1",
        ],
    );
    let table = Command::new("python3")
        .arg(repo_root().join("scripts/bench_vs_hf.py"))
        .args(["--llmprof-run", &format!("1={}", plain.display())])
        .args([
            "--llmprof-ngram-json",
            &out.join("ngram.json").display().to_string(),
        ])
        .args(["--skip-hf", "--new-tokens", "4"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&table.stdout).to_string();
    assert!(
        table.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&table.stderr)
    );
    let r = row(
        &text,
        "n-gram rule (n=2, window 8) vs none, batch 2, 12 tokens, one token stream",
    );
    assert_eq!(r[1], format!("{equal:+.1} %"), "{r:?}");
    let none = row(
        &text,
        "decode ms/step, batch 2, 12 tokens, one token stream, no n-gram rule",
    );
    let shown: f64 = none[1].replace(',', "").parse().unwrap();
    let want = p50("none, rule's stream");
    assert!((shown - want).abs() <= 0.006 * want, "{none:?} vs {want}");

    // Another benchmark's folder: refused with exit 2, its ngram.json kept.
    let before = std::fs::read_to_string(out.join("ngram.json")).unwrap();
    let again = bench(&out, &[]);
    let err = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(2), "{err}");
    assert!(
        err.contains("is not empty") && err.contains("new OUT_DIR"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(out.join("ngram.json")).unwrap(),
        before
    );
    assert_eq!(j["rule_reproduces_its_stream"], true, "{j}");

    // No rule to measure: refused, naming the key.
    let refused = bench(
        &scratch("bench-ngram-off").join("out"),
        &["infer.no_repeat_ngram_size=0"],
    );
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{err}");
    assert!(err.contains("infer.no_repeat_ngram_size is 0"), "{err}");
}
