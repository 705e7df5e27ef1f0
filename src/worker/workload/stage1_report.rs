//! Turns stage-1 measurements into a `RunReport` (statistics, throughput, peaks, MFU/MBU, NVML
//! windows, Kineto summary) and writes every artifact of the run directory.
use super::inputs::{InputPage, Prepared};
use super::kineto_pass::KinetoResult;
use crate::models::deepseek_ocr::{analytic, analytic_report};
use super::setup::Workload;
use super::stage1::Timed;
use anyhow::{Context as _, Result};
use crate::measure::memory::StagePeaks;
use llmprof::measure::nvml::NvmlTrace;
use llmprof::measure::stats::Summary;
use crate::measure::timing::ClockKind;
use llmprof::report::*;
use llmprof::spec::RunSpec;
use std::collections::BTreeMap;
use std::path::Path;
use tch::{Device, Kind};

pub struct Context<'a> {
    pub spec: &'a RunSpec,
    pub workload: &'a Workload,
    pub prepared: &'a [Prepared],
    pub batches: &'a [Vec<&'a Prepared>],
    pub timed: &'a [Timed],
    pub nvml: Option<&'a NvmlTrace>,
    pub kineto: Option<&'a KinetoResult>,
    /// Allocator statistics at the end, and the peaks per region of the timed requests.
    pub memory: Option<(crate::ffi::AllocatorStats, StagePeaks)>,
    pub clock: ClockKind,
    pub pages: &'a [InputPage],
}

fn stats(values: &[f64]) -> Option<StageStats> {
    Summary::from_samples(values)
        .ok()
        .map(|s| StageStats::from(&s))
}

/// GPU properties (NVML + CUDA SM count) and the peaks derived from them, with overrides.
fn peaks(
    ctx: &Context,
) -> (
    Option<PeaksInfo>,
    Option<String>,
    Option<llmprof::measure::nvml::GpuProps>,
) {
    let w = ctx.workload;
    let hw = &ctx.spec.hardware;
    if w.device == Device::Cpu {
        return (
            None,
            Some("no GPU: MFU/MBU need a GPU's peak FLOP/s and bandwidth".into()),
            None,
        );
    }
    let idx = super::setup::device_index(w.device);
    let props = match llmprof::measure::nvml::GpuProps::query(idx as u32) {
        Ok(p) => p,
        Err(e) => {
            if let (Some(t), Some(b)) = (hw.peak_tflops, hw.peak_bandwidth_gbs) {
                let info = PeaksInfo {
                    gpu_name: "unknown (NVML unavailable)".into(),
                    precision: precision(w.kind).into(),
                    peak_tflops: t,
                    peak_bandwidth_gbs: b,
                    source: "hardware.peak_tflops / hardware.peak_bandwidth_gbs overrides".into(),
                };
                return (Some(info), None, None);
            }
            return (
                None,
                Some(format!(
                    "{e}; set hardware.peak_tflops and hardware.peak_bandwidth_gbs"
                )),
                None,
            );
        }
    };
    let mut props_sm = props.clone();
    props_sm.sm_count = crate::ffi::cuda_sm_count(idx as i32).ok();
    let derived = (|| -> Result<llmprof::measure::peaks::Peaks, String> {
        let (major, minor) = props_sm
            .compute_capability
            .ok_or("NVML gave no compute capability")?;
        let p = llmprof::measure::peaks::GpuProps {
            name: props_sm.name.clone(),
            cc_major: major as u32,
            cc_minor: minor as u32,
            sm_count: props_sm.sm_count.ok_or("CUDA gave no SM count")?,
            max_sm_clock_mhz: props_sm
                .max_sm_clock_mhz
                .ok_or("NVML gave no max SM clock")? as f64,
            max_mem_clock_mhz: props_sm
                .max_mem_clock_mhz
                .ok_or("NVML gave no max memory clock")? as f64,
            mem_bus_width_bits: props_sm
                .memory_bus_width_bits
                .ok_or("NVML gave no bus width")?,
        };
        llmprof::measure::peaks::derive(&p).map_err(|e| e.to_string())
    })();
    let (flops, bw, source) = match &derived {
        Ok(p) => {
            let f = match w.kind {
                Kind::BFloat16 => p.bf16_flops_per_s.unwrap_or(p.fp16_flops_per_s),
                Kind::Half => p.fp16_flops_per_s,
                _ => p.fp32_flops_per_s,
            };
            (
                Some(f / 1e12),
                Some(p.dram_bytes_per_s / 1e9),
                format!(
                    "derived from {} SMs at {:.0} MHz and the memory clock/bus width NVML reports ({})",
                    props_sm.sm_count.unwrap_or(0),
                    p.sm_clock_mhz,
                    p.source
                ),
            )
        }
        Err(e) => (None, None, format!("not derived: {e}")),
    };
    let t = hw.peak_tflops.or(flops);
    let b = hw.peak_bandwidth_gbs.or(bw);
    let source = if hw.peak_tflops.is_some() || hw.peak_bandwidth_gbs.is_some() {
        format!("{source}; overridden by hardware.peak_*")
    } else {
        source
    };
    match (t, b) {
        (Some(t), Some(b)) => (
            Some(PeaksInfo {
                gpu_name: props_sm.name.clone(),
                precision: precision(w.kind).into(),
                peak_tflops: t,
                peak_bandwidth_gbs: b,
                source,
            }),
            None,
            Some(props_sm),
        ),
        _ => (None, Some(source), Some(props_sm)),
    }
}

