//! NVML over the run: power, SM and memory clocks, utilisation, memory used and temperature
//! against time, each request's stage windows shaded, and throttle events marked.
use super::load::RunArtifacts;
use super::page::{chart, esc, no_data, Section};
use super::plots::{base_layout, marker_color};
use crate::measure::nvml::NvmlSample;
use crate::report::StageWindow;
use plotly::common::{DashType, Marker, MarkerSymbol, Mode, Title};
use plotly::layout::{Axis, GridPattern, LayoutGrid, Shape, ShapeLayer, ShapeLine, ShapeType};
use plotly::{Plot, Scatter};

/// NVML's clock-throttle reason bits (`nvmlClocksThrottleReasons`), by name.
pub const THROTTLE_REASONS: [(u64, &str); 9] = [
    (0x1, "GPU idle"),
    (0x2, "applications clocks setting"),
    (0x4, "software power cap"),
    (0x8, "hardware slowdown"),
    (0x10, "sync boost"),
    (0x20, "software thermal slowdown"),
    (0x40, "hardware thermal slowdown"),
    (0x80, "hardware power brake"),
    (0x100, "display clock setting"),
];

/// The names of the bits set in `reasons`, GPU idle left out (an idle GPU is not throttled).
pub fn throttle_names(reasons: u64) -> Vec<&'static str> {
    THROTTLE_REASONS
        .iter()
        .filter(|(bit, _)| *bit != 0x1 && reasons & bit != 0)
        .map(|(_, n)| *n)
        .collect()
}

/// Samples where a throttle reason (other than idle) starts or changes: (index, names).
pub fn throttle_events(samples: &[NvmlSample]) -> Vec<(usize, Vec<&'static str>)> {
    let mut out = Vec::new();
    let mut previous = 0u64;
    for (i, s) in samples.iter().enumerate() {
        let now = s.throttle_reasons.unwrap_or(0) & !0x1;
        if now != 0 && now != previous {
            out.push((i, throttle_names(now)));
        }
        previous = now;
    }
    out
}

/// Reads one value of a sample.
type Field = dyn Fn(&NvmlSample) -> Option<f64>;
/// One row of the chart: its y axis, the axis title, the lines drawn on it.
type Panel<'a> = (&'a str, &'a str, Vec<(&'a str, &'a Field)>);

pub fn section(a: &RunArtifacts) -> Section {
    let title = "GPU telemetry (NVML)";
    let samples = a.nvml.as_ref().map(|t| t.samples.as_slice()).unwrap_or(&[]);
    if samples.is_empty() {
        let why = a
            .nvml_note
            .clone()
            .unwrap_or_else(|| "no nvml.csv samples in this run directory".into());
        return Section::new("nvml", title, no_data(&why));
    }
    let windows: Vec<StageWindow> = a
        .metrics
        .as_ref()
        .map(|m| {
            m.requests
                .iter()
                .flat_map(|r| r.windows.iter().cloned())
                .collect()
        })
        .unwrap_or_default();
    let events = throttle_events(samples);
    let mut body = chart("chart-nvml", &plot(samples, &windows, &events));
    body.push_str(&format!(
        "<p class=\"note\">{} samples. Shaded: {}. Red dotted lines: throttle reasons starting or changing ({}).</p>\n",
        samples.len(),
        if windows.is_empty() {
            "nothing (metrics.json records no stage windows: written before they were added, or no timed request)".to_string()
        } else {
            "the prefill (orange) and decode (blue) windows of every timed request".to_string()
        },
        if events.is_empty() {
            "none".to_string()
        } else {
            format!("{} events", events.len())
        }
    ));
    if !events.is_empty() {
        body.push_str("<ul class=\"note\">\n");
        let t0 = samples[0].unix_ns;
        for (i, names) in events.iter().take(20) {
            body.push_str(&format!(
                "<li>{:.2} s: {}</li>\n",
                secs(samples[*i].unix_ns, t0),
                esc(&names.join(", "))
            ));
        }
        body.push_str("</ul>\n");
    }
    Section::new("nvml", title, body)
}

fn secs(ns: u64, t0: u64) -> f64 {
    (ns as f64 - t0 as f64) / 1e9
}

