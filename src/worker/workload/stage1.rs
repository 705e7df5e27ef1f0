//! Stage 1: warm-up, timed repeats per input (CUDA events at region boundaries, no host sync
//! per token), NVML sampling, one separate Kineto pass, then the artifacts (report.md,
//! metrics.json, operators.md, kernels.md, trace.json, nvml.csv, env.json, inputs.yaml, ...).
use super::inputs::Prepared;
use crate::models::deepseek_ocr::generate::{
    generate_with, GenerateConfig, GenerateOutput, NoRepeatNgram,
};
use crate::models::deepseek_ocr::PromptRow;
use super::setup::Workload;
use super::stage1_report as report;
use anyhow::{Context, Result};
use crate::measure::memory::{AllocatorPeaks, CudaAllocator, StagePeaks};
use llmprof::measure::nvml::unix_ns;
use crate::measure::nvtx::{NvtxObserver, NvtxOptions};
use crate::measure::timing::ClockKind;
use llmprof::region::{Region, RegionGuard, RegionObserver};
use llmprof::spec::RunSpec;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::Path;
use tch::Device;

/// One timed request: stage durations (ms, decode steps separately) and NVML windows.
pub struct Timed {
    pub input: usize,
    pub repeat: u32,
    pub stage_ms: BTreeMap<String, f64>,
    pub step_ms: Vec<f64>,
    pub output_tokens: usize,
    pub decode_steps: usize,
    /// Host unix-ns windows of prefill and decode (after a stage-boundary sync).
    pub windows: Vec<(String, u64, u64)>,
}

/// Adds host-side windows of the prefill and decode stages (for NVML alignment) around the
/// NVTX/timing observer. It syncs the stream once at each of those two boundaries only.
struct StageWindows<'a> {
    inner: &'a NvtxObserver,
    cuda: bool,
    marks: RefCell<Vec<(String, u64, u64)>>,
}

impl RegionObserver for StageWindows<'_> {
    fn enter(&self, region: Region) -> RegionGuard<'_> {
        let windowed = matches!(region, Region::Prefill | Region::Decode);
        if windowed && self.cuda {
            let _ = crate::ffi::cuda_stream_synchronize();
        }
        let start = unix_ns();
        let inner = self.inner.enter(region);
        RegionGuard::on_exit(move || {
            drop(inner);
            if windowed {
                if self.cuda {
                    let _ = crate::ffi::cuda_stream_synchronize();
                }
                self.marks
                    .borrow_mut()
                    .push((region.nvtx_name().to_string(), start, unix_ns()));
            }
        })
    }
}

pub fn generate_config(
    spec: &RunSpec,
    arch_exempt: &[i64],
    max_new_tokens: usize,
) -> GenerateConfig {
    let n = spec.infer.no_repeat_ngram_size as usize;
    GenerateConfig {
        max_new_tokens,
        no_repeat: match (n, spec.infer.ngram_window) {
            (0, _) => NoRepeatNgram::Off,
            (n, None) => NoRepeatNgram::Hf { n },
            (n, Some(w)) => NoRepeatNgram::Window {
                n,
                window: w as usize,
                exempt: arch_exempt.to_vec(),
            },
        },
        force_max_new_tokens: spec.infer.ignore_eos,
        eos_check_interval: spec.runtime.optim.eos_check_interval as usize,
        sync_free_decode: spec.runtime.optim.sync_free_decode,
    }
}

/// Run one batch through the model with the given observer.
pub fn run_batch(
    w: &Workload,
    batch: &[&Prepared],
    cfg: &GenerateConfig,
    obs: &dyn RegionObserver,
) -> Result<GenerateOutput> {
    let rows: Vec<PromptRow> = batch
        .iter()
        .map(|p| PromptRow {
            ids: &p.prompt_ids,
            image: Some(&p.image),
        })
        .collect();
    generate_with(&mut w.decode.borrow_mut(), &w.model, &rows, cfg, obs)
}

