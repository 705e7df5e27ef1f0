//! modules.md: where each stage's GPU time goes, module by module (metrics.json `modules`), the
//! decode step first, with each module's analytic floor and how far above it the module runs,
//! the per-layer times, and how the stage's time adds up on the GPU timeline.
use super::metrics_modules::{ModulesInfo, StageModules, TimeSource};
use crate::region::DECODE_STEP;
use std::fmt::Write;

const METHOD: &str =
    "Each kernel, copy and memset is charged to the module that launched it: eager \
work by the module scope above its launch, work replayed from a CUDA graph by the graph's capture \
record (which module added each node; matched to the replayed kernels by name, in dependency \
order). Modules are summed over layers. The floor is the module's analytic work in one decode step \
(model/module_work.rs) at the datasheet peaks: the larger of its bytes (weights, KV cache, \
activations) at peak bandwidth and its FLOPs at peak compute.";

const HOST_METHOD: &str = "A run without a GPU: each module's time is its scope's own host time \
(its duration less the module scopes inside it); the rest of each stage scope is `(outside \
modules)`. Floors need a GPU's peaks.";

fn mapping_lines(s: &mut String, m: &ModulesInfo) {
    let g = &m.mapping;
    if g.replays == 0 {
        return;
    }
    let _ = writeln!(
        s,
        "Replayed: {} replays of {} graphs; {} kernels matched to their capture node, {} unmatched ({:.3} ms, {:.1} % of replayed time); {} copies or memsets not in the trace; {} kernel names unchecked; {} graphs without a record.\n",
        g.replays,
        g.graphs,
        g.kernels_matched,
        g.kernels_unmatched,
        g.unmatched_ns as f64 / 1e6,
        100.0 * m.unmatched_share,
        g.copies_not_traced,
        g.names_unchecked,
        g.graphs_without_record
    );
    for x in g.mismatches.iter().take(3) {
        let _ = writeln!(
            s,
            "- mismatch in `{}`, replay {}, event {}: expected {:?}, found `{}`",
            x.label, x.replay, x.position, x.expected, x.found
        );
    }
    if g.mismatches_total > 0 {
        let _ = writeln!(
            s,
            "- {} replays stopped matching in all\n",
            g.mismatches_total
        );
    }
}

