//! Stage 1's numbers: [`Stage1Measurements`] (plain data from the worker) → [`RunReport`], the
//! one source of metrics.json, report.md and the summary. Each part is computed in its own
//! module and unit-tested there: timings, analytic work and utilisation, NVML windows.
pub mod modules;
mod nvml_windows;
pub mod ranks;
mod serving;
mod timings;
mod work;

pub use timings::E2E;

use super::measurements::{KinetoSummary, MemorySummary, Stage1Measurements, TimedRequest};
use super::metrics::*;
use crate::spec::RunSpec;

/// Coefficient of variation between repeats above which a region's timings are called noisy.
pub const NOISY_CV: f64 = 0.10;

/// Rows of the top-operator and top-kernel tables in metrics.json.
const TOP_ROWS: usize = 10;

pub fn build(m: &Stage1Measurements, spec: &RunSpec) -> RunReport {
    let mut notes = m.model.notes.clone();
    // Statistics leave cold first repeats out (and say so); energy counts every window.
    let cold = serving::cold_first_repeats(&m.requests);
    if !cold.is_empty() {
        let names: Vec<String> = cold
            .iter()
            .map(|&i| {
                let t = &m.requests[i];
                t.rows.first().map(|r| r.name.clone()).unwrap_or_default()
            })
            .collect();
        let note = format!(
            "{} cold first repeat(s) left out of the statistics (e2e above {:.2}× the median of the later repeats of the same input: {}); raise runtime.warmup",
            cold.len(),
            serving::COLD_FACTOR,
            names.join(", ")
        );
        tracing::warn!("{note}");
        notes.push(note);
    }
    let warm: Vec<TimedRequest> = m
        .requests
        .iter()
        .enumerate()
        .filter(|(i, _)| !cold.contains(i))
        .map(|(_, t)| t.clone())
        .collect();
    let stages = timings::region_stats(&warm);
    let cv_within_input = timings::cv_within_input(&warm);
    for (k, worst) in &cv_within_input {
        if *worst > NOISY_CV {
            let note = format!("{k}: coefficient of variation between repeats of one input reaches {:.1} % (> 10 %): timings are noisy (more repeats, fixed clocks, an idle GPU help)", worst * 100.0);
            tracing::warn!("{note}");
            notes.push(note);
        }
    }
    let serving = serving::metrics(&warm.iter().collect::<Vec<_>>());
    let throughput = timings::throughput(&warm, serving.tpot_ms.as_ref().map(|s| s.mean_ms));
    let mut flops = work::flops_info(&warm);
    let nvml = nvml_windows::nvml_info(m.nvml.as_ref(), &m.requests);
    let window_clocks = nvml
        .windows
        .iter()
        .filter_map(|(w, v)| Some((w.clone(), v.sm_clock_mhz?)))
        .collect();
    let peaks = work::peaks_info(
        m.model.cuda_device,
        &m.gpu,
        m.model.dtype,
        &spec.hardware,
        &window_clocks,
    )
    .map(|p| work::across_ranks(p, spec.runtime.tensor_parallel));
    let utilisation = work::utilisation(&warm, &flops, &stages, &peaks);
    let kineto = m.kineto.as_ref().map(|k| kineto_info(k, &stages));
    let module_info = m
        .kineto
        .as_ref()
        .and_then(|k| modules::build(k, &stages, peaks.as_ref().ok()));
    if let Some(k) = m
        .kineto
        .as_ref()
        .filter(|k| k.kineto_flops > 0 && k.analytic_flops > 0.0)
    {
        let ratio = k.kineto_flops as f64 / k.analytic_flops;
        flops.kineto_matmul_ratio = Some(ratio);
        // The module breakdown sets Kineto's count against each module's FLOPs, with the reason
        // where it counted nothing; the whole-pass note stands in for it in runs without one.
        if module_info.is_none() {
            notes.push(kineto_flops_note(
                k,
                ratio,
                m.graphs.as_ref().is_some_and(|g| g.replays > 0),
            ));
        }
    }
    let synthetic_first = m.model.synthetic && !notes.iter().any(|n| n == SYNTHETIC_NOTE);
    if synthetic_first {
        notes.insert(0, SYNTHETIC_NOTE.into());
    }
    RunReport {
        schema: SCHEMA.into(),
        command: "stage1".into(),
        llmprof_version: crate::VERSION.into(),
        synthetic_weights: m.model.synthetic,
        notes,
        setup: Setup {
            model: m.model.name.clone(),
            device: m.model.device.clone(),
            dtype: m.model.dtype.name().into(),
            gpu: m.gpu.as_ref().ok().map(|g| g.name.clone()),
            mode: spec
                .model
                .preprocess
                .as_ref()
                .map(|p| p.mode.name().to_string()),
            batch_size: spec.runtime.batch_size,
            effective_batch_size: m.requests.iter().map(|t| t.rows.len() as u32).min(),
            warmup: spec.runtime.warmup,
            repeats: spec.runtime.repeats,
            max_new_tokens: spec.infer.max_new_tokens,
            ignore_eos: spec.infer.ignore_eos,
            inputs: m.inputs,
            clock: m.clock.clone(),
            load_ms: m.model.load_ms,
        },
        stages,
        cv_within_input,
        throughput,
        serving,
        peaks: peaks.ok(),
        flops: Some(flops),
        utilisation,
        nvml,
        kineto,
        modules: module_info,
        tensor_parallel: None,
        memory: m.memory.as_ref().map(memory_info),
        optim: OptimInfo {
            switches: crate::optim::named(&spec.runtime.optim),
            model_switches: spec.model.optim.named(),
            graphs: m.graphs.clone(),
        },
        requests: m
            .requests
            .iter()
            .enumerate()
            .map(|(i, t)| request_record(t, cold.contains(&i)))
            .collect(),
    }
}

