//! Benchmark of the no-repeat-n-gram rule's cost on decode, within one process and over one
//! token stream. With random weights a rule-free decoder repeats a token, so every row reads the
//! same experts, while the rule forces new tokens and other experts: comparing free runs mixes
//! the rule's own work with a different token stream. Here the warm-up records the stream the
//! rule produces, and timed repeats alternate rule-free and rule over that stream replayed
//! (`GenerateConfig::replay_tokens`: the argmax and the rule still run, the replayed id is fed),
//! so both sides do the same forward work. Free runs (each side's own stream) alternate too, for
//! the comparison a user sees. Writes `ngram.json` and prints the table. Driven by
//! scripts/bench_ngram.sh; TPOT here is the decode region's time over its decode steps.
use crate::measure::nvtx::{NvtxObserver, NvtxOptions};
use crate::measure::timing::ClockKind;
use crate::models::{with_model, ModelJob};
use anyhow::{ensure, Context, Result};
use llmprof::measure::stats::Summary;
use llmprof::model::{GenerateConfig, Model, NoRepeatNgram};
use llmprof::region::{NoopObserver, DECODE};
use llmprof::report::artifacts;
use llmprof::spec::RunSpec;
use std::path::Path;

/// The n-gram benchmark on the model `spec` names.
pub fn run(spec: &RunSpec, run_dir: &Path) -> Result<()> {
    with_model(spec, NgramBench { spec, run_dir })
}

struct NgramBench<'a> {
    spec: &'a RunSpec,
    run_dir: &'a Path,
}

impl ModelJob for NgramBench<'_> {
    type Output = ();
    fn run<M: Model>(self, model: &M) -> Result<()> {
        run_on(model, self.spec, self.run_dir)
    }
}

/// One timed setting: its name in the table and `ngram.json`, and its generation config.
struct Arm {
    name: &'static str,
    gen: GenerateConfig,
    tpot_ms: Vec<f64>,
}

fn run_on<M: Model>(model: &M, spec: &RunSpec, run_dir: &Path) -> Result<()> {
    let (items, _) = super::inputs::items(spec)?;
    let prepared = super::inputs::prepare_all(model, spec, &items)?;
    let batch: Vec<&M::Request> = prepared
        .iter()
        .take(spec.runtime.batch_size as usize)
        .collect();
    let rule = GenerateConfig::from_spec(
        spec,
        model.ngram_exempt_ids(),
        spec.infer.max_new_tokens as usize,
    );
    ensure!(
        rule.no_repeat != NoRepeatNgram::Off,
        "the n-gram benchmark needs a rule to measure: infer.no_repeat_ngram_size is 0 (set it, and infer.ngram_window, as the run would use them)"
    );
    ensure!(
        rule.force_max_new_tokens,
        "the n-gram benchmark compares equal lengths: set infer.ignore_eos=true"
    );
    ensure!(
        rule.max_new_tokens >= 2,
        "the n-gram benchmark times decode steps: infer.max_new_tokens must be at least 2"
    );
    // The rule's own stream: its argmax equals the replayed id at every step, so "rule over
    // its stream" is the rule's free run with a replay's bookkeeping.
    let stream = model.generate(&batch, &rule, &NoopObserver)?.tokens;
    let none = GenerateConfig {
        no_repeat: NoRepeatNgram::Off,
        ..rule.clone()
    };
    let replaying = |g: &GenerateConfig| GenerateConfig {
        replay_tokens: Some(stream.clone()),
        ..g.clone()
    };
    let mut arms = [
        ("none, rule's stream", replaying(&none)),
        ("rule, rule's stream", replaying(&rule)),
        ("none, free", none.clone()),
        ("rule, free", rule.clone()),
    ]
    .map(|(name, gen)| Arm {
        name,
        gen,
        tpot_ms: Vec::new(),
    });
    let batch_ref = &batch;
    for arm in &arms {
        for _ in 0..spec.runtime.warmup {
            model.generate(batch_ref, &arm.gen, &NoopObserver)?;
        }
    }
    let clock = ClockKind::detect();
    // Rounds over all settings, so slow drifts hit every setting alike.
    for _ in 0..spec.runtime.repeats {
        for arm in arms.iter_mut() {
            let obs = NvtxObserver::new(NvtxOptions {
                sync_on_exit: false,
                kineto_scopes: false,
                timing: Some(clock),
                no_ranges: false,
            });
            let out = model.generate(batch_ref, &arm.gen, &obs)?;
            let decode_ms: f64 = obs
                .finish()
                .context("reading timers")?
                .into_iter()
                .filter(|t| t.name == DECODE.nvtx_name())
                .map(|t| t.duration_ns as f64 / 1e6)
                .sum();
            ensure!(
                out.decode_steps > 0,
                "no decode step ran (max_new_tokens {})",
                rule.max_new_tokens
            );
            arm.tpot_ms.push(decode_ms / out.decode_steps as f64);
        }
    }
    let summaries = arms
        .iter()
        .map(|a| {
            Summary::from_samples(&a.tpot_ms).with_context(|| format!("no repeats of {}", a.name))
        })
        .collect::<Result<Vec<_>>>()?;
    let pct = |on: usize, off: usize| 100.0 * (summaries[on].p50 / summaries[off].p50 - 1.0);
    let (equal_pct, free_pct) = (pct(1, 0), pct(3, 2));
    let json = serde_json::json!({
        "batch": batch.len(),
        "max_new_tokens": rule.max_new_tokens,
        "rule": rule.no_repeat,
        "tpot_ms_per_repeat": arms.iter().map(|a| (a.name, &a.tpot_ms)).collect::<std::collections::BTreeMap<_, _>>(),
        "tpot_ms": arms.iter().zip(&summaries).map(|(a, s)| (a.name, s)).collect::<std::collections::BTreeMap<_, _>>(),
        "rule_vs_none_pct_equal_stream": equal_pct,
        "rule_vs_none_pct_free": free_pct,
    });
    artifacts::write_json(run_dir, artifacts::NGRAM_JSON, &json)?;
    let mut table = format!(
        "n-gram rule at batch {}, {} tokens; TPOT = decode time ÷ decode steps\n\n| setting | repeats | TPOT ms (p50) | mean | CV |\n|---|---:|---:|---:|---:|\n",
        batch.len(),
        rule.max_new_tokens
    );
    for (a, s) in arms.iter().zip(&summaries) {
        table.push_str(&format!(
            "| {} | {} | {:.4} | {:.4} | {:.1} % |\n",
            a.name,
            s.n,
            s.p50,
            s.mean,
            s.cv.unwrap_or(0.0) * 100.0
        ));
    }
    table.push_str(&format!(
        "\nrule vs none over one token stream: {equal_pct:+.2} %; free runs (each its own stream): {free_pct:+.2} %\n"
    ));
    llmprof::stdout::print(&table)?;
    Ok(())
}