fn precision(k: Kind) -> &'static str {
    match k {
        Kind::BFloat16 => "bf16",
        Kind::Half => "fp16",
        _ => "fp32",
    }
}

/// Analytic FLOPs of one batch: vision, prefill (vision included, logits of the last position
/// only) and each of `decode_steps` steps at its context length.
struct BatchFlops {
    prompt: usize,
    vision: f64,
    prefill: f64,
    steps: Vec<f64>,
}

fn batch_flops(w: &Workload, batch: &[&Prepared], decode_steps: usize) -> BatchFlops {
    let rows = batch.len() as f64;
    let vision: f64 = batch
        .iter()
        .map(|p| analytic::encoder_flops(&w.arch, &w.preprocess, p.image.grid).total())
        .sum();
    let prompt = batch.iter().map(|p| p.prompt_ids.len()).max().unwrap_or(0);
    let prefill = vision + rows * analytic::prefill_flops(&w.arch, prompt as i64, 1).total();
    let steps = (0..decode_steps)
        .map(|s| rows * analytic::decode_step_flops(&w.arch, (prompt + s + 1) as i64).total())
        .collect();
    BatchFlops {
        prompt,
        vision,
        prefill,
        steps,
    }
}

pub fn build_report(
    ctx: &Context,
) -> Result<(RunReport, Option<llmprof::measure::nvml::GpuProps>)> {
    let spec = ctx.spec;
    let w = ctx.workload;
    let mut notes = w.notes.clone();
    let mut per_stage: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for t in ctx.timed {
        for (k, v) in &t.stage_ms {
            per_stage.entry(k.clone()).or_default().push(*v);
        }
        per_stage
            .entry("decode_step".into())
            .or_default()
            .extend(&t.step_ms);
    }
    let stages: BTreeMap<String, StageStats> = per_stage
        .iter()
        .filter_map(|(k, v)| stats(v).map(|s| (k.clone(), s)))
        .collect();
    // Variability is judged between repeats of the same input (different pages legitimately
    // differ: other crop grids, other prompt lengths).
    let cv_within_input = within_input_cv(ctx);
    for (k, worst) in cv_within_input.clone() {
        if worst > 0.10 {
            let msg = format!("{k}: coefficient of variation between repeats of one input reaches {:.1} % (> 10 %): timings are noisy (more repeats, fixed clocks, an idle GPU help)", worst * 100.0);
            tracing::warn!("{msg}");
            notes.push(msg);
        }
    }
    let rows_of = |t: &Timed| ctx.batches[t.input].len();
    let output_tokens_total: u64 = ctx.timed.iter().map(|t| t.output_tokens as u64).sum();
    let e2e_total_ms: f64 = ctx
        .timed
        .iter()
        .map(|t| t.stage_ms.get("e2e").copied().unwrap_or(0.0))
        .sum();
    let per_request: Vec<f64> = ctx
        .timed
        .iter()
        .filter_map(|t| {
            let e = t.stage_ms.get("e2e").copied()?;
            (e > 0.0).then(|| t.output_tokens as f64 / rows_of(t) as f64 / (e / 1e3))
        })
        .collect();
    let throughput = Throughput {
        output_tokens_total,
        tokens_per_s_per_request_mean: (!per_request.is_empty())
            .then(|| per_request.iter().sum::<f64>() / per_request.len() as f64),
        tokens_per_s_aggregate: (e2e_total_ms > 0.0)
            .then(|| output_tokens_total as f64 / (e2e_total_ms / 1e3)),
        decode_tokens_per_s: stages.get("decode_step").map(|s| 1000.0 / s.mean_ms),
    };

    // Analytic work per timed request (mean), from the actual inputs and context lengths.
    let dtype_bytes: u64 = if w.kind == Kind::Float { 4 } else { 2 };
    let mut vision_f = Vec::new();
    let mut prefill_f = Vec::new();
    let mut step_f = Vec::new();
    let mut step_b = Vec::new();
    for t in ctx.timed {
        let batch = &ctx.batches[t.input];
        let f = batch_flops(w, batch, t.decode_steps);
        vision_f.push(f.vision);
        prefill_f.push(f.prefill);
        step_f.extend(&f.steps);
        for s in 0..t.decode_steps {
            let c = f.prompt + s + 1;
            step_b.push(
                analytic::decode_step_bytes(&w.arch, c as i64, batch.len() as i64, dtype_bytes)
                    .total(),
            );
        }
    }
    let mean = |v: &[f64]| {
        if v.is_empty() {
            0.0
        } else {
            v.iter().sum::<f64>() / v.len() as f64
        }
    };
    let steps_mean = mean(
        &ctx.timed
            .iter()
            .map(|t| t.decode_steps as f64)
            .collect::<Vec<_>>(),
    );
    let flops = FlopsInfo {
        vision_gflop: mean(&vision_f) / 1e9,
        prefill_gflop: mean(&prefill_f) / 1e9,
        decode_step_gflop_mean: mean(&step_f) / 1e9,
        decode_step_bytes_mean: mean(&step_b),
        e2e_gflop: (mean(&prefill_f) + mean(&step_f) * steps_mean) / 1e9,
        kineto_matmul_ratio: None,
    };
    let (peaks, peaks_missing, gpu_props) = peaks(ctx);
    let mut utilisation = Utilisation::default();
    match &peaks {
        Some(p) => {
            let peak = p.peak_tflops * 1e12;
            let mut put = |k: &str, gflop: f64, stage: &str| {
                if let Some(s) = stages.get(stage) {
                    if s.mean_ms > 0.0 {
                        utilisation
                            .mfu
                            .insert(k.into(), gflop * 1e9 / (s.mean_ms / 1e3) / peak);
                    }
                }
            };
            put("vision", flops.vision_gflop, "vision");
            put("prefill", flops.prefill_gflop, "prefill");
            put("decode_step", flops.decode_step_gflop_mean, "decode_step");
            put("e2e", flops.e2e_gflop, "e2e");
            if let Some(s) = stages.get("decode_step") {
                utilisation.mbu_decode = Some(
                    flops.decode_step_bytes_mean / (s.mean_ms / 1e3) / (p.peak_bandwidth_gbs * 1e9),
                );
            }
        }
        None => utilisation.unavailable = peaks_missing.clone(),
    }
    let nvml = nvml_info(ctx, output_tokens_total);
    let kineto = ctx.kineto.map(|k| {
        let prefill = stages.get("prefill").map(|s| s.mean_ms).unwrap_or(0.0);
        let tpot = stages.get("decode_step").map(|s| s.mean_ms).unwrap_or(0.0);
        let comparable = prefill + tpot * k.decode_steps as f64;
        let profiled = k.prefill_ms + k.decode_ms;
        let gpu_total: u64 = k.kernels.iter().map(|r| r.total_ns).sum();
        KinetoInfo {
            profiled_e2e_ms: profiled,
            timed_e2e_mean_ms: comparable,
            overhead_pct: if comparable > 0.0 {
                (profiled / comparable - 1.0) * 100.0
            } else {
                0.0
            },
            decode_steps_profiled: k.decode_steps,
            events: k.events,
            top_operators: k
                .operators
                .iter()
                .take(10)
                .map(|o| TopRow {
                    name: o.name.clone(),
                    stage: None,
                    calls: o.calls,
                    total_ms: if o.self_cuda_ns > 0 {
                        o.self_cuda_ns as f64 / 1e6
                    } else {
                        o.self_cpu_ns as f64 / 1e6
                    },
                    share_pct: None,
                })
                .collect(),
            top_kernels: {
                let mut ks: Vec<_> = k.kernels.iter().collect();
                ks.sort_by_key(|r| std::cmp::Reverse(r.total_ns));
                ks.iter()
                    .take(10)
                    .map(|r| TopRow {
                        name: r.name.clone(),
                        stage: r.stage.clone(),
                        calls: r.calls,
                        total_ms: r.total_ns as f64 / 1e6,
                        share_pct: (gpu_total > 0).then_some(r.share_of_gpu * 100.0),
                    })
                    .collect()
            },
        }
    });
    let mut kineto_ratio = None;
    if let Some(k) = ctx.kineto {
        if k.kineto_flops > 0 {
            let f = batch_flops(w, &ctx.batches[0], k.decode_steps);
            let analytic_mm = f.prefill + f.steps.iter().sum::<f64>();
            let ratio = k.kineto_flops as f64 / analytic_mm;
            kineto_ratio = Some(ratio);
            notes.push(format!(
                "Kineto counted {:.1} GFLOP in the profiled pass against {:.1} GFLOP analytic (ratio {ratio:.3}); Kineto only counts ops it has formulas for (mm/addmm/bmm/conv): attention through SDPA and grouped expert GEMMs (_grouped_mm, runtime.optim.grouped_moe) are not counted",
                k.kineto_flops as f64 / 1e9,
                analytic_mm / 1e9
            ));
        }
    }
    let gib = |b: i64| b as f64 / (1u64 << 30) as f64;
    let memory = ctx.memory.as_ref().map(|(m, stages)| MemoryInfo {
        // Region boundaries reset the allocator's peak: the overall peak is the larger of what
        // they saw and what the counters hold now.
        peak_allocated_gib: gib(m.allocated_bytes_peak.max(stages.overall.allocated_bytes)),
        peak_reserved_gib: gib(m.reserved_bytes_peak.max(stages.overall.reserved_bytes)),
        stages: stages
            .regions
            .iter()
            .map(|(name, p)| {
                (
                    name.clone(),
                    MemoryPeak {
                        peak_allocated_gib: gib(p.allocated_bytes),
                        peak_reserved_gib: gib(p.reserved_bytes),
                    },
                )
            })
            .collect(),
    });
    let decode = w.decode.borrow();
    let optim = OptimInfo {
        switches: spec.runtime.optim.clone(),
        graphs: decode.captures_graphs().then(|| decode.stats.clone()),
    };
    let requests = ctx
        .timed
        .iter()
        .map(|t| {
            let b = &ctx.batches[t.input];
            RequestRecord {
                input: b
                    .iter()
                    .map(|p| p.page.name.clone())
                    .collect::<Vec<_>>()
                    .join("+"),
                repeat: t.repeat,
                batch_rows: b.len(),
                prompt_tokens: b.iter().map(|p| p.prompt_ids.len()).max().unwrap_or(0),
                output_tokens: t.output_tokens,
                image_tokens: b.iter().map(|p| p.image_tokens).sum(),
                crop_grid: [b[0].image.grid.cols, b[0].image.grid.rows],
                stage_ms: t.stage_ms.clone(),
                decode_steps: t.decode_steps,
            }
        })
        .collect();
    let mut report = RunReport {
        schema: SCHEMA.into(),
        command: "stage1".into(),
        llmprof_version: llmprof::VERSION.into(),
        synthetic_weights: w.synthetic,
        notes,
        setup: Setup {
            model: w.model_name.clone(),
            device: format!("{:?}", w.device),
            dtype: precision(w.kind).into(),
            gpu: gpu_props.as_ref().map(|g| g.name.clone()),
            mode: spec.model.preprocess.mode.name().into(),
            batch_size: spec.runtime.batch_size,
            warmup: spec.runtime.warmup,
            repeats: spec.runtime.repeats,
            max_new_tokens: spec.infer.max_new_tokens,
            ignore_eos: spec.infer.ignore_eos,
            inputs: ctx.pages.len(),
            clock: format!("{:?}", ctx.clock),
            load_ms: w.load_ms,
        },
        stages,
        cv_within_input,
        throughput,
        peaks,
        flops: Some(FlopsInfo {
            kineto_matmul_ratio: kineto_ratio,
            ..flops
        }),
        utilisation,
        nvml,
        kineto,
        memory,
        optim,
        requests,
    };
    if report.synthetic_weights && !report.notes.iter().any(|n| n == SYNTHETIC_NOTE) {
        report.notes.insert(0, SYNTHETIC_NOTE.into());
    }
    Ok((report, gpu_props))
}

