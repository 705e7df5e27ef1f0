//! What the in-process benchmarks (`bench-overhead`, `bench-ngram`) share: the batch they time
//! (the first batch of stage 1's plan), one timed generation with its region times,
//! and their table rows.
use crate::measure::nvtx::{NvtxObserver, NvtxOptions};
use crate::measure::timing::ClockKind;
use anyhow::{Context, Result};
use llmprof::measure::stats::Summary;
use llmprof::model::{GenerateConfig, GenerateOutput, Model};
use llmprof::region::Region;
use llmprof::spec::RunSpec;

/// The prepared inputs of `spec`'s dataset; a benchmark times the first `runtime.batch_size`
/// of them as one batch ([`batch_of`]).
pub fn prepared<M: Model>(model: &M, spec: &RunSpec) -> Result<Vec<M::Request>> {
    let (items, _) = super::inputs::items(spec)?;
    super::inputs::prepare_all(model, spec, &items)
}

/// The batch a benchmark times: the first batch of stage 1's plan (the first
/// `runtime.batch_size` of `prepared`, cycled when fewer were prepared).
pub fn batch_of<'a, R>(prepared: &'a [R], spec: &RunSpec) -> Vec<&'a R> {
    llmprof::dataset::BatchPlan::new(prepared.len(), spec.runtime.batch_size as usize)
        .gather(prepared)
        .into_iter()
        .next()
        .unwrap_or_default()
}

/// One generation of `batch` under `gen`, timed at region boundaries (`no_ranges`: without the
/// NVTX push/pop itself): its output and the durations in ms of every timed `region`.
pub fn timed_generate<M: Model>(
    model: &M,
    batch: &[&M::Request],
    gen: &GenerateConfig,
    clock: ClockKind,
    no_ranges: bool,
    region: Region,
) -> Result<(GenerateOutput, Vec<f64>)> {
    let obs = NvtxObserver::new(NvtxOptions {
        sync_on_exit: false,
        kineto_scopes: false,
        timing: Some(clock),
        no_ranges,
        modules: false,
    });
    let out = model.generate(batch, gen, &obs)?;
    let ms = obs
        .finish()
        .context("reading timers")?
        .into_iter()
        .filter(|t| t.name == region.nvtx_name())
        .map(|t| t.duration_ns as f64 / 1e6)
        .collect();
    Ok((out, ms))
}

/// A row of a benchmark's markdown table: name, repeats, p50, mean, coefficient of variation.
pub fn summary_row(name: &str, s: &Summary) -> String {
    format!(
        "| {name} | {} | {:.4} | {:.4} | {:.1} % |\n",
        s.n,
        s.p50,
        s.mean,
        s.cv.unwrap_or(0.0) * 100.0
    )
}
