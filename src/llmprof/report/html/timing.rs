//! Where the time goes: a stacked bar per timed request (the model's sub-stages of prefill, the
//! rest of prefill, decode), the distributions of stage times and serving metrics (box per
//! stage with p50/p90/p99 marked), and decode over time (every inter-token gap of each request).
use super::load::RunArtifacts;
use super::page::{chart, no_data, Section};
use super::plots::{base_layout, marker_color};
use crate::region::{RegionTree, DECODE, PREFILL};
use crate::report::{RequestRecord, RunReport, StageStats};
use plotly::box_plot::BoxPoints;
use plotly::common::{DashType, Line, Marker, MarkerSymbol, Mode, Title};
use plotly::layout::{Axis, AxisType, BarMode};
use plotly::{Bar, BoxPlot, Plot, Scatter};

/// Label of one request on an x axis: its inputs and repeat, cut to stay legible.
pub fn request_label(i: usize, r: &RequestRecord) -> String {
    let mut name: String = r.input.chars().take(28).collect();
    if name.len() < r.input.len() {
        name.push('…');
    }
    format!(
        "{i}: {name} #{}{}",
        r.repeat,
        if r.cold { " (cold)" } else { "" }
    )
}

/// The disjoint parts of a request's time, in stacking order: the regions inside prefill that
/// have no region inside them (a model's encoder sub-stages), the rest of prefill, decode.
/// Without the model's region tree: prefill and decode.
pub fn time_parts(regions: Option<&RegionTree>, r: &RequestRecord) -> Vec<(String, f64)> {
    let mut parts: Vec<(String, f64)> = Vec::new();
    let prefill = r.stage_ms.get(PREFILL.nvtx_name()).copied();
    if let (Some(tree), Some(prefill)) = (regions, prefill) {
        let present = |name: &str| r.stage_ms.contains_key(name);
        let leaves: Vec<&str> = tree
            .all()
            .iter()
            .filter(|reg| **reg != PREFILL && tree.is_within(**reg, PREFILL))
            .filter(|reg| present(reg.nvtx_name()))
            .filter(|reg| {
                !tree
                    .all()
                    .iter()
                    .any(|c| c.parent_name() == Some(reg.nvtx_name()) && present(c.nvtx_name()))
            })
            .map(|reg| reg.nvtx_name())
            .collect();
        let mut inside = 0.0;
        for l in leaves {
            let ms = r.stage_ms[l];
            inside += ms;
            parts.push((l.to_string(), ms));
        }
        let label = if parts.is_empty() {
            PREFILL.nvtx_name().to_string()
        } else {
            format!("{} (other)", PREFILL.nvtx_name())
        };
        parts.push((label, (prefill - inside).max(0.0)));
    } else if let Some(p) = prefill {
        parts.push((PREFILL.nvtx_name().to_string(), p));
    }
    if let Some(d) = r.stage_ms.get(DECODE.nvtx_name()) {
        parts.push((DECODE.nvtx_name().to_string(), *d));
    }
    parts
}

pub fn section(a: &RunArtifacts) -> Section {
    let Some(m) = &a.metrics else {
        return Section::new(
            "time",
            "Where the time goes",
            no_data(
                "no metrics.json in this run directory (only stage 1 writes per-request timings)",
            ),
        );
    };
    if m.requests.is_empty() {
        return Section::new(
            "time",
            "Where the time goes",
            no_data("metrics.json lists no timed request"),
        );
    }
    let regions = a.spec.as_ref().map(|s| s.model.family.regions());
    let mut body = String::new();
    body.push_str(&chart("chart-time-stack", &stack_plot(m, regions.as_ref())));
    body.push_str("<p class=\"note\">One bar per timed request (cold first repeats marked; they are left out of the statistics). Prefill is the time to first token, the model's input encoders included.</p>\n");
    body.push_str("<div class=\"grid\">\n");
    body.push_str(&chart("chart-stage-dist", &stage_distribution(m)));
    body.push_str(&chart("chart-serving-dist", &serving_distribution(m)));
    body.push_str("</div>\n");
    body.push_str("<p class=\"note\">Boxes: the warm requests' samples (ITL: every gap of every request). Markers: p50, p90 and p99 from metrics.json (linear interpolation).</p>\n");
    body.push_str("<h3>Decode over time</h3>\n");
    if m.requests.iter().any(|r| !r.itl_ms.is_empty()) {
        body.push_str(&chart("chart-itl-steps", &itl_plot(m)));
        body.push_str("<p class=\"note\">Inter-token latency of each step of each request: drift, CUDA-graph window changes and stalls show as steps and spikes.</p>\n");
    } else {
        body.push_str(&no_data(
            "no request produced more than one token (no inter-token gaps)",
        ));
    }
    Section::new("time", "Where the time goes", body)
}

