//! Utilisation: MFU per stage against the datasheet peak and against the peak at the SM clock
//! NVML saw in the stage's window, MBU of decode, and the peaks behind them.
use super::load::RunArtifacts;
use super::page::{chart, esc, no_data, Section};
use super::plots::{base_layout, marker_color};
use super::table::key_values;
use crate::report::RunReport;
use plotly::common::{Marker, Title};
use plotly::layout::{Axis, BarMode};
use plotly::{Bar, Plot};

pub fn section(a: &RunArtifacts) -> Section {
    let title = "Utilisation (MFU / MBU)";
    let Some(m) = &a.metrics else {
        return Section::new(
            "util",
            title,
            no_data("no metrics.json in this run directory"),
        );
    };
    let u = &m.utilisation;
    let mut body = String::new();
    if u.mfu.is_empty() && u.mbu_decode.is_none() {
        let why = u
            .unavailable
            .clone()
            .unwrap_or_else(|| "metrics.json has no MFU or MBU".into());
        body.push_str(&no_data(&why));
    } else {
        body.push_str(&chart("chart-util", &plot(m)));
        if let Some(why) = &u.unavailable {
            body.push_str(&format!("<p class=\"note\">{}</p>\n", esc(why)));
        }
    }
    if let Some(p) = &m.peaks {
        let mut rows = vec![
            ("GPU".to_string(), p.gpu_name.clone()),
            ("precision".to_string(), p.precision.clone()),
            (
                "datasheet peak".to_string(),
                format!(
                    "{:.1} TFLOP/s dense{}",
                    p.peak_tflops,
                    p.clock_mhz
                        .map(|c| format!(" at {c:.0} MHz"))
                        .unwrap_or_default()
                ),
            ),
            (
                "peak DRAM bandwidth".to_string(),
                format!("{:.0} GB/s", p.peak_bandwidth_gbs),
            ),
            ("source".to_string(), p.source.clone()),
        ];
        for (stage, w) in &p.at_window_clock {
            rows.push((
                format!("peak at the {stage} clock"),
                format!(
                    "{:.1} TFLOP/s at {:.0} MHz (NVML mean)",
                    w.peak_tflops, w.sm_clock_mhz
                ),
            ));
        }
        body.push_str(&key_values(&rows));
    }
    body.push_str("<p class=\"note\">MFU = analytic FLOPs ÷ (mean stage time × peak dense FLOP/s); MBU = decode bytes per step ÷ mean step time ÷ peak DRAM bandwidth (assumptions.md).</p>\n");
    Section::new("util", title, body)
}

fn plot(m: &RunReport) -> Plot {
    let u = &m.utilisation;
    let mut plot = Plot::new();
    let pct = |v: f64| v * 100.0;
    let (x, y): (Vec<String>, Vec<f64>) = u
        .mfu
        .iter()
        .map(|(k, v)| (format!("MFU {k}"), pct(*v)))
        .unzip();
    if !x.is_empty() {
        plot.add_trace(
            Bar::new(x, y)
                .name("vs datasheet peak")
                .marker(Marker::new().color(marker_color(0))),
        );
    }
    let (x, y): (Vec<String>, Vec<f64>) = u
        .mfu_at_window_clock
        .iter()
        .map(|(k, v)| (format!("MFU {k}"), pct(*v)))
        .unzip();
    if !x.is_empty() {
        plot.add_trace(
            Bar::new(x, y)
                .name("vs peak at the achieved clock")
                .marker(Marker::new().color(marker_color(1))),
        );
    }
    if let Some(mbu) = u.mbu_decode {
        plot.add_trace(
            Bar::new(vec!["MBU decode".to_string()], vec![pct(mbu)])
                .name("MBU vs datasheet bandwidth")
                .marker(Marker::new().color(marker_color(2))),
        );
    }
    plot.set_layout(
        base_layout("Utilisation per stage")
            .bar_mode(BarMode::Group)
            .y_axis(Axis::new().title(Title::with_text("% of peak"))),
    );
    plot
}
