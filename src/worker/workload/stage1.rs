//! Stage 1: warm-up, timed repeats per batch (CUDA events at region boundaries, no host sync per
//! token), NVML sampling, one separate Kineto pass; the measurements go to the front-end
//! library's report builder, which writes report.md, metrics.json and the other artifacts.
use super::inputs;
use crate::ffi;
use crate::measure::memory::CudaAllocator;
use crate::measure::nvtx::{NvtxObserver, NvtxOptions};
use crate::measure::timing::ClockKind;
use crate::models::{with_model, ModelJob};
use anyhow::{Context, Result};
use llmprof::dataset::BatchPlan;
use llmprof::measure::gpu::GpuProps;
use llmprof::measure::memory::{AllocatorPeaks, RegionPeak, StagePeaks};
use llmprof::measure::nvml::{nvml_index_for_cuda, query_gpu, unix_ns, NvmlSampler};
use llmprof::model::Model;
use llmprof::region::{Module, Region, RegionGuard, RegionObserver, DECODE, DECODE_STEP, PREFILL};
use llmprof::report::artifacts::{self, Stage1Files};
use llmprof::report::measurements::{MemorySummary, Stage1Measurements, TimedRequest};
use llmprof::report::stage1::E2E;
use llmprof::spec::RunSpec;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::Path;

/// Adds host-side windows of the prefill and decode stages (for NVML alignment) around the
/// NVTX/timing observer. It syncs the stream once at each of those two boundaries only.
struct StageWindows<'a> {
    inner: &'a NvtxObserver,
    cuda: bool,
    marks: RefCell<Vec<(String, u64, u64)>>,
}

impl RegionObserver for StageWindows<'_> {
    fn enter(&self, region: Region) -> RegionGuard<'_> {
        let windowed = region == PREFILL || region == DECODE;
        if windowed && self.cuda {
            let _ = ffi::cuda_stream_synchronize();
        }
        let start = unix_ns();
        let inner = self.inner.enter(region);
        RegionGuard::on_exit(move || {
            drop(inner);
            if windowed {
                if self.cuda {
                    let _ = ffi::cuda_stream_synchronize();
                }
                self.marks
                    .borrow_mut()
                    .push((region.nvtx_name().to_string(), start, unix_ns()));
            }
        })
    }

    fn enter_overlapped(&self, region: Region) -> RegionGuard<'_> {
        self.inner.enter_overlapped(region)
    }

    fn enter_module(&self, module: Module, index: Option<u32>) -> RegionGuard<'_> {
        self.inner.enter_module(module, index)
    }
}

/// Stage 1 on the model `spec` names.
pub fn run(spec: &RunSpec, run_dir: &Path) -> Result<()> {
    with_model(spec, Stage1 { spec, run_dir })
}

struct Stage1<'a> {
    spec: &'a RunSpec,
    run_dir: &'a Path,
}

impl ModelJob for Stage1<'_> {
    type Output = ();
    fn run<M: Model>(self, model: &M) -> Result<()> {
        run_on(model, self.spec, self.run_dir)
    }
}

/// Times of one timed request, in ms: regions (summed over repeats of a region, `e2e` added),
/// each decode step's forward time, and when each token was emitted (prefill's end for the
/// first, each decode step's end for the others), from the request's start.
struct RequestTimes {
    regions: BTreeMap<String, f64>,
    steps: Vec<f64>,
    tokens: Vec<f64>,
}

fn split_times(times: Vec<crate::measure::timing::StageTime>) -> RequestTimes {
    let mut regions: BTreeMap<String, f64> = BTreeMap::new();
    let mut steps = Vec::new();
    let mut tokens = Vec::new();
    for t in times {
        let ms = t.duration_ns as f64 / 1e6;
        if t.name == DECODE_STEP.nvtx_name() {
            steps.push(ms);
            tokens.push(t.end_ns as f64 / 1e6);
        } else {
            if t.name == PREFILL.nvtx_name() {
                tokens.insert(0, t.end_ns as f64 / 1e6);
            }
            *regions.entry(t.name).or_default() += ms;
        }
    }
    let get = |r: Region| regions.get(r.nvtx_name()).copied().unwrap_or(0.0);
    let e2e = get(PREFILL) + get(DECODE);
    regions.insert(E2E.into(), e2e);
    RequestTimes {
        regions,
        steps,
        tokens,
    }
}

