//! Stage 2's Nsight Compute view: the roofline, GPU time by bound class, histograms of the ncu
//! metrics across the profiled kernels, and the kernel table.
use super::load::RunArtifacts;
use super::page::{chart, no_data, Section};
use super::plots::{base_layout, marker_color};
use super::table::{num, text, Cell, Table};
use crate::measure::kernel_names::short_name;
use crate::nsight::ncu::analysis::NcuAnalysis;
use crate::nsight::ncu::metrics::KernelMetrics;
use plotly::common::{Marker, Title};
use plotly::layout::Axis;
use plotly::{Bar, Histogram, Plot};

/// Reads one ncu metric of a kernel.
type Metric = fn(&KernelMetrics) -> Option<f64>;

pub fn section(a: &RunArtifacts) -> Section {
    let title = "Kernels under Nsight Compute (roofline)";
    let Some(n) = &a.ncu else {
        let why = if a.has(crate::report::artifacts::NCU_KERNELS_JSON) {
            "ncu_kernels.json is here but the ncu/ CSV folder it was built from is not"
        } else {
            "no ncu/ folder in this run directory (stage 2 with pipeline.ncu.enable=true writes it)"
        };
        return Section::new("ncu", title, no_data(why));
    };
    let mut body = super::roofline::html(&n.roofline);
    body.push_str("<div class=\"grid\">\n");
    body.push_str(&chart("chart-bound-share", &bound_share(n)));
    body.push_str(
        "</div>\n<h3>Metric distributions across the profiled kernels</h3>\n<div class=\"grid\">\n",
    );
    let hists: [(&str, &str, Metric); 5] = [
        ("chart-hist-occupancy", "achieved occupancy %", |k| {
            k.achieved_occupancy_pct
        }),
        ("chart-hist-sm", "SM throughput % of peak", |k| {
            k.sm_throughput_pct
        }),
        ("chart-hist-dram", "DRAM throughput % of peak", |k| {
            k.dram_throughput_pct
        }),
        ("chart-hist-tensor", "tensor pipe %", |k| k.tensor_pipe_pct),
        (
            "chart-hist-intensity",
            "log10 arithmetic intensity (FLOP/byte)",
            |k| k.arithmetic_intensity.filter(|v| *v > 0.0).map(f64::log10),
        ),
    ];
    for (k, (id, label, f)) in hists.iter().enumerate() {
        let values: Vec<f64> = n.kernels.iter().filter_map(f).collect();
        if values.is_empty() {
            body.push_str(&no_data(&format!("{label}: no kernel has it")));
            continue;
        }
        let mut plot = Plot::new();
        plot.add_trace(
            Histogram::new(values)
                .name(*label)
                .marker(Marker::new().color(marker_color(k))),
        );
        plot.set_layout(
            base_layout(label)
                .height(300)
                .x_axis(Axis::new().title(Title::with_text(*label)))
                .y_axis(Axis::new().title(Title::with_text("kernels"))),
        );
        body.push_str(&chart(id, &plot));
    }
    body.push_str("</div>\n<h3>Profiled kernels</h3>\n");
    body.push_str(&table(n).html());
    Section::new("ncu", title, body)
}

fn bound_share(n: &NcuAnalysis) -> Plot {
    let mut plot = Plot::new();
    for s in &n.roofline.summary {
        plot.add_trace(
            Bar::new(vec![s.class.label().to_string()], vec![s.share_pct])
                .name(format!("{} ({} kernels)", s.class.label(), s.kernels))
                .hover_text(format!(
                    "{:.1} µs in {} kernels",
                    s.time_ns / 1e3,
                    s.kernels
                ))
                .marker(Marker::new().color(s.class.color())),
        );
    }
    plot.set_layout(
        base_layout("GPU time by bound class")
            .y_axis(Axis::new().title(Title::with_text("% of profiled GPU time"))),
    );
    plot
}

fn table(n: &NcuAnalysis) -> Table {
    let mut t = Table::new(
        "table-ncu",
        vec![
            text("kernel"),
            text("stage"),
            num("time µs"),
            num("SM %"),
            num("DRAM %"),
            num("occupancy %"),
            num("tensor %"),
            num("FLOP/byte"),
            num("TFLOP/s"),
            num("SM MHz"),
            text("bound"),
        ],
    );
    for (k, row) in n.kernels.iter().zip(&n.roofline.rows) {
        t.push(vec![
            Cell::named(short_name(&k.kernel_name), k.kernel_name.clone()),
            Cell::text(k.nvtx_range.clone().unwrap_or_default()),
            Cell::num(k.duration_ns.map(|v| v / 1e3), 2),
            Cell::num(k.sm_throughput_pct, 1),
            Cell::num(k.dram_throughput_pct, 1),
            Cell::num(k.achieved_occupancy_pct, 1),
            Cell::num(k.tensor_pipe_pct, 1),
            Cell::num(k.arithmetic_intensity, 2),
            Cell::num(row.point.flops_per_s().map(|f| f / 1e12), 3),
            Cell::num(k.sm_clock_hz.map(|v| v / 1e6), 0),
            Cell::named(row.bound.class.label(), row.bound.reason.clone()),
        ]);
    }
    t
}