fn stage_section(s: &mut String, stage: &str, st: &StageModules, host: bool) {
    let work: f64 = st.kinds.iter().map(|k| k.ms_per_run).sum();
    let _ = writeln!(
        s,
        "## {stage}: {} run(s), {work:.3} ms of {} per run\n",
        st.runs,
        if host { "host time" } else { "GPU work" }
    );
    let timed = match (st.timed_ms, st.residual_pct) {
        (Some(t), Some(r)) => format!(
            "; the timed mean {t:.3} ms, span − timed {r:+.1} % ({})",
            match (st.within_2pct, st.timed_idle_ms) {
                (Some(true), _) => "within 2 %".to_string(),
                (_, Some(idle)) => format!(
                    "beyond 2 %: the profiled runs idle {:.3} ms between kernels, the timed ones {idle:.3} ms (timed − GPU busy); the difference is the profiler's cost on the host, which slows launches of eager work",
                    st.idle_inside_ms
                ),
                _ => "beyond 2 %".to_string(),
            }
        ),
        _ => String::new(),
    };
    if st.span_ms > 0.0 {
        let _ = writeln!(
        s,
        "Per run on the {} timeline: work {:.3} − overlap {:.3} + idle between its kernels {:.3} = span {:.3} ms{timed}. To the next run: {:.3} ms, {:.3} ms of it other GPU work (sampling).\n",
        if host { "host" } else { "GPU" },
        st.work_ms, st.overlap_ms, st.idle_inside_ms, st.span_ms, st.gap_ms, st.gap_work_ms
    );
    }
    if st.early_start_ms > 0.0 {
        let _ = writeln!(
            s,
            "Kernels launched with programmatic dependent launch started before the work ahead of them on their stream had ended, {:.3} ms per run in all; each is charged from that end, so the waiting is in neither `work` nor the modules below.\n",
            st.early_start_ms
        );
    }
    let with_floor = st.kinds.iter().any(|k| k.floor_ms.is_some());
    s.push_str("| module | instances | ms per run | share | kernels per run |");
    s.push_str(if with_floor {
        " floor ms | × floor | above floor ms |\n|---|---:|---:|---:|---:|---:|---:|---:|\n"
    } else {
        "\n|---|---:|---:|---:|---:|\n"
    });
    for k in &st.kinds {
        let _ = write!(
            s,
            "| {} | {} | {:.4} | {:.1} % | {:.1} |",
            k.module,
            k.instances,
            k.ms_per_run,
            100.0 * k.share,
            k.kernels_per_run
        );
        if with_floor {
            match (k.floor_ms, k.times_floor, k.above_floor_ms) {
                (Some(f), Some(x), Some(a)) => {
                    let _ = write!(s, " {f:.4} | {x:.1} | {a:.4} |");
                }
                _ => s.push_str(" | | |"),
            }
        }
        s.push('\n');
    }
    if st.kinds.iter().any(|k| !k.top_kernels.is_empty()) {
        s.push_str("\nEach module's heaviest kernels (ms per run, calls per run):\n\n");
        for k in st.kinds.iter().filter(|k| !k.top_kernels.is_empty()) {
            let list: Vec<String> = k
                .top_kernels
                .iter()
                .map(|t| {
                    format!(
                        "`{}` {:.4} ({:.0})",
                        t.name.replace('`', "'"),
                        t.ms_per_run,
                        t.calls_per_run
                    )
                })
                .collect();
            let _ = writeln!(s, "- {}: {}", k.module, list.join(", "));
        }
    }
    if let Some(line) = kineto_flops_line(st) {
        let _ = writeln!(s, "\n{line}");
    }
    if st.layers.len() > 1 {
        let v: Vec<f64> = st.layers.iter().map(|l| l.ms_per_run).collect();
        let (lo, hi) = v
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
        let slowest = st
            .layers
            .iter()
            .max_by(|a, b| a.ms_per_run.total_cmp(&b.ms_per_run))
            .map_or(0, |l| l.index);
        let _ = writeln!(
            s,
            "\nLayers: {} from {lo:.4} to {hi:.4} ms per run (slowest: layer {slowest}); every layer's time is in metrics.json `modules.stages.{stage}.layers`.",
            v.len()
        );
    }
    s.push('\n');
}

/// modules.md from metrics.json `modules`.
pub fn render(m: &ModulesInfo) -> String {
    let host = m.source == TimeSource::Host;
    let mut s = match host {
        false => format!("# GPU time by module (Kineto pass)\n\n{METHOD}\n\n"),
        true => format!("# Host time by module (Kineto pass, no GPU)\n\n{HOST_METHOD}\n\n"),
    };
    mapping_lines(&mut s, m);
    if m.stages.is_empty() {
        s.push_str("The pass recorded no GPU work (a run without a GPU): no module times.\n");
    }
    let mut stages: Vec<(&String, &StageModules)> = m.stages.iter().collect();
    stages.sort_by_key(|(name, _)| name.as_str() != DECODE_STEP.nvtx_name());
    for (name, st) in stages {
        stage_section(&mut s, name, st, host);
    }
    s
}

/// "Kineto's FLOP count ÷ the analytic FLOPs, per module: …" for a stage, with the reason where
/// there is no ratio; `None` when no module has analytic FLOPs (modules.md and report.md).
pub(crate) fn kineto_flops_line(st: &StageModules) -> Option<String> {
    let ratios: Vec<String> = st
        .kinds
        .iter()
        .filter_map(|k| k.kineto_flops_ratio.map(|r| format!("{} {r:.2}", k.module)))
        .collect();
    let mut why_not: std::collections::BTreeMap<&str, usize> = Default::default();
    for reason in st.kinds.iter().filter_map(|k| k.kineto_flops_na.as_deref()) {
        *why_not.entry(reason).or_default() += 1;
    }
    if ratios.is_empty() && why_not.is_empty() {
        return None;
    }
    let mut line = String::from("Kineto's FLOP count ÷ the analytic FLOPs, per module: ");
    line.push_str(&match ratios.is_empty() {
        true => "none counted".to_string(),
        false => ratios.join(", "),
    });
    for (reason, n) in why_not {
        let _ = write!(line, "; n/a for {n} module(s): {reason}");
    }
    line.push('.');
    Some(line)
}
