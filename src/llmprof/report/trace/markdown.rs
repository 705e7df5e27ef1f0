//! The markdown of a trace analysis: a summary (GPU time, regions, graphs, iterations, the top
//! kernels and operators, ranks side by side) and the full kernel, operator and region tables.
use std::fmt::Write as _;

use crate::measure::kernel_names::distinct_short_names;
use crate::trace::analysis::TraceAnalysis;
use crate::trace::ranks::{AcrossRanks, Analysed};
use crate::trace::timeline::Breakdown;

/// Trace-provided text in a table cell: backslashes and bars escaped, line breaks as spaces.
pub fn cell(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace(['\n', '\r'], " ")
}

/// `1.2 MB`, `30.5 kB`.
pub fn size(bytes: u64) -> String {
    if bytes >= 1_000_000 {
        format!("{:.1} MB", bytes as f64 / 1e6)
    } else {
        format!("{:.1} kB", bytes as f64 / 1e3)
    }
}

fn ms(us: f64) -> String {
    format!("{:.3}", us / 1000.0)
}

fn pct(part: f64, whole: f64) -> String {
    if whole > 0.0 {
        format!("{:.1}", 100.0 * part / whole)
    } else {
        "—".into()
    }
}

/// The summary: everything for one trace, or each rank's summary and the view across ranks.
pub fn summary(analysed: &Analysed, top: usize) -> String {
    match analysed {
        Analysed::One(a) => one(a, top, "#"),
        Analysed::Ranks(m) => {
            let mut out = format!("# Trace analysis: {} ranks\n\n", m.ranks.len());
            out.push_str(&across(&m.across_ranks));
            for r in &m.ranks {
                out.push('\n');
                out.push_str(&one(&r.analysis, top, "##"));
            }
            out
        }
    }
}

fn one(a: &TraceAnalysis, top: usize, h: &str) -> String {
    let s = &a.source;
    let mut out = format!("{h} Trace analysis: {}\n\n", s.path);
    let rank = s.rank.map(|r| format!(", rank {r}")).unwrap_or_default();
    let devices = if s.devices.is_empty() {
        String::new()
    } else {
        format!(", {}", s.devices.join(", "))
    };
    let _ = writeln!(
        out,
        "{} host events, {} GPU events ({} others skipped), {} of JSON{rank}{devices}. \
         GPU work summed: {} ms.\n",
        s.host_events,
        s.device_events,
        s.skipped_events,
        size(s.bytes),
        ms(a.gpu_total_us)
    );
    if a.early_start_us > 0.0 {
        let _ = writeln!(
            out,
            "Of it, {} ms is kernels waiting: launched with programmatic dependent launch, a kernel \
             may start before the work ahead of it on its stream ends and wait; Kineto's durations, \
             and the kernel table's times below, include those waits (its `waited ms` column).\n",
            ms(a.early_start_us)
        );
    }
    let _ = writeln!(out, "{h}# GPU time\n");
    out.push_str(&breakdown_table(&a.timeline));
    if a.graphs.launches > 0 {
        let _ = writeln!(
            out,
            "\nCUDA graphs: {} launches replayed {} kernels ({} ms, {}% of GPU work).",
            a.graphs.launches,
            a.graphs.calls,
            ms(a.graphs.total_us),
            pct(a.graphs.total_us, a.gpu_total_us)
        );
    }
    let _ = writeln!(out, "\n{h}# Regions\n");
    out.push_str(&regions_table(a, top));
    if !a.iterations.is_empty() {
        let _ = writeln!(out, "\n{h}# Iterations (ProfilerStep#N)\n");
        out.push_str(&iterations_table(a));
    }
    let _ = writeln!(out, "\n{h}# Kernels (top {top} by total time)\n");
    out.push_str(&kernels_table(a, top));
    let _ = writeln!(out, "\n{h}# Operators (top {top} by self CUDA time)\n");
    out.push_str(&operators_table(a, top));
    out
}

