//! Renders a [`RooflineReport`] as the `roofline.md` tables: the datasheet peaks, per-kernel rows
//! (executed and useful intensity, the ridge at the kernel's measured clocks), time summary.

use std::fmt::Write;

use super::RooflineReport;
use crate::measure::kernel_names::short_name_within;
use crate::measure::peaks::ClockSource;

fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

fn num(v: Option<f64>, digits: usize) -> String {
    v.map(|v| format!("{v:.digits$}"))
        .unwrap_or_else(|| "—".into())
}

fn sci(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.3e}")).unwrap_or_else(|| "—".into())
}

fn clock(mhz: Option<f64>, source: Option<ClockSource>) -> String {
    match (mhz, source) {
        (Some(m), Some(ClockSource::Measured)) => format!("{m:.0}"),
        (Some(m), _) => format!("{m:.0} rated"),
        _ => "—".into(),
    }
}

/// The markdown for `report`.
pub fn render(report: &RooflineReport) -> String {
    let mut out = String::new();
    out.push_str("## Roofline\n\n");
    match &report.peaks {
        Some(p) => {
            let sku = p
                .sku
                .as_deref()
                .map(|s| format!(", SKU table row {s}"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "GPU: {} ({:?}, {} SMs{sku}). Datasheet peaks (dense, at the rated clocks: FP32 at SM {:.0} MHz, tensor at {:.0} MHz): FP32 {:.1} TFLOP/s, BF16 {}, FP16 {:.1}, TF32 {}, FP8 {} TFLOP/s; DRAM {:.2} TB/s at {:.0} MHz.{}\n",
                p.gpu_name,
                p.arch,
                p.sm_count,
                p.sm_clock_mhz,
                p.tensor_clock_mhz,
                p.fp32_flops_per_s / 1e12,
                num(p.bf16_flops_per_s.map(|v| v / 1e12), 1),
                p.fp16_flops_per_s / 1e12,
                num(p.tf32_flops_per_s.map(|v| v / 1e12), 1),
                num(p.fp8_flops_per_s.map(|v| v / 1e12), 1),
                p.dram_bytes_per_s / 1e12,
                p.dram_clock_mhz,
                if p.geforce_half_rate { " GeForce: FP32-accumulate tensor rates at half speed." } else { "" }
            );
            out.push_str("Roofs and ridges are per kernel, at the SM and DRAM clocks ncu measured over that kernel (columns SM MHz and DRAM MHz; \"rated\" where the export has no clock). ncu locks the clocks to base unless pipeline.ncu.clock_control=none.\n\n");
            let _ = writeln!(out, "Source of the per-SM rates: {}.\n", p.source);
        }
        None => {
            let _ = writeln!(
                out,
                "GPU peaks unknown: {}. Intensities are reported; bounds are not.\n",
                report.peaks_note
            );
        }
    }
    out.push_str("Executed FLOPs are ncu's counts: tensor-pipe ops include tile padding (a batch-1 GEMV on an n=8 tile executes 8× its math). Useful FLOP/B is the analytic FLOPs of the kernel's module per DRAM byte, where stage 1's module attribution gives the kernel one module whose FLOPs are its alone (docs/modules.md).\n\n");
    out.push_str("| kernel | stage | module | precision | executed FLOPs | time (µs) | executed FLOP/B | useful FLOP/B | ridge | SM MHz | DRAM MHz | SM % | DRAM % | bound | why |\n");
    out.push_str("|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n");
    for r in &report.rows {
        let p = &r.point;
        let b = &r.bound;
        let useful = match (p.useful_intensity(), &p.useful_op) {
            (Some(v), Some(op)) => format!("{v:.2} ({})", cell(op)),
            (Some(v), None) => format!("{v:.2}"),
            _ => "—".into(),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {useful} | {} | {} | {} | {} | {} | {} | {} |",
            cell(&short_name_within(&p.name, 60)),
            cell(p.stage.as_deref().unwrap_or("—")),
            cell(
                &crate::measure::op_tables::modules_label(&p.modules).unwrap_or_else(|| "—".into())
            ),
            p.precision.map(|x| x.name()).unwrap_or("—"),
            sci(p.executed_flops),
            num(p.duration_ns.map(|ns| ns / 1e3), 2),
            num(p.executed_intensity, 2),
            num(b.ridge_intensity, 1),
            clock(b.ridge_sm_clock_mhz, b.ridge_sm_clock_source),
            clock(b.ridge_dram_clock_mhz, b.ridge_dram_clock_source),
            num(p.sm_pct, 1),
            num(p.dram_pct, 1),
            b.class.label(),
            cell(&b.reason),
        );
    }
    let why_not: Vec<String> = report
        .rows
        .iter()
        .filter_map(|r| {
            let why = r.point.useful_why_not.as_deref()?;
            Some(format!(
                "- {}: {why}\n",
                cell(&short_name_within(&r.point.name, 60))
            ))
        })
        .collect();
    if !why_not.is_empty() {
        out.push_str("\nNo useful FLOPs for:\n\n");
        for line in why_not {
            out.push_str(&line);
        }
    }
    out.push_str("\n### GPU time by bound\n\n| bound | kernels | time (µs) | share |\n|---|---:|---:|---:|\n");
    for s in &report.summary {
        let _ = writeln!(
            out,
            "| {} | {} | {:.2} | {:.1} % |",
            s.class.label(),
            s.kernels,
            s.time_ns / 1e3,
            s.share_pct
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_unknown_peaks() {
        let report = super::super::RooflineReport::build(
            vec![],
            None,
            "no device attributes and no --gpu".into(),
            &Default::default(),
        );
        let md = render(&report);
        assert!(
            md.contains("GPU peaks unknown: no device attributes and no --gpu"),
            "{md}"
        );
        assert!(md.contains("| kernel | stage |"));
        assert!(md.contains("executed FLOP/B | useful FLOP/B"), "{md}");
    }
}