fn request_record(t: &TimedRequest, cold: bool) -> RequestRecord {
    let s = serving::request(t);
    RequestRecord {
        input: t
            .rows
            .iter()
            .map(|r| r.name.as_str())
            .collect::<Vec<_>>()
            .join("+"),
        repeat: t.repeat,
        batch_rows: t.rows.len(),
        prompt_tokens: t.rows.iter().map(|r| r.prompt_tokens).max().unwrap_or(0),
        output_tokens: t.output_tokens,
        isl: t.rows.iter().map(|r| r.prompt_tokens).collect(),
        osl: t.row_output_tokens.clone(),
        image_tokens: t
            .rows
            .iter()
            .filter_map(|r| r.image.as_ref().map(|i| i.image_tokens))
            .sum(),
        crop_grid: t
            .rows
            .first()
            .and_then(|r| r.image.as_ref())
            .map(|i| i.crop_grid)
            .unwrap_or([1, 1]),
        stage_ms: t.region_ms.clone(),
        decode_steps: t.decode_steps,
        ttft_ms: s.ttft_ms,
        tpot_ms: s.tpot_ms,
        e2e_ms: s.e2e_ms,
        output_tokens_per_s: s.output_tokens_per_s,
        itl_ms: s.itl_ms,
        decode_step_ms: t.step_ms.clone(),
        cold,
        windows: t
            .windows
            .iter()
            .map(|(stage, start, end)| StageWindow {
                stage: stage.clone(),
                start_unix_ns: *start,
                end_unix_ns: *end,
            })
            .collect(),
    }
}

/// What the Kineto FLOP cross-check counted, from this run's operator table: the ops that
/// carried FLOPs, and what CUDA-graph replays hide.
fn kineto_flops_note(k: &KinetoSummary, ratio: f64, graphs_replayed: bool) -> String {
    let mut counted: Vec<&str> = k
        .operators
        .iter()
        .filter(|o| o.flops > 0)
        .map(|o| o.name.as_str())
        .collect();
    counted.sort_unstable();
    counted.dedup();
    let mut note = format!(
        "Kineto counted {:.1} GFLOP in the profiled pass against {:.1} GFLOP analytic (ratio {ratio:.3}). Only these ops carried FLOP counts: {}; every other op (attention through SDPA, grouped expert GEMMs, elementwise ops without a formula) counts 0.",
        k.kineto_flops as f64 / 1e9,
        k.analytic_flops / 1e9,
        if counted.is_empty() { "none".to_string() } else { counted.join(", ") }
    );
    if graphs_replayed {
        note.push_str(" Decode steps replayed from CUDA graphs record no operators at all (a replay is one cudaGraphLaunch), so their FLOPs are missing from Kineto's count and their kernels are charged to cudaGraphLaunch.");
    }
    note
}

