//! Benchmark of the no-repeat-n-gram rule's cost on decode, within one process and over one
//! token stream. With random weights a rule-free decoder repeats a token, so every row reads the
//! same experts, while the rule forces new tokens and other experts: comparing free runs mixes
//! the rule's own work with a different token stream. Here the warm-up records the stream the
//! rule produces, and timed rounds alternate no rule and the rule over that stream replayed
//! (`GenerateConfig::replay_tokens`: the argmax and the rule still run, the replayed id is fed),
//! so both sides do the same forward work; the two free runs (each its own stream) alternate
//! too, for the comparison a user sees. Both sides run the loop the rule needs (HF's
//! whole-sequence rule: the host loop). Writes `ngram.json` and prints the table. Driven by
//! scripts/bench_ngram.sh; TPOT here is the decode region's time over its decode steps.
use super::bench_support;
use crate::measure::timing::ClockKind;
use crate::models::{with_model, ModelJob};
use anyhow::{ensure, Context, Result};
use llmprof::measure::stats::Summary;
use llmprof::model::{GenerateConfig, Model, NoRepeatNgram};
use llmprof::region::{NoopObserver, DECODE};
use llmprof::report::artifacts;
use llmprof::spec::RunSpec;
use std::collections::BTreeMap;
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

const NONE_REPLAYED: &str = "none, rule's stream";
const RULE_REPLAYED: &str = "rule, rule's stream";
const NONE_FREE: &str = "none, free";
const RULE_FREE: &str = "rule, free";

fn run_on<M: Model>(model: &M, spec: &RunSpec, run_dir: &Path) -> Result<()> {
    let prepared = bench_support::prepared(model, spec)?;
    let batch = bench_support::batch_of(&prepared, spec);
    let rule = spec.generate_config(model.ngram_exempt_ids(), spec.infer.max_new_tokens as usize);
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
    // HF's whole-sequence rule reads every token on the host: the rule-free side takes the same
    // host loop, so the comparison is the rule's work, not the loop's sync.
    let device_loop = rule.sync_free_decode && !matches!(rule.no_repeat, NoRepeatNgram::Hf { .. });
    let none = GenerateConfig {
        no_repeat: NoRepeatNgram::Off,
        sync_free_decode: device_loop,
        ..rule.clone()
    };
    // The rule's own stream.
    let stream = model.generate(&batch, &rule, &NoopObserver)?.tokens;
    let replaying = |g: &GenerateConfig| GenerateConfig {
        replay_tokens: Some(stream.clone()),
        ..g.clone()
    };
    let settings = [
        (NONE_REPLAYED, replaying(&none)),
        (RULE_REPLAYED, replaying(&rule)),
        (NONE_FREE, none.clone()),
        (RULE_FREE, rule.clone()),
    ];
    for (_, gen) in &settings {
        for _ in 0..spec.runtime.warmup {
            model.generate(&batch, gen, &NoopObserver)?;
        }
    }
    let clock = ClockKind::detect();
    let mut tpot: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    // The premise: decoding is deterministic, so the rule's choices over its own stream are
    // that stream.
    let mut rule_reproduces_stream = true;
    // Rounds over all settings, in reverse order every second round, so slow drifts and
    // order effects hit every setting alike.
    for round in 0..spec.runtime.repeats {
        let order: Vec<usize> = if round % 2 == 0 {
            (0..settings.len()).collect()
        } else {
            (0..settings.len()).rev().collect()
        };
        for i in order {
            let (name, gen) = &settings[i];
            let (out, decode_ms) =
                bench_support::timed_generate(model, &batch, gen, clock, false, DECODE)?;
            if *name == RULE_REPLAYED {
                rule_reproduces_stream &= out.chosen.as_ref() == Some(&stream);
            }
            let per_step = decode_ms.iter().sum::<f64>() / out.decode_steps.max(1) as f64;
            tpot.entry(name).or_default().push(per_step);
        }
    }
    if !rule_reproduces_stream {
        tracing::warn!(
            "the rule's choices over its own stream differ from the stream it produced (nondeterministic decoding): the one-stream comparison is approximate"
        );
    }
    let summaries = tpot
        .iter()
        .map(|(name, v)| {
            Summary::from_samples(v)
                .map(|s| (*name, s))
                .with_context(|| format!("no repeats of {name}"))
        })
        .collect::<Result<BTreeMap<_, _>>>()?;
    let pct = |on: &str, off: &str| 100.0 * (summaries[on].p50 / summaries[off].p50 - 1.0);
    let (equal_pct, free_pct) = (pct(RULE_REPLAYED, NONE_REPLAYED), pct(RULE_FREE, NONE_FREE));
    let json = serde_json::json!({
        "batch": batch.len(),
        "max_new_tokens": rule.max_new_tokens,
        "rule": rule.no_repeat,
        "loop": if device_loop { "device" } else { "host" },
        "tpot": "decode region time / decode steps, ms",
        "tpot_ms_per_repeat": tpot,
        "tpot_ms": summaries,
        "rule_reproduces_its_stream": rule_reproduces_stream,
        "rule_vs_none_pct_equal_stream": equal_pct,
        "rule_vs_none_pct_free": free_pct,
    });
    artifacts::write_json(run_dir, artifacts::NGRAM_JSON, &json)?;
    let mut table = format!(
        "n-gram rule at batch {}, {} tokens ({} loop); TPOT = decode time ÷ decode steps\n\n| setting | repeats | TPOT ms (p50) | mean | CV |\n|---|---:|---:|---:|---:|\n",
        batch.len(),
        rule.max_new_tokens,
        if device_loop { "device" } else { "host" },
    );
    for (name, _) in &settings {
        table.push_str(&bench_support::summary_row(name, &summaries[name]));
    }
    table.push_str(&format!(
        "\nrule vs none over one token stream: {equal_pct:+.2} %; free runs (each its own stream): {free_pct:+.2} %\n"
    ));
    llmprof::stdout::print(&table)?;
    Ok(())
}
