//! operators.md and kernels.md: the full operator and kernel tables as markdown. Column titles
//! say what each holds; kernels appear under their short names (`measure::kernel_names`), the
//! full names stay in kernels.json and trace.json.
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::{kernel_table, modules_label, operator_table, Attribution, KernelRow, OperatorRow};
use crate::measure::kernel_names::distinct_short_names;
use crate::measure::kineto_events::ProfileEvents;

fn ms(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

/// Escapes `|` so names with template arguments stay inside their cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

/// `operators.md`: one markdown table, times in milliseconds.
pub fn render_operators_md(rows: &[OperatorRow]) -> String {
    let mut out = String::from(
        "# Operators\n\nSorted by self CUDA time, then total CPU time. Self = the op's own time, \
         without the host events nested in it; total = the op with everything nested in it, \
         outermost instances only (no double counting). CUDA time = GPU work the op launched \
         (correlation ids); work replayed from a CUDA graph is charged to `cudaGraphLaunch`.\n\n\
         | operator | kind | calls | self CPU ms | total CPU ms | self CUDA ms | total CUDA ms | GFLOP |\n\
         |---|---|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in rows {
        let gflop = if r.flops == 0 {
            "".to_string()
        } else {
            format!("{:.3}", r.flops as f64 / 1e9)
        };
        let _ = writeln!(
            out,
            "| {} | {:?} | {} | {} | {} | {} | {} | {} |",
            cell(&r.name),
            r.kind,
            r.calls,
            ms(r.self_cpu_ns),
            ms(r.total_cpu_ns),
            ms(r.self_cuda_ns),
            ms(r.total_cuda_ns),
            gflop
        );
    }
    out
}

/// `kernels.md`: one markdown table, times in milliseconds, kernels under their short names.
pub fn render_kernels_md(rows: &[KernelRow]) -> String {
    let with_modules = rows.iter().any(|r| !r.modules.is_empty());
    let mut out = String::from(
        "# Kernels\n\nGPU work (kernels, memcpy, memset) per stage, sorted by total time. Share = \
         total ÷ summed duration of all GPU work. Kernel names are shortened to the function and \
         the head of its template arguments; kernels.json and trace.json hold the full names.",
    );
    out.push_str(match with_modules {
        true => " Module: the module that ran the kernel most (`+N`: and N others; kernels.json lists them; docs/modules.md).\n\n\
                 | stage | module | kernel | calls | total ms | mean ms | share |\n|---|---|---|---:|---:|---:|---:|\n",
        false => "\n\n| stage | kernel | calls | total ms | mean ms | share |\n|---|---|---:|---:|---:|---:|\n",
    });
    let names = distinct_short_names(rows.iter().map(|r| r.name.as_str()));
    for (r, name) in rows.iter().zip(&names) {
        let module = match (with_modules, modules_label(&r.modules)) {
            (false, _) => String::new(),
            (true, None) => " — |".to_string(),
            (true, Some(m)) => format!(" {} |", cell(&m)),
        };
        let _ = writeln!(
            out,
            "| {} |{module} `{}` | {} | {} | {:.4} | {:.1}% |",
            cell(r.stage.as_deref().unwrap_or("(none)")),
            cell(name),
            r.calls,
            ms(r.total_ns),
            r.mean_ns / 1e6,
            r.share_of_gpu * 100.0
        );
    }
    out
}

/// Writes `operators.md` and `kernels.md` into `dir`; returns their paths.
pub fn write_tables(events: &ProfileEvents, dir: &Path) -> Result<(PathBuf, PathBuf)> {
    let attribution = Attribution::new(events);
    let ops_path = dir.join(crate::run_files::OPERATORS_MD);
    let kernels_path = dir.join(crate::run_files::KERNELS_MD);
    std::fs::write(
        &ops_path,
        render_operators_md(&operator_table(events, &attribution)),
    )
    .with_context(|| format!("writing {}", ops_path.display()))?;
    std::fs::write(
        &kernels_path,
        render_kernels_md(&kernel_table(events, &attribution)),
    )
    .with_context(|| format!("writing {}", kernels_path.display()))?;
    Ok((ops_path, kernels_path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_tables_render() {
        let json = include_str!("../../../../tests/fixtures/kineto/h100_decode_step_slice.json");
        let ev = ProfileEvents::from_chrome_trace(json).expect("fixture parses");
        let att = Attribution::new(&ev);
        let ops_md = render_operators_md(&operator_table(&ev, &att));
        assert!(ops_md.contains("| self CPU ms | total CPU ms | self CUDA ms | total CUDA ms |"));
        assert!(ops_md.contains("| aten::mm | Op | 3 | 3.852 | 4.039 | 4.146 | 4.146 |  |"));
        let k_md = render_kernels_md(&kernel_table(&ev, &att));
        assert!(k_md.contains(
            "| decode_step | `nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopB_NNT` | 3 | 4.143 | 1.3810 | 66.7% |"
        ));
        // Template-heavy names appear short; no 600-character cells.
        assert!(k_md.contains(
            "| decode_step | `at::native::reduce_kernel<512, 1, ReduceOp<float, func_wrapper_t<float, …>, …>>` | 3 |"
        ));
        assert!(
            k_md.lines()
                .filter(|l| l.starts_with('|'))
                .all(|l| l.chars().count() < 130),
            "{k_md}"
        );
        assert!(
            !k_md.contains("| module |"),
            "no module column without modules"
        );
        // With modules: the one with the most time, and how many others.
        let mut rows = kernel_table(&ev, &att);
        rows[0].modules = vec!["layer.mlp.gate_up".into(), "lm_head".into()];
        rows[1].modules = vec!["layer.attention.core".into()];
        let k_md = render_kernels_md(&rows);
        assert!(
            k_md.contains("| stage | module | kernel | calls |"),
            "{k_md}"
        );
        assert!(k_md.contains("| decode_step | layer.mlp.gate_up +1 | `nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopB_NNT` | 3 |"), "{k_md}");
        assert!(k_md.contains("| layer.attention.core | `"), "{k_md}");
        assert!(k_md.contains("| decode_step | — | `"), "{k_md}");
    }
}