/// Per stage, the largest CV over inputs, each computed over that input's repeats.
fn within_input_cv(ctx: &Context) -> BTreeMap<String, f64> {
    let mut by: BTreeMap<(String, usize), Vec<f64>> = BTreeMap::new();
    for t in ctx.timed {
        for (k, v) in &t.stage_ms {
            by.entry((k.clone(), t.input)).or_default().push(*v);
        }
        by.entry(("decode_step".into(), t.input))
            .or_default()
            .extend(&t.step_ms);
    }
    let mut worst: BTreeMap<String, f64> = BTreeMap::new();
    for ((k, _), v) in by {
        if let Some(cv) = Summary::from_samples(&v).ok().and_then(|s| s.cv) {
            let e = worst.entry(k).or_insert(0.0);
            *e = e.max(cv);
        }
    }
    worst
}

fn nvml_info(ctx: &Context, output_tokens: u64) -> NvmlInfo {
    let Some(trace) = ctx.nvml else {
        return NvmlInfo {
            available: false,
            note: Some("disabled (pipeline.nvml.enable=false)".into()),
            samples: 0,
            windows: BTreeMap::new(),
            energy_j_total: None,
            energy_j_per_output_token: None,
        };
    };
    if let Some(u) = &trace.unavailable {
        return NvmlInfo {
            available: false,
            note: Some(u.reason.clone()),
            samples: 0,
            windows: BTreeMap::new(),
            energy_j_total: None,
            energy_j_per_output_token: None,
        };
    }
    let mut windows = BTreeMap::new();
    let mut energy_total = 0.0;
    let mut energy_known = false;
    for name in ["prefill", "decode"] {
        let spans: Vec<(u64, u64)> = ctx
            .timed
            .iter()
            .flat_map(|t| t.windows.iter().filter(|w| w.0 == name).map(|w| (w.1, w.2)))
            .collect();
        let means = trace.window_means(&spans);
        let weight: Vec<f64> = spans.iter().map(|(a, b)| (b - a) as f64).collect();
        let total_w: f64 = weight.iter().sum();
        let avg = |f: &dyn Fn(&llmprof::measure::nvml::WindowMean) -> Option<f64>| -> Option<f64> {
            let mut acc = 0.0;
            let mut wsum = 0.0;
            for (m, wt) in means.iter().zip(&weight) {
                if let Some(v) = f(m) {
                    acc += v * wt;
                    wsum += wt;
                }
            }
            (wsum > 0.0 && total_w > 0.0).then(|| acc / wsum)
        };
        let energy: Option<f64> = {
            let e: Vec<f64> = means.iter().filter_map(|m| m.energy_j).collect();
            (!e.is_empty()).then(|| e.iter().sum())
        };
        if let Some(e) = energy {
            energy_total += e;
            energy_known = true;
        }
        windows.insert(
            name.to_string(),
            NvmlWindow {
                power_w: avg(&|m| m.power_w),
                sm_clock_mhz: avg(&|m| m.sm_clock_mhz),
                mem_clock_mhz: avg(&|m| m.mem_clock_mhz),
                gpu_util_pct: avg(&|m| m.gpu_util_pct),
                mem_util_pct: avg(&|m| m.mem_util_pct),
                mem_used_gib: avg(&|m| m.mem_used_bytes).map(|b| b / (1u64 << 30) as f64),
                temperature_c: avg(&|m| m.temperature_c),
                energy_j: energy,
                throttle_reasons: means
                    .iter()
                    .filter_map(|m| m.throttle_reasons)
                    .reduce(|a, b| a | b),
            },
        );
    }
    NvmlInfo {
        available: true,
        note: None,
        samples: trace.samples.len(),
        windows,
        energy_j_total: energy_known.then_some(energy_total),
        energy_j_per_output_token: (energy_known && output_tokens > 0)
            .then(|| energy_total / output_tokens as f64),
    }
}