fn plot(samples: &[NvmlSample], windows: &[StageWindow], events: &[(usize, Vec<&str>)]) -> Plot {
    let t0 = samples[0].unix_ns;
    let t: Vec<f64> = samples.iter().map(|s| secs(s.unix_ns, t0)).collect();
    let series = |f: &dyn Fn(&NvmlSample) -> Option<f64>| -> (Vec<f64>, Vec<f64>) {
        t.iter()
            .zip(samples)
            .filter_map(|(x, s)| Some((*x, f(s)?)))
            .unzip()
    };
    let mut plot = Plot::new();
    let rows: [Panel; 5] = [
        (
            "y",
            "power W",
            vec![
                ("power", &|s: &NvmlSample| {
                    s.power_mw.map(|v| v as f64 / 1e3)
                }),
                ("power (instant)", &|s: &NvmlSample| {
                    s.power_instant_mw.map(|v| v as f64 / 1e3)
                }),
            ],
        ),
        (
            "y2",
            "clock MHz",
            vec![
                ("SM clock", &|s: &NvmlSample| s.sm_clock_mhz.map(f64::from)),
                ("memory clock", &|s: &NvmlSample| {
                    s.mem_clock_mhz.map(f64::from)
                }),
            ],
        ),
        (
            "y3",
            "util %",
            vec![
                ("GPU util", &|s: &NvmlSample| s.gpu_util_pct.map(f64::from)),
                ("memory util", &|s: &NvmlSample| {
                    s.mem_util_pct.map(f64::from)
                }),
            ],
        ),
        (
            "y4",
            "memory GiB",
            vec![("memory used", &|s: &NvmlSample| {
                s.mem_used_bytes.map(|b| b as f64 / (1u64 << 30) as f64)
            })],
        ),
        (
            "y5",
            "°C",
            vec![("temperature", &|s: &NvmlSample| {
                s.temperature_c.map(f64::from)
            })],
        ),
    ];
    for (axis, _, lines) in &rows {
        for (name, f) in lines {
            let (x, y) = series(*f);
            if x.is_empty() {
                continue;
            }
            plot.add_trace(
                Scatter::new(x, y)
                    .name(*name)
                    .mode(Mode::Lines)
                    .x_axis("x")
                    .y_axis(*axis),
            );
        }
    }
    let mut shapes: Vec<Shape> = Vec::new();
    for w in windows {
        let color = if w.stage == "prefill" {
            marker_color(1)
        } else {
            marker_color(0)
        };
        shapes.push(
            Shape::new()
                .shape_type(ShapeType::Rect)
                .x_ref("x")
                .y_ref("paper")
                .x0(secs(w.start_unix_ns, t0))
                .x1(secs(w.end_unix_ns, t0))
                .y0(0.0)
                .y1(1.0)
                .fill_color(color)
                .opacity(0.15)
                .layer(ShapeLayer::Below)
                .line(ShapeLine::new().width(0.0)),
        );
    }
    let (ex, ey): (Vec<f64>, Vec<f64>) = events
        .iter()
        .map(|(i, _)| {
            (
                t[*i],
                samples[*i].sm_clock_mhz.map(f64::from).unwrap_or(0.0),
            )
        })
        .unzip();
    for x in &ex {
        shapes.push(
            Shape::new()
                .shape_type(ShapeType::Line)
                .x_ref("x")
                .y_ref("paper")
                .x0(*x)
                .x1(*x)
                .y0(0.0)
                .y1(1.0)
                .line(
                    ShapeLine::new()
                        .color("#d62728")
                        .width(1.0)
                        .dash(DashType::Dot),
                ),
        );
    }
    if !ex.is_empty() {
        let text: Vec<String> = events.iter().map(|(_, n)| n.join(", ")).collect();
        plot.add_trace(
            Scatter::new(ex, ey)
                .name("throttle")
                .mode(Mode::Markers)
                .hover_text_array(text)
                .marker(
                    Marker::new()
                        .symbol(MarkerSymbol::X)
                        .size(10)
                        .color("#d62728"),
                )
                .x_axis("x")
                .y_axis("y2"),
        );
    }
    let axis = |title: &str| Axis::new().title(Title::with_text(title));
    plot.set_layout(
        base_layout("NVML telemetry")
            .height(900)
            .grid(
                LayoutGrid::new()
                    .rows(5)
                    .columns(1)
                    .pattern(GridPattern::Coupled),
            )
            .x_axis(axis("seconds since the first sample"))
            .y_axis(axis(rows[0].1))
            .y_axis2(axis(rows[1].1))
            .y_axis3(axis(rows[2].1))
            .y_axis4(axis(rows[3].1))
            .y_axis5(axis(rows[4].1))
            .shapes(shapes),
    );
    plot
}