fn stack_plot(m: &RunReport, regions: Option<&RegionTree>) -> Plot {
    let labels: Vec<String> = m
        .requests
        .iter()
        .enumerate()
        .map(|(i, r)| request_label(i, r))
        .collect();
    let parts: Vec<Vec<(String, f64)>> =
        m.requests.iter().map(|r| time_parts(regions, r)).collect();
    let mut names: Vec<String> = Vec::new();
    for p in parts.iter().flatten() {
        if !names.contains(&p.0) {
            names.push(p.0.clone());
        }
    }
    let mut plot = Plot::new();
    for (k, name) in names.iter().enumerate() {
        let ys: Vec<f64> = parts
            .iter()
            .map(|p| p.iter().find(|x| &x.0 == name).map(|x| x.1).unwrap_or(0.0))
            .collect();
        plot.add_trace(
            Bar::new(labels.clone(), ys)
                .name(name)
                .marker(Marker::new().color(marker_color(k))),
        );
    }
    plot.set_layout(
        base_layout("Time per request by stage")
            .bar_mode(BarMode::Stack)
            .y_axis(Axis::new().title(Title::with_text("ms")))
            .x_axis(Axis::new().tick_angle(-30.0)),
    );
    plot
}

/// A box per series on a log axis, with p50/p90/p99 markers where the statistics are given.
fn box_plot(title: &str, series: Vec<(String, Vec<f64>, Option<&StageStats>)>) -> Plot {
    let mut plot = Plot::new();
    for (k, (name, samples, _)) in series.iter().enumerate() {
        if samples.is_empty() {
            continue;
        }
        plot.add_trace(
            BoxPlot::<String, f64>::new_xy(vec![name.clone(); samples.len()], samples.clone())
                .name(name)
                .box_points(BoxPoints::All)
                .jitter(0.3)
                .marker(Marker::new().color(marker_color(k)).size(4))
                .show_legend(false),
        );
    }
    for (label, pick, symbol) in [
        ("p50", 0usize, MarkerSymbol::DiamondOpen),
        ("p90", 1, MarkerSymbol::TriangleUpOpen),
        ("p99", 2, MarkerSymbol::StarOpen),
    ] {
        let (xs, ys): (Vec<String>, Vec<f64>) = series
            .iter()
            .filter(|s| !s.1.is_empty())
            .filter_map(|(name, _, st)| {
                let st = (*st)?;
                Some((name.clone(), [st.p50_ms, st.p90_ms, st.p99_ms][pick]))
            })
            .unzip();
        if !xs.is_empty() {
            plot.add_trace(
                Scatter::new(xs, ys)
                    .name(label)
                    .mode(Mode::Markers)
                    .marker(Marker::new().symbol(symbol).size(12).color("#111111")),
            );
        }
    }
    plot.set_layout(
        base_layout(title).y_axis(
            Axis::new()
                .type_(AxisType::Log)
                .title(Title::with_text("ms")),
        ),
    );
    plot
}

fn stage_distribution(m: &RunReport) -> Plot {
    let warm: Vec<&RequestRecord> = m.requests.iter().filter(|r| !r.cold).collect();
    let series = m
        .stages
        .iter()
        .map(|(name, st)| {
            let samples: Vec<f64> = warm
                .iter()
                .filter_map(|r| r.stage_ms.get(name).copied())
                .collect();
            (name.clone(), samples, Some(st))
        })
        .collect();
    box_plot("Stage times per request", series)
}

fn serving_distribution(m: &RunReport) -> Plot {
    let warm: Vec<&RequestRecord> = m.requests.iter().filter(|r| !r.cold).collect();
    let s = &m.serving;
    let series = vec![
        (
            "TTFT".to_string(),
            warm.iter().filter_map(|r| r.ttft_ms).collect(),
            s.ttft_ms.as_ref(),
        ),
        (
            "TPOT".to_string(),
            warm.iter().filter_map(|r| r.tpot_ms).collect(),
            s.tpot_ms.as_ref(),
        ),
        (
            "ITL".to_string(),
            warm.iter().flat_map(|r| r.itl_ms.iter().copied()).collect(),
            s.itl_ms.as_ref(),
        ),
        (
            "e2e".to_string(),
            warm.iter().filter_map(|r| r.e2e_ms).collect(),
            s.e2e_ms.as_ref(),
        ),
    ];
    box_plot("Serving metrics (per batch row)", series)
}

fn itl_plot(m: &RunReport) -> Plot {
    let mut plot = Plot::new();
    for (i, r) in m.requests.iter().enumerate() {
        if r.itl_ms.is_empty() {
            continue;
        }
        let steps: Vec<usize> = (2..r.itl_ms.len() + 2).collect();
        let mut line = Line::new().width(1.2);
        if r.cold {
            line = line.dash(DashType::Dot);
        }
        plot.add_trace(
            Scatter::new(steps, r.itl_ms.clone())
                .name(request_label(i, r))
                .mode(Mode::Lines)
                .line(line),
        );
    }
    plot.set_layout(
        base_layout("Inter-token latency per decode step")
            .x_axis(Axis::new().title(Title::with_text("token")))
            .y_axis(Axis::new().title(Title::with_text("ms"))),
    );
    plot
}
