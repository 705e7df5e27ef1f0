//! The separate Kineto pass: one representative batch under libtorch's profiler (decode capped at
//! `pipeline.torch_profiler.max_decode_steps`), stage user scopes on, then operators.md,
//! kernels.md and trace.json. Its times are never mixed into the timed statistics.
use super::inputs::Prepared;
use crate::models::deepseek_ocr::generate::GenerateConfig;
use super::setup::Workload;
use super::stage1::run_batch;
use anyhow::{Context, Result};
use crate::measure::kineto::{KinetoSession, ProfileEvents, ProfilerConfig};
use crate::measure::nvtx::{NvtxObserver, NvtxOptions};
use crate::measure::ops::{self, KernelRow, OperatorRow};
use crate::measure::timing::ClockKind;
use llmprof::spec::{Activity, RunSpec};
use std::path::Path;

pub struct KinetoResult {
    pub prefill_ms: f64,
    pub decode_ms: f64,
    pub decode_steps: usize,
    pub events: usize,
    pub operators: Vec<OperatorRow>,
    pub kernels: Vec<KernelRow>,
    /// Sum of Kineto's per-op FLOP counts (ops it knows a formula for: mm, addmm, bmm, conv…).
    pub kineto_flops: u64,
}

pub fn run(
    spec: &RunSpec,
    w: &Workload,
    batch: &[&Prepared],
    gen: &GenerateConfig,
    run_dir: &Path,
) -> Result<KinetoResult> {
    let t = &spec.pipeline.torch_profiler;
    let cuda_visible = crate::ffi::cuda_device_count() > 0;
    let config = ProfilerConfig {
        record_shapes: t.record_shapes,
        profile_memory: t.profile_memory,
        with_stack: t.with_stack,
        with_flops: t.with_flops,
        activity_cpu: t.activities.contains(&Activity::Cpu),
        activity_cuda: t.activities.contains(&Activity::Cuda) && cuda_visible,
    };
    let capped = GenerateConfig {
        max_new_tokens: gen
            .max_new_tokens
            .min(t.max_decode_steps as usize + 1)
            .max(1),
        ..gen.clone()
    };
    tracing::info!(decode_steps = capped.max_new_tokens - 1, "Kineto pass");
    let obs = NvtxObserver::new(NvtxOptions {
        sync_on_exit: false,
        kineto_scopes: true,
        timing: Some(ClockKind::detect()),
        no_ranges: false,
    });
    let session = KinetoSession::start(config)?;
    let out = run_batch(w, batch, &capped, &obs)?;
    let trace = spec.output.trace_json.then(|| run_dir.join("trace.json"));
    let profile = session.finish(trace.as_deref())?;
    let times = obs
        .finish()
        .context("reading stage timers of the Kineto pass")?;
    let sum = |name: &str| {
        times
            .iter()
            .filter(|t| t.name == name)
            .map(|t| t.duration_ns as f64 / 1e6)
            .sum::<f64>()
    };
    let events: &ProfileEvents = &profile.events;
    let attribution = ops::Attribution::new(events);
    let operators = ops::operator_table(events, &attribution);
    let kernels = ops::kernel_table(events, &attribution);
    std::fs::write(
        run_dir.join("operators.md"),
        ops::render_operators_md(&operators),
    )?;
    std::fs::write(run_dir.join("kernels.md"), ops::render_kernels_md(&kernels))?;
    // Machine-readable kernel table (stage 2 picks its ncu top-K from it).
    std::fs::write(
        run_dir.join("kernels.json"),
        serde_json::to_string_pretty(&kernels)? + "\n",
    )?;
    Ok(KinetoResult {
        prefill_ms: sum("prefill"),
        decode_ms: sum("decode"),
        decode_steps: out.decode_steps,
        events: events.ops.len() + events.kernels.len(),
        kineto_flops: events.ops.iter().map(|o| o.flops).sum(),
        operators,
        kernels,
    })
}