fn run_on<M: Model>(model: &M, spec: &RunSpec, run_dir: &Path) -> Result<()> {
    let info = model.info();
    let (items, mut input_notes) = inputs::items(spec)?;
    let batch_size = spec.runtime.batch_size as usize;
    // Every batch runs `runtime.batch_size` rows, filled by cycling the inputs when too few
    // were sampled, so that the batch a report names is the batch that ran.
    let plan = BatchPlan::new(items.len(), batch_size);
    if let Some(note) = plan.fill_note() {
        tracing::warn!("{note}");
        input_notes.push(note);
    }
    let prepared = inputs::prepare_and_record(model, spec, &items, run_dir, Some(&plan))?;
    let clock = ClockKind::detect();
    let cuda = info.cuda_device;
    let gen_cfg =
        spec.generate_config(model.ngram_exempt_ids(), spec.infer.max_new_tokens as usize);
    let batches: Vec<Vec<&M::Request>> = plan.gather(&prepared);
    let allocator = CudaAllocator {
        device: cuda.unwrap_or(0) as i32,
    };
    if cuda.is_some() {
        let _ = ffi::cuda_allocator_reset_peak(allocator.device);
    }
    let sampler = spec.pipeline.nvml.enable.then(|| {
        NvmlSampler::start(
            nvml_index_for_cuda(cuda.unwrap_or(0) as u32),
            std::time::Duration::from_millis(spec.pipeline.nvml.interval_ms as u64),
        )
    });
    let total = batches.len() * spec.runtime.repeats as usize;
    let progress = indicatif::ProgressBar::new(total as u64).with_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} stage1 [{bar:30}] {pos}/{len} requests {msg}",
        )
        .expect("static template is valid")
        .progress_chars("=> "),
    );
    let mut requests = Vec::with_capacity(total);
    let stage_peaks = RefCell::new(StagePeaks::default());
    for (bi, batch) in batches.iter().enumerate() {
        let rows: Vec<_> = batch.iter().map(|r| model.describe(r)).collect();
        // Text datasets may ask each row for its own output length: the batch runs to the
        // longest and each row keeps its own.
        let gen_cfg = gen_cfg.for_batch(&rows);
        // Warm-up per input (independent of any profiler switch): every new shape triggers
        // kernel selection (cuBLAS/cuDNN heuristics) that must not land in the timed repeats.
        for i in 0..spec.runtime.warmup {
            tracing::debug!(
                "warm-up {}/{} for {}",
                i + 1,
                spec.runtime.warmup,
                rows[0].name
            );
            model.generate(batch, &gen_cfg, &llmprof::region::NoopObserver)?;
            crate::heartbeat::mark(&format!("warm-up {} of input {}", i + 1, bi + 1));
        }
        for repeat in 0..spec.runtime.repeats {
            let obs = NvtxObserver::new(NvtxOptions {
                sync_on_exit: false,
                kineto_scopes: false,
                timing: Some(clock),
                no_ranges: false,
                modules: false,
            });
            let windows = StageWindows {
                inner: &obs,
                cuda: cuda.is_some(),
                marks: RefCell::new(Vec::new()),
            };
            let mut out = if cuda.is_some() {
                let mem = AllocatorPeaks {
                    inner: &windows,
                    probe: &allocator,
                    peaks: &stage_peaks,
                };
                model.generate(batch, &gen_cfg, &mem)?
            } else {
                model.generate(batch, &gen_cfg, &windows)?
            };
            let marks = windows.marks.into_inner();
            let times = split_times(obs.finish().context("reading stage timers")?);
            let (region_ms, step_ms) = (times.regions, times.steps);
            out.cap_rows(&rows);
            let row_output_tokens: Vec<usize> = out.tokens.iter().map(Vec::len).collect();
            let output_tokens = row_output_tokens.iter().sum();
            let prefill_ms = region_ms.get(PREFILL.nvtx_name()).copied().unwrap_or(0.0);
            progress.inc(1);
            crate::heartbeat::mark(&format!("request {} of {total}", progress.position()));
            progress.set_message(format!("{} prefill {prefill_ms:.0} ms", rows[0].name));
            tracing::debug!(
                "{} repeat {}: prefill {prefill_ms:.1} ms, {output_tokens} tokens",
                rows[0].name,
                repeat + 1
            );
            requests.push(TimedRequest {
                batch_index: bi,
                repeat,
                rows: rows.clone(),
                region_ms,
                step_ms,
                token_ms: times.tokens,
                output_tokens,
                row_output_tokens,
                decode_steps: out.decode_steps,
                windows: marks,
                work: model.work(batch, out.decode_steps),
            });
        }
    }
    progress.finish_and_clear();
    let nvml = sampler.map(|s| s.stop());
    artifacts::write_nvml_csv(run_dir, nvml.as_ref())?;
    let memory = cuda
        .and_then(|i| ffi::cuda_allocator_stats(i as i32).ok())
        .map(|s| {
            let peaks = stage_peaks.into_inner();
            MemorySummary {
                counters: RegionPeak {
                    allocated_bytes: s.allocated_bytes_peak,
                    reserved_bytes: s.reserved_bytes_peak,
                },
                overall: peaks.overall,
                regions: peaks.regions,
            }
        });
    let kineto = if spec.pipeline.torch_profiler.enable {
        crate::heartbeat::mark("the profiled pass");
        Some(super::kineto_pass::run(
            model,
            spec,
            &batches[0],
            &gen_cfg.for_batch(
                &batches[0]
                    .iter()
                    .map(|r| model.describe(r))
                    .collect::<Vec<_>>(),
            ),
            run_dir,
        )?)
    } else {
        None
    };
    crate::heartbeat::mark("after the measured passes");
    if spec.pipeline.direct_inference.enable {
        tracing::info!(
            "direct inference pass (pipeline.direct_inference.enable): predictions.jsonl"
        );
        super::infer::write_predictions(model, spec, &prepared, run_dir)?;
    }
    let mut model_info = info.clone();
    model_info.notes.extend(input_notes);
    let measurements = Stage1Measurements {
        model: model_info,
        clock: format!("{clock:?}"),
        inputs: items.len(),
        requests,
        nvml,
        kineto,
        memory,
        gpu: gpu_props(cuda),
        graphs: model.graph_stats(),
        model_assumptions: model.assumptions(),
    };
    let static_analysis = if spec.pipeline.static_analysis.enable {
        Some(model.static_analysis(&prepared[0], batch_size, spec.infer.max_new_tokens as usize)?)
    } else {
        None
    };
    // The front end builds metrics.json and the reports from these files once the worker exits
    // (and again with `llmprof report DIR`).
    artifacts::write_stage1_measurements(
        run_dir,
        &Stage1Files {
            measurements: &measurements,
            runtime_env: runtime_env(),
            static_analysis: static_analysis.as_ref(),
        },
    )?;
    // A rank that stops after this mark hangs while its model (graphs, collectives) is released.
    crate::heartbeat::mark("measurements written, releasing the model");
    Ok(())
}

