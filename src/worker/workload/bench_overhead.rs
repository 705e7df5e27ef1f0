//! Benchmark of the instrumentation's cost on decode, within one process: repeats alternate
//! between bare (no NVTX ranges, no NVML sampler) and instrumented (NVTX ranges + NVML sampling
//! at `pipeline.nvml.interval_ms`), so process-to-process noise cancels. Writes
//! `overhead.json` and prints the comparison. Driven by scripts/bench_overhead.sh.
use super::bench_support;
use crate::measure::timing::ClockKind;
use crate::models::{with_model, ModelJob};
use anyhow::{Context, Result};
use llmprof::measure::nvml::NvmlSampler;
use llmprof::measure::stats::Summary;
use llmprof::model::Model;
use llmprof::region::DECODE_STEP;
use llmprof::report::artifacts;
use llmprof::spec::RunSpec;
use std::path::Path;
use std::time::Duration;

/// The overhead benchmark on the model `spec` names.
pub fn run(spec: &RunSpec, run_dir: &Path) -> Result<()> {
    with_model(spec, Overhead { spec, run_dir })
}

struct Overhead<'a> {
    spec: &'a RunSpec,
    run_dir: &'a Path,
}

impl ModelJob for Overhead<'_> {
    type Output = ();
    fn run<M: Model>(self, model: &M) -> Result<()> {
        run_on(model, self.spec, self.run_dir)
    }
}

fn run_on<M: Model>(model: &M, spec: &RunSpec, run_dir: &Path) -> Result<()> {
    let prepared = bench_support::prepared(model, spec)?;
    let batch = bench_support::batch_of(&prepared, spec);
    let gen = spec.generate_config(model.ngram_exempt_ids(), spec.infer.max_new_tokens as usize);
    for _ in 0..spec.runtime.warmup {
        model.generate(&batch, &gen, &llmprof::region::NoopObserver)?;
    }
    let clock = ClockKind::detect();
    let device = model.info().cuda_device.unwrap_or(0) as u32;
    let interval = Duration::from_millis(spec.pipeline.nvml.interval_ms as u64);
    let (mut bare, mut instrumented) = (Vec::new(), Vec::new());
    // Pairs (bare, instrumented), so slow drifts hit both sides alike.
    for pair in 0..spec.runtime.repeats {
        for with in [false, true] {
            let sampler = with.then(|| NvmlSampler::start(device, interval));
            let (_, steps) =
                bench_support::timed_generate(model, &batch, &gen, clock, !with, DECODE_STEP)?;
            drop(sampler.map(NvmlSampler::stop));
            let median = Summary::from_samples(&steps)
                .map(|s| s.p50)
                .unwrap_or(f64::NAN);
            tracing::info!(pair, with, median_step_ms = median, "overhead benchmark");
            if with {
                instrumented.push(median)
            } else {
                bare.push(median)
            }
        }
    }
    let a = Summary::from_samples(&bare).context("no bare repeats")?;
    let b = Summary::from_samples(&instrumented).context("no instrumented repeats")?;
    let pct = 100.0 * (b.p50 / a.p50 - 1.0);
    let json = serde_json::json!({
        "bare_step_ms_per_repeat": bare,
        "instrumented_step_ms_per_repeat": instrumented,
        "bare": a, "instrumented": b,
        "overhead_pct_on_median_step": pct,
        "nvml_interval_ms": spec.pipeline.nvml.interval_ms,
    });
    artifacts::write_json(run_dir, artifacts::OVERHEAD_JSON, &json)?;
    let mut table = String::from(
        "| setting | repeats | median decode step ms (p50 over repeats) | mean | CV |\n|---|---:|---:|---:|---:|\n",
    );
    for (name, s) in [("bare", &a), ("NVTX + NVML", &b)] {
        table.push_str(&bench_support::summary_row(name, s));
    }
    table.push_str(&format!(
        "\noverhead on the median decode step: {pct:+.2} % (target <= 2 %)\n"
    ));
    llmprof::stdout::print(&table)?;
    Ok(())
}