pub fn run(spec: &RunSpec, run_dir: &Path) -> Result<()> {
    let w = super::setup::build(spec)?;
    let pages = super::inputs::sample_pages(spec)?;
    let prepared = super::inputs::prepare_and_record(&w, spec, &pages, run_dir)?;
    let clock = ClockKind::detect();
    let cuda = w.device != Device::Cpu;
    let gen_cfg = generate_config(
        spec,
        &w.arch.tokens.ngram_exempt_token_ids,
        spec.infer.max_new_tokens as usize,
    );
    let batch_size = spec.runtime.batch_size as usize;
    let batches: Vec<Vec<&Prepared>> = prepared
        .chunks(batch_size)
        .map(|c| c.iter().collect())
        .collect();

    if cuda {
        let _ =
            crate::ffi::cuda_allocator_reset_peak(super::setup::device_index(w.device) as i32);
    }

    let sampler = spec.pipeline.nvml.enable.then(|| {
        llmprof::measure::nvml::NvmlSampler::start(
            super::setup::device_index(w.device) as u32,
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
    let mut timed = Vec::with_capacity(total);
    let mut done = 0;
    let allocator = CudaAllocator {
        device: super::setup::device_index(w.device) as i32,
    };
    let stage_peaks = RefCell::new(StagePeaks::default());
    for (bi, batch) in batches.iter().enumerate() {
        // Warm-up per input (independent of any profiler switch): every new shape triggers
        // kernel selection (cuBLAS/cuDNN heuristics) that must not land in the timed repeats.
        for i in 0..spec.runtime.warmup {
            tracing::debug!(
                "warm-up {}/{} for {}",
                i + 1,
                spec.runtime.warmup,
                batch[0].page.name
            );
            run_batch(&w, batch, &gen_cfg, &llmprof::region::NoopObserver)?;
        }
        for repeat in 0..spec.runtime.repeats {
            done += 1;
            let obs = NvtxObserver::new(NvtxOptions {
                sync_on_exit: false,
                kineto_scopes: false,
                timing: Some(clock),
                no_ranges: false,
            });
            let windows = StageWindows {
                inner: &obs,
                cuda,
                marks: RefCell::new(Vec::new()),
            };
            let out = if cuda {
                let mem = AllocatorPeaks {
                    inner: &windows,
                    probe: &allocator,
                    peaks: &stage_peaks,
                };
                run_batch(&w, batch, &gen_cfg, &mem)?
            } else {
                run_batch(&w, batch, &gen_cfg, &windows)?
            };
            let marks = windows.marks.into_inner();
            let times = obs.finish().context("reading stage timers")?;
            let mut stage_ms: BTreeMap<String, f64> = BTreeMap::new();
            let mut step_ms = Vec::new();
            for t in times {
                let ms = t.duration_ns as f64 / 1e6;
                if t.name == Region::DecodeStep.nvtx_name() {
                    step_ms.push(ms);
                } else {
                    *stage_ms.entry(t.name).or_default() += ms;
                }
            }
            let e2e = stage_ms.get("prefill").copied().unwrap_or(0.0)
                + stage_ms.get("decode").copied().unwrap_or(0.0);
            stage_ms.insert("e2e".into(), e2e);
            let output_tokens = out.tokens.iter().map(Vec::len).sum();
            progress.inc(1);
            progress.set_message(format!(
                "{} prefill {:.0} ms",
                batch[0].page.name,
                stage_ms.get("prefill").copied().unwrap_or(0.0)
            ));
            tracing::debug!(
                "[{done}/{total}] {} repeat {}: prefill {:.1} ms, {} tokens, decode {:.1} ms",
                batch[0].page.name,
                repeat + 1,
                stage_ms.get("prefill").copied().unwrap_or(0.0),
                output_tokens,
                stage_ms.get("decode").copied().unwrap_or(0.0)
            );
            timed.push(Timed {
                input: bi,
                repeat,
                stage_ms,
                step_ms,
                output_tokens,
                decode_steps: out.decode_steps,
                windows: marks,
            });
        }
    }
    progress.finish_and_clear();
    let nvml = sampler.map(|s| s.stop());
    write_nvml_csv(nvml.as_ref(), run_dir)?;
    let memory = cuda
        .then(|| {
            crate::ffi::cuda_allocator_stats(super::setup::device_index(w.device) as i32).ok()
        })
        .flatten()
        .map(|s| (s, stage_peaks.into_inner()));

    let kineto = if spec.pipeline.torch_profiler.enable {
        Some(super::kineto_pass::run(
            spec,
            &w,
            &batches[0],
            &gen_cfg,
            run_dir,
        )?)
    } else {
        None
    };
    if spec.pipeline.direct_inference.enable {
        tracing::info!(
            "direct inference pass (pipeline.direct_inference.enable): predictions.jsonl"
        );
        super::infer::write_predictions(spec, &w, &prepared, run_dir)?;
    }
    let ctx = report::Context {
        spec,
        workload: &w,
        prepared: &prepared,
        batches: &batches,
        timed: &timed,
        nvml: nvml.as_ref(),
        kineto: kineto.as_ref(),
        memory,
        clock,
        pages: &pages,
    };
    report::write_all(&ctx, run_dir)
}

/// nvml.csv is always written: the samples, or the header under a comment saying why there are
/// none (no NVIDIA driver, or the sampler disabled).
fn write_nvml_csv(trace: Option<&llmprof::measure::nvml::NvmlTrace>, run_dir: &Path) -> Result<()> {
    let path = run_dir.join("nvml.csv");
    match trace {
        Some(t) if t.unavailable.is_none() => t.write_csv(&path),
        Some(t) => {
            let why = t
                .unavailable
                .as_ref()
                .map(|u| u.reason.clone())
                .unwrap_or_default();
            std::fs::write(&path, format!("# NVML unavailable: {why}\n{}", t.to_csv()))
                .with_context(|| format!("writing {}", path.display()))
        }
        None => std::fs::write(
            &path,
            "# NVML sampling disabled (pipeline.nvml.enable=false)\n",
        )
        .with_context(|| format!("writing {}", path.display())),
    }
}
