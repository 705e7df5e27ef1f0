//! The separate Kineto pass: one representative batch under libtorch's profiler (decode capped at
//! `pipeline.torch_profiler.max_decode_steps`, after `pipeline.torch_profiler.warmup` discarded
//! profiled passes), stage user scopes on, then operators.md, kernels.md, kernels.json and
//! trace.json. Its times are never mixed into the timed statistics.
use crate::measure::kineto::{KinetoSession, ProfilerConfig};
use crate::measure::nvtx::{NvtxObserver, NvtxOptions};
use crate::measure::timing::ClockKind;
use anyhow::{Context, Result};
use llmprof::measure::kineto_events::ProfileEvents;
use llmprof::measure::module_tables::{self, ModuleProfile};
use llmprof::measure::{capture_record, graph_match, module_attr, op_tables, step_timeline};
use llmprof::model::{GenerateConfig, Model};
use llmprof::region::{RegionTree, DECODE, PREFILL};
use llmprof::report::artifacts;
use llmprof::report::measurements::KinetoSummary;
use llmprof::spec::{Activity, RunSpec};
use std::path::Path;

pub fn run<M: Model>(
    model: &M,
    spec: &RunSpec,
    batch: &[&M::Request],
    gen: &GenerateConfig,
    run_dir: &Path,
) -> Result<KinetoSummary> {
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
    let observer = || {
        NvtxObserver::new(NvtxOptions {
            sync_on_exit: false,
            kineto_scopes: true,
            timing: Some(ClockKind::detect()),
            no_ranges: false,
            modules: true,
        })
    };
    for pass in 0..t.warmup {
        tracing::info!(pass, "Kineto warm-up pass (discarded)");
        let obs = observer();
        let session = KinetoSession::start(config)?;
        model.generate(batch, &capped, &obs)?;
        session.finish(None)?;
        obs.finish()
            .context("reading stage timers of a Kineto warm-up pass")?;
    }
    tracing::info!(decode_steps = capped.max_new_tokens - 1, "Kineto pass");
    let obs = observer();
    let session = KinetoSession::start(config)?;
    let out = model.generate(batch, &capped, &obs)?;
    let trace = spec
        .output
        .trace_json
        .then(|| run_dir.join(artifacts::TRACE_JSON));
    let profile = session.finish(trace.as_deref())?;
    if let Some(path) = trace.as_deref() {
        // The trace without its rank still opens in Perfetto; the measurements do not need it.
        if let Err(e) = mark_rank(path, spec, model.info().cuda_device.is_some()) {
            tracing::warn!("{e:#}");
        }
    }
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
    let events = &profile.events;
    let attribution = op_tables::Attribution::new(events);
    let operators = op_tables::operator_table(events, &attribution);
    let mut kernels = op_tables::kernel_table(events, &attribution);
    let modules = module_profile(events, &attribution, &model.regions(), run_dir)?;
    module_tables::attach_modules(&mut kernels, &modules.kernels);
    artifacts::write(
        run_dir,
        artifacts::OPERATORS_MD,
        &op_tables::render_operators_md(&operators),
    )?;
    artifacts::write(
        run_dir,
        artifacts::KERNELS_MD,
        &op_tables::render_kernels_md(&kernels),
    )?;
    artifacts::write_json(run_dir, artifacts::KERNELS_JSON, &kernels)?;
    let work = model.work(batch, out.decode_steps);
    Ok(KinetoSummary {
        prefill_ms: sum(PREFILL.nvtx_name()),
        decode_ms: sum(DECODE.nvtx_name()),
        decode_steps: out.decode_steps,
        events: events.ops.len() + events.kernels.len(),
        kineto_flops: events.ops.iter().map(|o| o.flops).sum(),
        operators,
        kernels,
        analytic_flops: work
            .region_flops
            .get(PREFILL.nvtx_name())
            .copied()
            .unwrap_or(0.0)
            + work.step_flops.iter().sum::<f64>(),
        modules: Some(modules),
        decode_step_modules: model.decode_step_modules(batch, out.decode_steps),
    })
}

/// GPU time by stage and module: eager work by the module scopes above it, replayed work by its
/// graph's capture record (also written to graph_records.json for offline checks).
fn module_profile(
    events: &ProfileEvents,
    attribution: &op_tables::Attribution,
    regions: &RegionTree,
    run_dir: &Path,
) -> Result<ModuleProfile> {
    let records = crate::engine::capture_marks::records();
    let eager = module_attr::kernel_modules(events, attribution);
    let replay = graph_match::match_replays(events, attribution, &records);
    let replayed: std::collections::BTreeSet<u64> = events
        .ops
        .iter()
        .filter_map(|o| capture_record::replay_serial(&o.name))
        .collect();
    let kept: Vec<&capture_record::CaptureRecord> = records
        .values()
        .filter(|r| replayed.contains(&r.serial))
        .collect();
    artifacts::write_json(run_dir, artifacts::GRAPH_RECORDS_JSON, &kept)?;
    let m = &replay.mapping;
    if m.mismatches_total > 0 || m.graphs_without_record > 0 {
        tracing::warn!(
            mismatches = m.mismatches_total,
            graphs_without_record = m.graphs_without_record,
            unmatched_kernels = m.kernels_unmatched,
            "some replayed kernels have no module (modules.md says which)"
        );
    }
    let stages = regions.names();
    // Without GPU work (a CPU run) the same breakdown comes from host time.
    let on_gpu = events.kernels.iter().any(|k| k.is_gpu_work());
    let (rows, kernels) = match on_gpu {
        true => module_tables::module_rows(events, attribution, &eager, &replay),
        false => (
            module_tables::host_module_rows(events, attribution, &stages),
            Vec::new(),
        ),
    };
    let mut stage_runs = module_tables::stage_runs(events, &stages);
    module_tables::add_replayed_stage_runs(&mut stage_runs, events, &records);
    Ok(ModuleProfile {
        source: match on_gpu {
            true => module_tables::TimeSource::Gpu,
            false => module_tables::TimeSource::Host,
        },
        rows,
        kernels,
        stage_runs,
        mapping: replay.mapping,
        timelines: stages
            .iter()
            .map(|s| match on_gpu {
                true => step_timeline::stage_timeline(events, attribution, s),
                false => step_timeline::host_stage_timeline(events, attribution, s, &stages),
            })
            .filter(|t| t.runs > 0)
            .collect(),
        nesting_stages: regions
            .all()
            .iter()
            .filter_map(|r| regions.parent(*r))
            .map(|p| p.nvtx_name().to_string())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect(),
    })
}

/// A tensor-parallel rank's trace gets its rank and world size (`distributedInfo`, as
/// torch.distributed's profiler writes them); the front end links it into the run directory as
/// `traces/trace.rank<k>.json`. Nothing for a run of one rank.
fn mark_rank(trace: &Path, spec: &RunSpec, on_gpu: bool) -> Result<()> {
    let world = spec.runtime.tensor_parallel as usize;
    let Some(rank) = crate::engine::collectives::this_rank().filter(|_| world > 1) else {
        return Ok(());
    };
    // The transport engine/collectives.rs picks: NCCL between GPUs, files between CPU ranks.
    let backend = if on_gpu { "nccl" } else { "file" };
    llmprof::measure::rank_trace::add_distributed_info(trace, backend, rank, world).with_context(
        || {
            format!(
                "adding rank {rank}'s distributedInfo to {}",
                trace.display()
            )
        },
    )
}
