//! metrics.json `modules` from the Kineto pass's module breakdown (measurements.json): per stage,
//! each module kind's GPU time per run, share, kernels and, for the decode step, its analytic
//! floor at the run's peaks; per layer; and the stage's timeline (work, overlap, idle, span, the
//! gap to the next run) set against the stage's timed mean for the 2 % check.
use crate::measure::kernel_names::distinct_short_names;
use crate::measure::module_tables::{ModuleProfile, OUTSIDE_MODULES, UNMATCHED};
use crate::model::module_work::ModuleWork;
use crate::region::DECODE_STEP;
use crate::report::measurements::KinetoSummary;
use crate::report::metrics::{PeaksInfo, StageStats};
use crate::report::metrics_modules::{
    KernelTime, LayerTime, ModuleKind, ModulesInfo, StageModules,
};

/// Kernels listed per module kind.
const TOP_KERNELS: usize = 3;
use std::collections::{BTreeMap, BTreeSet};

/// One module kind's rows summed: its instances (layers), time, kernels, replayed time and
/// Kineto's FLOPs.
#[derive(Default)]
struct KindSums {
    layers: BTreeSet<Option<u32>>,
    ns: u64,
    kernels: u64,
    replayed_ns: u64,
    kineto_flops: u64,
}

/// The kinds of `stage`: per module kind, time per run of the stage, and floors from `work`
/// (one decode step's module work) at `peaks` when the stage is the decode step.
pub fn kinds(
    p: &ModuleProfile,
    stage: &str,
    work: &[ModuleWork],
    peaks: Option<&PeaksInfo>,
) -> Vec<ModuleKind> {
    let runs = p.stage_runs.get(stage).copied().unwrap_or(0).max(1) as f64;
    let rows: Vec<_> = p.rows.iter().filter(|r| r.stage == stage).collect();
    let total_ns: u64 = rows.iter().map(|r| r.time_ns).sum();
    let mut by_kind: BTreeMap<&str, KindSums> = BTreeMap::new();
    for r in &rows {
        let k = by_kind.entry(&r.module).or_default();
        k.layers.insert(r.index);
        k.ns += r.time_ns;
        k.kernels += r.kernels;
        k.replayed_ns += r.replayed_ns;
        k.kineto_flops += r.kineto_flops;
    }
    let is_step = stage == DECODE_STEP.nvtx_name();
    let analytic_flops = |module: &str| -> f64 {
        work.iter()
            .filter(|w| w.module == module)
            .map(|w| w.flops)
            .sum()
    };
    let floor_ms = |module: &str| -> Option<f64> {
        let peaks = peaks.filter(|_| stage == DECODE_STEP.nvtx_name())?;
        let (f, b) = (peaks.peak_tflops * 1e12, peaks.peak_bandwidth_gbs * 1e9);
        let of: Vec<&ModuleWork> = work.iter().filter(|w| w.module == module).collect();
        (!of.is_empty()).then(|| of.iter().map(|w| w.floor_s(f, b)).sum::<f64>() * 1e3)
    };
    let mut out: Vec<ModuleKind> = by_kind
        .into_iter()
        .map(|(module, sums)| {
            let KindSums {
                layers: idx,
                ns,
                kernels,
                replayed_ns: replayed,
                kineto_flops: kflops,
            } = sums;
            let ms = ns as f64 / 1e6 / runs;
            let floor = floor_ms(module);
            let analytic = if is_step { analytic_flops(module) } else { 0.0 };
            let (ratio, na) = match (analytic > 0.0, kflops > 0) {
                (false, _) => (None, None),
                (true, true) => (Some(kflops as f64 / runs / analytic), None),
                (true, false) if replayed * 100 >= ns * 99 => (
                    None,
                    Some("replayed from a CUDA graph: no operators for Kineto to count".to_string()),
                ),
                (true, false) => (
                    None,
                    Some("Kineto has no FLOP formula for the operators it ran (attention, llmprof's own kernels, grouped GEMMs)".to_string()),
                ),
            };
            ModuleKind {
                module: module.to_string(),
                instances: idx.len(),
                ms_per_run: ms,
                share: if total_ns > 0 {
                    ns as f64 / total_ns as f64
                } else {
                    0.0
                },
                kernels_per_run: kernels as f64 / runs,
                floor_ms: floor,
                times_floor: floor.filter(|f| *f > 0.0).map(|f| ms / f),
                above_floor_ms: floor.map(|f| ms - f),
                kineto_flops_ratio: ratio,
                kineto_flops_na: na,
                top_kernels: Vec::new(),
            }
        })
        .collect();
    // Each kind's heaviest kernels, named short but distinct within the stage.
    let stage_kernels: Vec<_> = p.kernels.iter().filter(|r| r.stage == stage).collect();
    let short: BTreeMap<&str, String> = stage_kernels
        .iter()
        .map(|r| r.name.as_str())
        .zip(distinct_short_names(
            stage_kernels.iter().map(|r| r.name.as_str()),
        ))
        .collect();
    for kind in &mut out {
        let mut of: Vec<_> = stage_kernels
            .iter()
            .filter(|r| r.module == kind.module)
            .collect();
        of.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(a.name.cmp(&b.name)));
        kind.top_kernels = of
            .iter()
            .take(TOP_KERNELS)
            .map(|r| KernelTime {
                name: short[r.name.as_str()].clone(),
                ms_per_run: r.total_ns as f64 / 1e6 / runs,
                calls_per_run: r.calls as f64 / runs,
            })
            .collect();
    }
    let catch_all = |k: &ModuleKind| k.module == OUTSIDE_MODULES || k.module == UNMATCHED;
    out.sort_by(|a, b| {
        let key = |k: &ModuleKind| k.above_floor_ms.unwrap_or(k.ms_per_run);
        catch_all(a)
            .cmp(&catch_all(b))
            .then(key(b).total_cmp(&key(a)))
    });
    out
}