fn env_json(ctx: &Context, gpu: Option<&llmprof::measure::nvml::GpuProps>) -> serde_json::Value {
    serde_json::json!({
        "llmprof_version": llmprof::VERSION,
        "git_commit": llmprof::GIT_COMMIT,
        "torch": "2.11.0 (libtorch via tch 0.24)",
        "libtorch_lib": env!("LLMPROF_LIBTORCH_LIB"),
        "cuda_available": tch::Cuda::is_available(),
        "cudnn_available": tch::Cuda::cudnn_is_available(),
        "device": format!("{:?}", ctx.workload.device),
        "gpu": gpu.map(|g| serde_json::json!({
            "name": g.name, "architecture": g.architecture, "compute_capability": g.compute_capability,
            "sm_count": g.sm_count, "max_sm_clock_mhz": g.max_sm_clock_mhz, "max_mem_clock_mhz": g.max_mem_clock_mhz,
            "memory_bus_width_bits": g.memory_bus_width_bits, "memory_total_bytes": g.memory_total_bytes,
            "power_limit_mw": g.power_limit_mw, "driver_version": g.driver_version,
        })),
        "host": {
            "hostname": std::fs::read_to_string("/etc/hostname").map(|s| s.trim().to_string()).unwrap_or_default(),
            "cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
            "os": std::env::consts::OS,
            "arch": std::env::consts::ARCH,
        },
        "time": chrono::Local::now().to_rfc3339(),
    })
}

