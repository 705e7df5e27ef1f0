//! report.md's "Tensor parallel": every rank's step times and collectives side by side, the
//! slowest rank and the spread (metrics.json `tensor_parallel`).
use std::fmt::Write as _;

use crate::report::metrics_ranks::RanksInfo;

pub(super) fn render(s: &mut String, t: &RanksInfo) {
    let _ = writeln!(s, "\n## Tensor parallel: {} ranks\n", t.world);
    let ms = |v: Option<f64>| v.map_or("—".to_string(), |x| format!("{x:.3}"));
    let _ = writeln!(
        s,
        "| rank | GPU | prefill p50 (ms) | decode step p50 (ms) | communication ms/step | share of the step's work | work outside it (ms/step) | peak allocated (GiB) |\n|---:|---|---:|---:|---:|---:|---:|---:|"
    );
    for r in &t.ranks {
        let mark = if r.rank == t.slowest_rank {
            " (slowest)"
        } else {
            ""
        };
        let _ = writeln!(
            s,
            "| {}{mark} | {} | {} | {} | {} | {} | {} | {} |",
            r.rank,
            r.gpu.as_deref().unwrap_or("—"),
            ms(r.prefill_p50_ms),
            ms(r.decode_step_p50_ms),
            ms(r.communication_ms_per_step),
            r.communication_share
                .map_or("—".to_string(), |x| format!("{:.1} %", x * 100.0)),
            ms(r.work_outside_communication_ms),
            r.peak_allocated_gib
                .map_or("—".to_string(), |x| format!("{x:.2}")),
        );
    }
    let spread = t
        .spread_pct
        .map_or("not measured".to_string(), |p| format!("{p:.1} %"));
    let basis = match t.compared.as_str() {
        "work_outside_communication" => "the GPU work per decode step outside the collectives (every rank's step time includes its waits for the others, so step times come out alike)",
        _ => "the decode step's p50 (no module breakdown on every rank: step times include the waits inside the collectives, so this spread understates a straggler)",
    };
    let _ = writeln!(
        s,
        "\nSlowest rank: {} (the one the others wait for in each collective), compared by {basis}; spread between the fastest and the slowest: {spread}. Communication: the all-reduce, all-gather and embedding-sum kernels of each rank's Kineto pass, waits for the other ranks included. Each rank's own report: rank<k>/report.md (rank 0's is this one).",
        t.slowest_rank
    );
}
