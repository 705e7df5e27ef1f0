//! `compare` on traces: two trace files, or two folders `analyze trace --out` wrote (their
//! analysis.json), compared with the statistics runs get. Per-iteration times (ProfilerStep#N
//! host durations, GPU busy and computation time per step) are samples; the trace's totals,
//! shares and each region's GPU time are single values; the kernel diff is over the kernels of
//! every region. Several ranks are compared rank by rank.
use std::path::Path;

use super::catalogue::{metric, Better, Metric, Values};
use super::BadInput;
use crate::measure::op_tables::KernelRow;
use crate::report::trace::ANALYSIS_JSON;
use crate::trace::analysis::{TraceAnalysis, SCHEMA};
use crate::trace::ranks::Analysed;
use crate::trace::{analyse, Options};

const FIX: &str = "pass two trace files (.json, .json.gz) or two folders written by `llmprof analyze trace --out`";

/// Whether `path` names a trace or an analysed trace rather than a run: a file, or a folder
/// holding analysis.json.
pub fn is_trace_input(path: &Path) -> bool {
    path.is_file() || path.join(ANALYSIS_JSON).is_file()
}

/// Reads one side: analysis.json of a folder, else the trace file analysed with the defaults.
pub fn load(path: &Path) -> Result<Analysed, BadInput> {
    if path.is_dir() {
        let file = path.join(ANALYSIS_JSON);
        let text = crate::dataset::file_kind::read_to_string(&file)
            .map_err(|e| BadInput::new(&file, format!("cannot read: {e}"), FIX))?;
        let analysed = Analysed::from_json(&text).map_err(|e| {
            BadInput::new(
                &file,
                format!("not an analysis of `analyze trace` ({SCHEMA}): {e}"),
                FIX,
            )
        })?;
        let schemas: Vec<&str> = analysed
            .traces()
            .iter()
            .map(|(_, a)| a.schema.as_str())
            .collect();
        if let Some(other) = schemas.iter().find(|s| **s != SCHEMA) {
            return Err(BadInput::new(
                &file,
                format!("written as {other}, this llmprof reads {SCHEMA}"),
                "analyse the traces again with this llmprof (`llmprof analyze trace ... --out`)",
            ));
        }
        return Ok(analysed);
    }
    let f = crate::dataset::file_kind::open_regular(path)
        .map_err(|e| BadInput::new(path, format!("cannot open: {e}"), FIX))?;
    let read = crate::measure::kineto_json::read_trace(f, &mut |_| {})
        .map_err(|e| BadInput::new(path, e.to_string(), FIX))?;
    Ok(Analysed::One(Box::new(analyse(
        &read,
        &path.display().to_string(),
        &Options::default(),
    ))))
}

/// (label, A's analysis, B's analysis) for each rank both sides have, and the ranks only one has.
pub fn pairs<'a>(
    a: &'a Analysed,
    b: &'a Analysed,
) -> (
    Vec<(String, &'a TraceAnalysis, &'a TraceAnalysis)>,
    Vec<String>,
) {
    let (ta, tb) = (a.traces(), b.traces());
    if ta.len() == 1 && tb.len() == 1 {
        return (vec![(String::new(), ta[0].1, tb[0].1)], Vec::new());
    }
    let rank_label = |r: Option<u64>| r.map_or("rank ?".to_string(), |r| format!("rank {r}"));
    let mut out = Vec::new();
    let mut unmatched = Vec::new();
    for (rank, x) in &ta {
        match tb.iter().find(|(r, _)| r == rank) {
            Some((_, y)) => out.push((rank_label(*rank), *x, *y)),
            None => unmatched.push(format!("{} (only in A)", rank_label(*rank))),
        }
    }
    for (rank, _) in &tb {
        if !ta.iter().any(|(r, _)| r == rank) {
            unmatched.push(format!("{} (only in B)", rank_label(*rank)));
        }
    }
    (out, unmatched)
}

/// Every metric a trace has.
pub fn metrics(a: &TraceAnalysis) -> Vec<Metric> {
    let mut out = Vec::new();
    let steps = &a.iterations;
    let per_step = |f: &dyn Fn(&crate::trace::iterations::Iteration) -> f64| -> Vec<f64> {
        steps.iter().map(|s| f(s) / 1000.0).collect()
    };
    if steps.len() > 1 {
        let busy = |s: &crate::trace::iterations::Iteration| {
            s.devices.iter().map(|d| d.busy_us).sum::<f64>()
        };
        for (key, label, values) in [
            (
                "iteration",
                "iteration time (host, ProfilerStep#N)",
                per_step(&|s| s.host_us),
            ),
            (
                "iteration_gpu_busy",
                "GPU busy time per iteration",
                per_step(&busy),
            ),
            (
                "iteration_computation",
                "GPU computation per iteration",
                per_step(&|s| s.computation_us()),
            ),
        ] {
            out.push(metric(
                key,
                label,
                "ms",
                Better::Lower,
                Values::Samples(values),
            ));
        }
    }
    const ONE: &str = "one value per trace";
    let sum =
        |f: fn(&crate::trace::timeline::Breakdown) -> f64| a.timeline.iter().map(f).sum::<f64>();
    let window = sum(|d| d.window_us);
    let share = |part: f64| {
        if window > 0.0 {
            100.0 * part / window
        } else {
            0.0
        }
    };
    let singles = [
        (
            "gpu_work",
            "GPU work (summed durations)",
            "ms",
            a.gpu_total_us / 1000.0,
        ),
        (
            "gpu_window",
            "GPU window (first to last work)",
            "ms",
            window / 1000.0,
        ),
        (
            "idle_share",
            "GPU idle share",
            "%",
            share(sum(|d| d.idle_us)),
        ),
        (
            "communication_share",
            "communication share",
            "%",
            share(sum(|d| d.communication_us)),
        ),
    ];
    for (key, label, unit, v) in singles {
        out.push(metric(
            key,
            label,
            unit,
            Better::Lower,
            Values::Single(v, ONE),
        ));
    }
    for r in &a.regions {
        out.push(metric(
            &format!("region.{}", r.region),
            &format!("GPU time in {}", r.region),
            "ms",
            Better::Lower,
            Values::Single(r.total_us / 1000.0, ONE),
        ));
    }
    out
}

/// The kernels of every region as kernel-table rows (the kernel diff's input).
pub fn kernel_rows(a: &TraceAnalysis) -> Vec<KernelRow> {
    a.kernels_by_region
        .iter()
        .map(|k| KernelRow {
            stage: Some(k.region.clone()),
            name: k.name.clone(),
            calls: k.calls,
            total_ns: (k.total_us * 1000.0).round() as u64,
            mean_ns: k.total_us * 1000.0 / k.calls.max(1) as f64,
            share_of_gpu: if a.gpu_total_us > 0.0 {
                k.total_us / a.gpu_total_us
            } else {
                0.0
            },
            modules: Vec::new(),
        })
        .collect()
}