fn assumptions_md(ctx: &Context) -> String {
    format!(
        "# Assumptions\n\n\
- FLOP = 2 × multiply-accumulate everywhere; analytic counts follow docs/deepseek-ocr.md §7 and are computed from the run's architecture, crop grids, prompt lengths and the context length of every decode step.\n\
- Prefill computes logits for the last prompt position only (lm_head counted once per row).\n\
- Decode bytes per step = non-expert weights + the expected number of distinct routed experts for the batch (E·(1−((E−k)/E)^B), uniform routing) + KV cache read and written; activations are not counted.\n\
- MFU = analytic FLOPs ÷ (mean stage time × peak dense FLOP/s of the run's precision); MBU = decode bytes per step ÷ mean step time ÷ peak DRAM bandwidth. Peaks come from the detected GPU (NVML/CUDA properties × the per-architecture table in src/llmprof/measure/peaks.rs) unless hardware.peak_* override them.\n\
- Stage times: CUDA events (clock {:?}) at region boundaries, read after one synchronisation per request; decode steps are timed by events without host syncs. Prefill = time to first token, vision included.\n\
- NVML windows: the prefill and decode stages are bracketed by one stream synchronisation each, and the sampler's rows falling inside are averaged; energy comes from the total-energy counter.\n\
- The Kineto pass is a separate run of the first batch with decode capped at {} steps; its times are reported only as tables and overhead.\n\
- Weights: {}.\n",
        ctx.clock,
        ctx.spec.pipeline.torch_profiler.max_decode_steps,
        if ctx.workload.synthetic { SYNTHETIC_NOTE } else { "loaded from safetensors" },
    )
}