/// Per device: where the window went.
pub fn breakdown_table(rows: &[Breakdown]) -> String {
    let mut out = String::from(
        "Window = first GPU work's start to the last one's end. Computation, communication \
         (collectives no computation overlaps) and memory (copies and memsets nothing else \
         overlaps) are unions over streams; idle = window − busy, split by what the GPU waited \
         for (docs/analyze-trace.md).\n\n\
         | device | window ms | computation % | communication % | memory % | idle % | host wait % | kernel wait % | other idle % | comm. under compute ms |\n\
         |---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for d in rows {
        let w = d.window_us;
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            d.device,
            ms(w),
            pct(d.computation_us, w),
            pct(d.communication_us, w),
            pct(d.memory_us, w),
            pct(d.idle_us, w),
            pct(d.idle_host_wait_us, w),
            pct(d.idle_kernel_wait_us, w),
            pct(d.idle_other_us, w),
            ms(d.communication_overlapped_us)
        );
    }
    out
}

pub fn regions_table(a: &TraceAnalysis, top: usize) -> String {
    let mut out = String::from(
        "GPU work grouped by the innermost annotation around its launch (`--regions` picks \
         which annotations count).\n\n\
         | region | calls | total ms | share % | graph launches | kernels from graphs |\n\
         |---|---:|---:|---:|---:|---:|\n",
    );
    for r in a.regions.iter().take(top) {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.1} | {} | {} |",
            cell(&r.region),
            r.calls,
            ms(r.total_us),
            100.0 * r.share_of_gpu,
            r.graph_launches,
            r.graph_calls
        );
    }
    more(&mut out, a.regions.len(), top, "regions.md");
    out
}

fn iterations_table(a: &TraceAnalysis) -> String {
    let mut out = String::from(
        "| step | host ms | GPU span ms | computation ms | communication ms | memory ms | idle ms |\n\
         |---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for it in &a.iterations {
        let sum = |f: fn(&Breakdown) -> f64| it.devices.iter().map(f).sum::<f64>();
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} |",
            it.step,
            ms(it.host_us),
            ms(it.gpu_span_us()),
            ms(sum(|d| d.computation_us)),
            ms(sum(|d| d.communication_us)),
            ms(sum(|d| d.memory_us)),
            ms(sum(|d| d.idle_us))
        );
    }
    out
}

pub fn kernels_table(a: &TraceAnalysis, top: usize) -> String {
    // A trace with early starts (programmatic dependent launch) gets the waits' column.
    let waits = a.early_start_us > 0.0;
    let mut out = String::from(
        "| kernel | calls | total ms | mean µs | min µs | max µs | share % | from graphs |",
    );
    out.push_str(if waits {
        " waited ms |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n"
    } else {
        "\n|---|---:|---:|---:|---:|---:|---:|---:|\n"
    });
    let names = distinct_short_names(a.kernels.iter().map(|k| k.name.as_str()));
    for (k, name) in a.kernels.iter().zip(&names).take(top) {
        let _ = write!(
            out,
            "| {} | {} | {} | {:.2} | {:.2} | {:.2} | {:.1} | {} |",
            cell(name),
            k.calls,
            ms(k.total_us),
            k.mean_us,
            k.min_us,
            k.max_us,
            100.0 * k.share_of_gpu,
            k.graph_calls
        );
        if waits {
            let _ = write!(out, " {} |", ms(k.early_start_us));
        }
        out.push('\n');
    }
    more(&mut out, a.kernels.len(), top, "kernels.md");
    out
}

pub fn operators_table(a: &TraceAnalysis, top: usize) -> String {
    let mut out = String::from(
        "Self = without the host events nested in it; total = with them, outermost instances \
         only. CUDA = GPU work the op launched; graph replays are charged to `cudaGraphLaunch`.\n\n\
         | operator | kind | calls | self CPU ms | total CPU ms | self CUDA ms | total CUDA ms |\n\
         |---|---|---:|---:|---:|---:|---:|\n",
    );
    for o in a.operators.iter().take(top) {
        let _ = writeln!(
            out,
            "| {} | {:?} | {} | {} | {} | {} | {} |",
            cell(&o.name),
            o.kind,
            o.calls,
            ms(o.self_cpu_us),
            ms(o.total_cpu_us),
            ms(o.self_cuda_us),
            ms(o.total_cuda_us)
        );
    }
    more(&mut out, a.operators.len(), top, "operators.md");
    out
}

