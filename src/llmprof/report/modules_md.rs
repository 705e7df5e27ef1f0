//! modules.md: where a stage's GPU time goes, module by module (the Kineto pass's
//! `ModuleProfile`), with each module's analytic floor for the decode step (the larger of its
//! bytes at peak bandwidth and its FLOPs at peak compute) and how far above it the module runs.
//! Modules are summed over layers; `(outside modules)` and `(unmatched)` keep every stage's rows
//! adding up to all its GPU work.
use super::measurements::KinetoSummary;
use super::metrics::PeaksInfo;
use crate::measure::module_tables::{ModuleProfile, OUTSIDE_MODULES, UNMATCHED};
use crate::model::module_work::ModuleWork;
use crate::region::DECODE_STEP;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// One module kind in one stage, summed over its instances (layers).
#[derive(Debug, Clone, PartialEq)]
pub struct KindRow {
    pub module: String,
    pub instances: usize,
    pub ms_per_run: f64,
    pub share: f64,
    pub kernels_per_run: f64,
    /// The analytic floor per run (decode step only, with peaks).
    pub floor_ms: Option<f64>,
}

impl KindRow {
    /// Time above the floor, per run.
    pub fn excess_ms(&self) -> Option<f64> {
        self.floor_ms.map(|f| self.ms_per_run - f)
    }
}

/// The rows of `stage`: per module kind, time per run of the stage, and floors from `work`
/// (one decode step's module work) at `peaks` when the stage is the decode step. Sorted by
/// time above the floor where there are floors, else by time; the two catch-all rows last.
pub fn kind_rows(
    p: &ModuleProfile,
    stage: &str,
    work: &[ModuleWork],
    peaks: Option<&PeaksInfo>,
) -> Vec<KindRow> {
    let runs = p.stage_runs.get(stage).copied().unwrap_or(0).max(1) as f64;
    let rows: Vec<_> = p.rows.iter().filter(|r| r.stage == stage).collect();
    let total_ns: u64 = rows.iter().map(|r| r.time_ns).sum();
    let mut kinds: BTreeMap<&str, (BTreeSet<Option<u32>>, u64, u64)> = BTreeMap::new();
    for r in &rows {
        let k = kinds.entry(&r.module).or_default();
        k.0.insert(r.index);
        k.1 += r.time_ns;
        k.2 += r.kernels;
    }
    let floor_s = |module: &str| -> Option<f64> {
        let peaks = peaks?;
        if stage != DECODE_STEP.nvtx_name() {
            return None;
        }
        let (f, b) = (peaks.peak_tflops * 1e12, peaks.peak_bandwidth_gbs * 1e9);
        let of: Vec<&ModuleWork> = work.iter().filter(|w| w.module == module).collect();
        (!of.is_empty()).then(|| of.iter().map(|w| w.floor_s(f, b)).sum())
    };
    let mut out: Vec<KindRow> = kinds
        .into_iter()
        .map(|(module, (idx, ns, kernels))| KindRow {
            module: module.to_string(),
            instances: idx.len(),
            ms_per_run: ns as f64 / 1e6 / runs,
            share: if total_ns > 0 {
                ns as f64 / total_ns as f64
            } else {
                0.0
            },
            kernels_per_run: kernels as f64 / runs,
            floor_ms: floor_s(module).map(|s| s * 1e3),
        })
        .collect();
    let catch_all = |r: &KindRow| r.module == OUTSIDE_MODULES || r.module == UNMATCHED;
    out.sort_by(|a, b| {
        let key = |r: &KindRow| r.excess_ms().unwrap_or(r.ms_per_run);
        catch_all(a)
            .cmp(&catch_all(b))
            .then(key(b).total_cmp(&key(a)))
    });
    out
}

/// modules.md, or `None` when the pass has no module breakdown (runs from before it).
pub fn render(k: &KinetoSummary, peaks: Option<&PeaksInfo>) -> Option<String> {
    let p = k.modules.as_ref()?;
    let mut s = String::from("# GPU time by module (Kineto pass)\n\n");
    s.push_str(
        "Each kernel, copy and memset is charged to the module that launched it: eager work by the \
         module scope above its launch, work replayed from a CUDA graph by the graph's capture \
         record (which module added each node; matched to the replayed kernels by name, in \
         dependency order). Modules are summed over layers. The floor is the module's analytic \
         work in one decode step (model/module_work.rs) at the datasheet peaks: the larger of its \
         bytes (weights, KV cache, activations) at peak bandwidth and its FLOPs at peak compute.\n\n",
    );
    let m = &p.mapping;
    if m.replays > 0 {
        let replayed_ns: u64 = p.rows.iter().map(|r| r.replayed_ns).sum();
        let _ = writeln!(
            s,
            "Replayed: {} replays of {} graphs; {} kernels matched to their capture node, {} unmatched ({:.3} ms, {:.1} % of replayed time); {} copies or memsets not in the trace; {} names unchecked; {} graphs without a record.\n",
            m.replays,
            m.graphs,
            m.kernels_matched,
            m.kernels_unmatched,
            m.unmatched_ns as f64 / 1e6,
            100.0 * m.unmatched_ns as f64 / replayed_ns.max(1) as f64,
            m.copies_not_traced,
            m.names_unchecked,
            m.graphs_without_record
        );
        for x in m.mismatches.iter().take(3) {
            let _ = writeln!(
                s,
                "- mismatch in `{}` replay {} at kernel {}: expected {:?}, found `{}`",
                x.label, x.replay, x.position, x.expected, x.found
            );
        }
        if m.mismatches_total > 0 {
            let _ = writeln!(
                s,
                "- {} replays stopped matching in all\n",
                m.mismatches_total
            );
        }
    }
    if p.rows.is_empty() {
        s.push_str("The pass recorded no GPU work (a run without a GPU): no module times.\n");
    }
    let mut stages: Vec<&str> = p.rows.iter().map(|r| r.stage.as_str()).collect();
    stages.sort_unstable();
    stages.dedup();
    stages.sort_by_key(|st| *st != DECODE_STEP.nvtx_name());
    for stage in stages {
        let rows = kind_rows(p, stage, &k.decode_step_modules, peaks);
        let runs = p.stage_runs.get(stage).copied().unwrap_or(0);
        let total: f64 = rows.iter().map(|r| r.ms_per_run).sum();
        let _ = writeln!(
            s,
            "## {stage}: {runs} run(s), {total:.3} ms of GPU work per run\n"
        );
        let with_floor = rows.iter().any(|r| r.floor_ms.is_some());
        s.push_str("| module | instances | ms per run | share | kernels per run |");
        s.push_str(if with_floor {
            " floor ms | × floor | above floor ms |\n|---|---:|---:|---:|---:|---:|---:|---:|\n"
        } else {
            "\n|---|---:|---:|---:|---:|\n"
        });
        for r in &rows {
            let _ = write!(
                s,
                "| {} | {} | {:.4} | {:.1} % | {:.1} |",
                r.module,
                r.instances,
                r.ms_per_run,
                100.0 * r.share,
                r.kernels_per_run
            );
            if with_floor {
                match r.floor_ms {
                    Some(f) => {
                        let _ = write!(
                            s,
                            " {f:.4} | {:.1} | {:.4} |",
                            r.ms_per_run / f,
                            r.ms_per_run - f
                        );
                    }
                    None => s.push_str(" | | |"),
                }
            }
            s.push('\n');
        }
        s.push('\n');
    }
    Some(s)
}

#[cfg(test)]
mod tests;