pub fn write_all(ctx: &Context, run_dir: &Path) -> Result<()> {
    let (report, gpu) = build_report(ctx)?;
    let write = |name: &str, text: String| -> Result<()> {
        let p = run_dir.join(name);
        std::fs::write(&p, text).with_context(|| format!("writing {}", p.display()))
    };
    write(
        "metrics.json",
        serde_json::to_string_pretty(&report)? + "\n",
    )?;
    write("report.md", llmprof::report::markdown::render(&report))?;
    write(
        "stakeholder_summary.md",
        llmprof::report::summary::render(&report),
    )?;
    write(
        "env.json",
        serde_json::to_string_pretty(&env_json(ctx, gpu.as_ref()))? + "\n",
    )?;
    write("assumptions.md", assumptions_md(ctx))?;
    if ctx.spec.pipeline.static_analysis.enable {
        let first = &ctx.prepared[0];
        let prompt_len = first.prompt_ids.len() as i64;
        let inputs = analytic_report::StaticInputs {
            preprocess: ctx.workload.preprocess.clone(),
            grid: first.image.grid,
            prompt_len,
            logits_positions: 1,
            decode_context_len: prompt_len + ctx.spec.infer.max_new_tokens as i64,
            batch: ctx.spec.runtime.batch_size as i64,
            dtype_bytes: if ctx.workload.kind == Kind::Float {
                4
            } else {
                2
            },
        };
        let r = analytic_report::static_report(&ctx.workload.arch, &inputs)?;
        write(
            "static_compute.json",
            serde_json::to_string_pretty(&r)? + "\n",
        )?;
        write("static_compute.md", analytic_report::render_markdown(&r))?;
    }
    println!("{}", llmprof::report::markdown::render(&report));
    Ok(())
}