/// The kernels of each region (kernels_by_region), for regions.md.
pub fn region_kernels_table(a: &TraceAnalysis) -> String {
    let mut out = String::from("| region | kernel | calls | total ms |\n|---|---|---:|---:|\n");
    let names = distinct_short_names(a.kernels_by_region.iter().map(|k| k.name.as_str()));
    for (k, name) in a.kernels_by_region.iter().zip(&names) {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            cell(&k.region),
            cell(name),
            k.calls,
            ms(k.total_us)
        );
    }
    out
}

fn more(out: &mut String, len: usize, top: usize, file: &str) {
    if len > top {
        let _ = writeln!(
            out,
            "\n{} more rows: {file} with `--out`, or `--format json`.",
            len - top
        );
    }
}

/// A rank, or "—" when all ranks were within 1 % (no rank stands out).
fn rank_or_tie(rank: Option<u64>) -> String {
    rank.map_or_else(|| "— (within 1 %)".to_string(), |r| r.to_string())
}

fn across(view: &AcrossRanks) -> String {
    let mut out = String::from(
        "## Across ranks\n\n| rank | window ms | computation ms | communication % | idle ms | steps | mean step ms |\n\
         |---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in &view.ranks {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.1} | {} | {} | {} |",
            r.rank,
            ms(r.window_us),
            ms(r.computation_us),
            100.0 * r.communication_share,
            ms(r.idle_us),
            r.steps,
            ms(r.mean_step_us)
        );
    }
    if !view.steps.is_empty() {
        out.push_str(
            "\nPer step: the straggler is the rank that computed longest (the others wait for it \
             in collectives); spread = its computation − the least.\n\n\
             | step | slowest rank (host) | host spread ms | straggler rank | computation spread ms |\n\
             |---:|---:|---:|---:|---:|\n",
        );
        for s in &view.steps {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                s.step,
                rank_or_tie(s.slowest_rank),
                ms(s.host_spread_us),
                rank_or_tie(s.straggler_rank),
                ms(s.computation_spread_us)
            );
        }
    }
    if let Some((rank, steps)) = view.usual_straggler {
        let _ = writeln!(
            out,
            "\nStraggler: rank {rank} in {steps} of {} steps.",
            view.steps.len()
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::kineto_json::read_trace;
    use crate::trace::ranks::{Analysed, RankAnalysis};
    use crate::trace::{analyse, Options};
    use serde_json::json;

    /// Launch calls and their kernels on stream 7 (gpu start, duration in µs).
    fn trace(kernels: &[(&str, f64, f64)]) -> TraceAnalysis {
        let mut events = Vec::new();
        for (i, (name, ts, dur)) in kernels.iter().enumerate() {
            let corr = i as u64 + 1;
            events.push(json!({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
                "pid": 1, "tid": 1, "ts": 10.0 + i as f64, "dur": 1, "args": {"correlation": corr}}));
            events.push(
                json!({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7,
                "ts": ts, "dur": dur, "args": {"correlation": corr, "device": 0, "stream": 7}}),
            );
        }
        let text = json!({"traceEvents": events}).to_string();
        let read = read_trace(text.as_bytes(), &mut |_| {}).unwrap();
        analyse(&read, "built", &Options::default())
    }

    #[test]
    fn the_waits_of_early_starts_get_a_column_and_a_sentence_only_when_there_are_some() {
        // b starts at 180 while a runs to 200: 20 µs waited.
        let a = trace(&[("a", 100.0, 100.0), ("b", 180.0, 50.0)]);
        let analysed = |a: &TraceAnalysis| {
            Analysed::from_ranks(vec![RankAnalysis {
                rank: 0,
                analysis: a.clone(),
            }])
        };
        let one = |a: &TraceAnalysis| summary(&analysed(a), 10);
        let html = |a: &TraceAnalysis| super::super::html::render(&analysed(a));
        assert!(kernels_table(&a, 10).contains("| waited ms |"));
        assert!(
            one(&a).contains("0.020 ms is kernels waiting"),
            "{}",
            one(&a)
        );
        assert!(html(&a).contains("waited ms"));
        let plain = trace(&[("a", 100.0, 100.0), ("b", 200.0, 50.0)]);
        assert!(!kernels_table(&plain, 10).contains("waited"));
        assert!(!one(&plain).contains("waiting"));
        assert!(!html(&plain).contains("waited ms"));
    }
}