/// NVML's properties of the run's GPU with the SM count from the CUDA runtime, or why not.
fn gpu_props(cuda: Option<usize>) -> Result<GpuProps, String> {
    let index = cuda.ok_or("no GPU")?;
    let mut props = query_gpu(nvml_index_for_cuda(index as u32)).map_err(|u| u.reason)?;
    props.sm_count = ffi::cuda_sm_count(index as i32).ok();
    props.cuda_clock_rate_mhz = ffi::cuda_clock_rate_mhz(index as i32).ok();
    Ok(props)
}

/// What env.json records of the worker's own runtime: versions read from the loaded libtorch,
/// CUDA runtime, driver and cuDNN (null where a library cannot say, e.g. no driver).
fn runtime_env() -> serde_json::Value {
    let v = ffi::versions::RuntimeVersions::read();
    serde_json::json!({
        "torch": v.torch,
        "torch_commit": v.torch_commit,
        "torch_built_with": {
            "cuda": v.torch_built_with_cuda,
            "cudnn": v.torch_built_with_cudnn,
        },
        "cuda_runtime": v.cuda_runtime,
        "cuda_driver": v.cuda_driver,
        "cudnn": v.cudnn,
        "cuda_device_count": v.cuda_device_count,
        "libtorch_lib": env!("LLMPROF_LIBTORCH_LIB"),
        "cuda_available": tch::Cuda::is_available(),
        "cudnn_available": tch::Cuda::cudnn_is_available(),
    })
}
