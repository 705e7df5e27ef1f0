//! report.md's top-operators and top-kernels tables (Kineto, profiled pass). Each column title
//! says which time it holds; kernels appear under their short names (`measure::kernel_names`).
use std::fmt::Write as _;

use crate::measure::kernel_names::distinct_short_names;
use crate::measure::op_tables::modules_label;
use crate::report::metrics::{KinetoInfo, RunReport, TopRow};

/// Both sections, for a report with a Kineto pass.
pub(super) fn render(s: &mut String, r: &RunReport, k: &KinetoInfo) {
    let replays = r.optim.graphs.as_ref().map_or(0, |g| g.replays);
    let _ = writeln!(s, "\n## Top operators (Kineto, profiled pass)\n");
    top_operators(s, &k.top_operators, !k.top_kernels.is_empty(), replays);
    let _ = writeln!(s, "\n## Top kernels (Kineto, profiled pass)\n");
    top_kernels(s, &k.top_kernels);
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

fn opt_ms(v: Option<f64>) -> String {
    v.map_or_else(|| "—".into(), |v| format!("{v:.3}"))
}

/// Self CUDA and self CPU time of an operator row (`None` for rows of an older metrics.json
/// that only has the mixed `total_ms`).
fn split_times(row: &TopRow) -> Option<(Option<f64>, Option<f64>)> {
    match (row.self_cuda_ms, row.self_cpu_ms) {
        (None, None) => None,
        (cuda, cpu) => Some((cuda, cpu)),
    }
}

/// `gpu_work`: the profile holds GPU work (else every operator's time is CPU time).
/// `graph_replays`: decode steps replayed from CUDA graphs in this run.
fn top_operators(s: &mut String, rows: &[TopRow], gpu_work: bool, graph_replays: u64) {
    if rows.is_empty() {
        let _ = writeln!(s, "No operators recorded.");
        return;
    }
    let split: Option<Vec<_>> = rows.iter().map(split_times).collect();
    match (&split, gpu_work) {
        (Some(_), _) => {
            let _ = writeln!(s, "Self = the operator's own time, without the operators nested in it; self CUDA = GPU work it launched itself. Sorted by self CUDA time, then total CPU time.\n");
            let _ = writeln!(
                s,
                "| operator | calls | self CUDA ms | self CPU ms |\n|---|---:|---:|---:|"
            );
        }
        (None, true) => {
            let _ = writeln!(s, "Self CUDA = GPU work the operator launched itself (not the work of operators nested in it). An operator that launched no GPU work shows its self CPU time instead; sorted by self CUDA time, such rows come last.\n");
            let _ = writeln!(
                s,
                "| operator | calls | self CUDA ms (else self CPU ms) |\n|---|---:|---:|"
            );
        }
        (None, false) => {
            let _ = writeln!(s, "No GPU work in the profiled pass: self CPU = the operator's own time, without the operators nested in it. Sorted by total CPU time (nested operators included), so a wrapper can rank high with a small self time.\n");
            let _ = writeln!(s, "| operator | calls | self CPU ms |\n|---|---:|---:|");
        }
    }
    for (i, row) in rows.iter().enumerate() {
        let times = match split.as_ref().map(|t| t[i]) {
            Some((cuda, cpu)) => format!("{} | {}", opt_ms(cuda), opt_ms(cpu)),
            None => format!("{:.3}", row.total_ms),
        };
        let _ = writeln!(s, "| `{}` | {} | {times} |", cell(&row.name), row.calls);
    }
    if graph_replays > 0 {
        let _ = writeln!(s, "\nDecode steps replayed from CUDA graphs ({graph_replays} replays in this run) launch their kernels from one `cudaGraphLaunch`: Kineto cannot tell which operator a replayed kernel belongs to, so their GPU time is charged to `cudaGraphLaunch` and the decode step's operators show only the eager steps. The top kernels below include the replayed ones.");
    }
}

fn top_kernels(s: &mut String, rows: &[TopRow]) {
    if rows.is_empty() {
        let _ = writeln!(
            s,
            "No GPU work in the profiled pass (kernels, memcpy, memset)."
        );
    } else {
        let _ = writeln!(s, "Total = summed duration of the kernel's launches; share = of all GPU work in the profiled pass. Names are shortened (kernels.json and trace.json hold the full ones).\n");
        let with_modules = rows.iter().any(|r| !r.modules.is_empty());
        let _ = writeln!(
            s,
            "| kernel | stage |{} calls | total ms | share of GPU time |\n|---|---|{}---:|---:|---:|",
            if with_modules { " module |" } else { "" },
            if with_modules { "---|" } else { "" }
        );
        let names = distinct_short_names(rows.iter().map(|r| r.name.as_str()));
        for (r, name) in rows.iter().zip(&names) {
            let module = match (with_modules, modules_label(&r.modules)) {
                (false, _) => String::new(),
                (true, None) => " — |".into(),
                (true, Some(m)) => format!(" {} |", cell(&m)),
            };
            let _ = writeln!(
                s,
                "| `{}` | {} |{module} {} | {:.3} | {} |",
                cell(name),
                cell(r.stage.as_deref().unwrap_or("—")),
                r.calls,
                r.total_ms,
                r.share_pct
                    .map_or_else(|| "—".into(), |p| format!("{p:.1} %"))
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, stage: Option<&str>, total_ms: f64, share: Option<f64>) -> TopRow {
        TopRow {
            name: name.into(),
            stage: stage.map(Into::into),
            calls: 3,
            total_ms,
            share_pct: share,
            modules: Vec::new(),
            self_cuda_ms: None,
            self_cpu_ms: None,
        }
    }

    #[test]
    fn operator_columns_say_which_time_they_hold() {
        let ops = [row("aten::add", None, 64.184, None)];
        let mut cpu = String::new();
        top_operators(&mut cpu, &ops, false, 0);
        assert!(cpu.contains("| operator | calls | self CPU ms |"), "{cpu}");
        assert!(cpu.contains("| `aten::add` | 3 | 64.184 |"), "{cpu}");
        assert!(!cpu.contains("total ms"));

        let mut gpu = String::new();
        top_operators(&mut gpu, &ops, true, 0);
        assert!(gpu.contains("| self CUDA ms (else self CPU ms) |"), "{gpu}");
        assert!(!gpu.contains("cudaGraphLaunch"));
    }

    #[test]
    fn graph_replays_say_where_op_attribution_is_lost() {
        let mut s = String::new();
        top_operators(
            &mut s,
            &[row("cudaGraphLaunch", None, 9.0, None)],
            true,
            120,
        );
        assert!(s.contains("120 replays"), "{s}");
        assert!(s.contains("Kineto cannot tell which operator"), "{s}");
    }

    #[test]
    fn kernels_appear_short_with_their_share() {
        let long = "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4, 4>)";
        let mut s = String::new();
        top_kernels(&mut s, &[row(long, Some("decode_step"), 0.295, Some(4.7))]);
        assert!(s.contains(
            "| `at::native::reduce_kernel<512, 1, ReduceOp<float, func_wrapper_t<float, …>, …>>` | decode_step | 3 | 0.295 | 4.7 % |"
        ), "{s}");
        assert!(!s.contains("module"), "{s}");
        let mut none = String::new();
        top_kernels(&mut none, &[]);
        assert!(none.starts_with("No GPU work"));
        // With module attribution, the module that ran the kernel most, and how many others.
        let mut gemv = row("gemv", Some("decode_step"), 1.0, Some(50.0));
        gemv.modules = vec!["layer.attention.qkv".into(), "lm_head".into()];
        let mut m = String::new();
        top_kernels(&mut m, &[gemv, row("copy", Some("prefill"), 0.5, None)]);
        assert!(m.contains("| kernel | stage | module | calls |"), "{m}");
        assert!(
            m.contains("| `gemv` | decode_step | layer.attention.qkv +1 | 3 | 1.000 | 50.0 % |"),
            "{m}"
        );
        assert!(m.contains("| `copy` | prefill | — | 3 |"), "{m}");
    }
}