fn kineto_info(
    k: &KinetoSummary,
    stages: &std::collections::BTreeMap<String, StageStats>,
) -> KinetoInfo {
    let mean = |s: &str| stages.get(s).map(|s| s.mean_ms).unwrap_or(0.0);
    let comparable = mean("prefill") + mean("decode_step") * k.decode_steps as f64;
    let profiled = k.prefill_ms + k.decode_ms;
    let gpu_total: u64 = k.kernels.iter().map(|r| r.total_ns).sum();
    let mut kernels: Vec<_> = k.kernels.iter().collect();
    kernels.sort_by_key(|r| std::cmp::Reverse(r.total_ns));
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
            .take(TOP_ROWS)
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
                modules: Vec::new(),
                self_cuda_ms: Some(o.self_cuda_ns as f64 / 1e6),
                self_cpu_ms: Some(o.self_cpu_ns as f64 / 1e6),
            })
            .collect(),
        top_kernels: kernels
            .iter()
            .take(TOP_ROWS)
            .map(|r| TopRow {
                name: r.name.clone(),
                stage: r.stage.clone(),
                calls: r.calls,
                total_ms: r.total_ns as f64 / 1e6,
                share_pct: (gpu_total > 0).then_some(r.share_of_gpu * 100.0),
                modules: r.modules.clone(),
                self_cuda_ms: None,
                self_cpu_ms: None,
            })
            .collect(),
    }
}

fn memory_info(m: &MemorySummary) -> MemoryInfo {
    let gib = |b: i64| b as f64 / (1u64 << 30) as f64;
    MemoryInfo {
        // Region boundaries reset the allocator's peak: the overall peak is the larger of what
        // they saw and what the counters hold now.
        peak_allocated_gib: gib(m.counters.allocated_bytes.max(m.overall.allocated_bytes)),
        peak_reserved_gib: gib(m.counters.reserved_bytes.max(m.overall.reserved_bytes)),
        stages: m
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
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::timings::tests::request;
    use super::*;
    use crate::dtype::Dtype;
    use crate::model::{Family, ModelInfo};

    pub(crate) fn measurements() -> Stage1Measurements {
        Stage1Measurements {
            model: ModelInfo {
                name: "tiny".into(),
                family: Family::DeepseekOcr,
                device: "Cpu".into(),
                cuda_device: None,
                dtype: Dtype::F32,
                synthetic: true,
                notes: vec!["a note".into()],
                load_ms: 3.0,
            },
            clock: "Host".into(),
            inputs: 1,
            requests: vec![
                request(0, 0, &[("prefill", 10.0), (E2E, 20.0)], &[1.0]),
                request(0, 1, &[("prefill", 14.0), (E2E, 24.0)], &[1.0]),
            ],
            nvml: None,
            kineto: None,
            memory: None,
            gpu: Err("no GPU".into()),
            graphs: None,
            model_assumptions: vec!["an assumption".into()],
        }
    }

    pub(crate) fn spec() -> RunSpec {
        let conf = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conf");
        let req = crate::config::ComposeRequest {
            config_dir: conf,
            config_name: "config".into(),
            overrides: vec!["model=deepseek_ocr_tiny".into()],
            multirun: false,
            job_name: "test".into(),
        };
        let composed = crate::config::compose(&req).unwrap();
        RunSpec::from_tree(&composed.resolved_job().unwrap()).unwrap()
    }

    #[test]
    fn report_carries_setup_notes_and_noise_warnings() {
        let r = build(&measurements(), &spec());
        assert_eq!(r.notes[0], SYNTHETIC_NOTE, "the banner comes first");
        assert!(r.notes.iter().any(|n| n == "a note"));
        // prefill 10 vs 14 ms between repeats: CV 22.6 % > 10 %.
        assert!(r
            .notes
            .iter()
            .any(|n| n.starts_with("prefill: coefficient of variation")));
        assert_eq!(r.setup.model, "tiny");
        assert_eq!(r.setup.dtype, "fp32");
        assert_eq!(r.stages["prefill"].mean_ms, 12.0);
        assert!(r.peaks.is_none());
        assert!(r
            .utilisation
            .unavailable
            .as_deref()
            .unwrap()
            .contains("no GPU"));
        assert_eq!(r.requests.len(), 2);
        assert_eq!(r.requests[0].crop_grid, [1, 1]);
    }

    #[test]
    fn kineto_ratio_and_overhead() {
        let mut m = measurements();
        m.kineto = Some(KinetoSummary {
            prefill_ms: 24.0,
            decode_ms: 2.0,
            decode_steps: 2,
            events: 7,
            operators: vec![],
            kernels: vec![],
            kineto_flops: 880,
            analytic_flops: 1000.0,
            modules: None,
            decode_step_modules: vec![],
        });
        let r = build(&m, &spec());
        let k = r.kineto.unwrap();
        // Timed: prefill 12 + 2 steps × 1 ms = 14; profiled 26 → +85.7 %.
        assert!((k.overhead_pct - (26.0 / 14.0 - 1.0) * 100.0).abs() < 1e-9);
        assert_eq!(r.flops.unwrap().kineto_matmul_ratio, Some(0.88));
    }
}