/// Per layer of `stage`: the time of every module inside it, per run.
fn layers(p: &ModuleProfile, stage: &str) -> Vec<LayerTime> {
    let runs = p.stage_runs.get(stage).copied().unwrap_or(0).max(1) as f64;
    let mut by_layer: BTreeMap<u32, u64> = BTreeMap::new();
    for r in p.rows.iter().filter(|r| r.stage == stage) {
        if let Some(i) = r.index {
            *by_layer.entry(i).or_default() += r.time_ns;
        }
    }
    by_layer
        .into_iter()
        .map(|(index, ns)| LayerTime {
            index,
            ms_per_run: ns as f64 / 1e6 / runs,
        })
        .collect()
}

/// metrics.json `modules`, or `None` for a pass without a module breakdown.
pub fn build(
    k: &KinetoSummary,
    stages: &BTreeMap<String, StageStats>,
    peaks: Option<&PeaksInfo>,
) -> Option<ModulesInfo> {
    let p = k.modules.as_ref()?;
    let replayed_ns: u64 = p.rows.iter().map(|r| r.replayed_ns).sum();
    let names: BTreeSet<&str> = p.rows.iter().map(|r| r.stage.as_str()).collect();
    let stages_out = names
        .into_iter()
        .map(|stage| {
            let t = p.timelines.iter().find(|t| t.stage == stage);
            let ms = |ns: f64| ns / 1e6;
            let span = t.map_or(0.0, |t| ms(t.span_ns));
            // A stage holding others is timed with them; its rows are its own work only.
            let timed = stages
                .get(stage)
                .map(|s| s.mean_ms)
                .filter(|m| *m > 0.0 && !p.nesting_stages.iter().any(|n| n == stage));
            let busy = t.map(|t| ms(t.work_ns - t.overlap_ns()));
            let residual = timed
                .filter(|_| t.is_some())
                .map(|tm| 100.0 * (span - tm) / tm);
            let info = StageModules {
                runs: p.stage_runs.get(stage).copied().unwrap_or(0),
                work_ms: t.map_or(0.0, |t| ms(t.work_ns)),
                overlap_ms: t.map_or(0.0, |t| ms(t.overlap_ns())),
                early_start_ms: t.map_or(0.0, |t| ms(t.early_start_ns)),
                idle_inside_ms: t.map_or(0.0, |t| ms(t.idle_inside_ns())),
                span_ms: span,
                gap_ms: t.map_or(0.0, |t| ms(t.gap_ns)),
                gap_work_ms: t.map_or(0.0, |t| ms(t.gap_work_ns)),
                timed_ms: timed,
                timed_idle_ms: timed.zip(busy).map(|(tm, b)| tm - b),
                residual_pct: residual,
                within_2pct: residual.map(|r| r.abs() <= 2.0),
                kinds: kinds(p, stage, &k.decode_step_modules, peaks),
                layers: layers(p, stage),
            };
            (stage.to_string(), info)
        })
        .collect();
    Some(ModulesInfo {
        source: p.source,
        mapping: p.mapping.clone(),
        unmatched_share: p.mapping.unmatched_ns as f64 / replayed_ns.max(1) as f64,
        stages: stages_out,
    })
}

#[cfg(test)]
mod tests;
