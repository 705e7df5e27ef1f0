//! The stage-2 roofline: kernels as points coloured by bound class, sized by GPU time, under
//! the roofs at the clocks ncu measured. Physical (FLOP/byte against FLOP/s) and normalised
//! (each kernel's intensity ÷ its ridge against its FLOP/s ÷ its compute roof, so kernels of
//! different precisions and clocks share one roof: y = min(x, 1)).
use super::page::{chart, no_data};
use super::plots::base_layout;
use crate::measure::kernel_names::short_name_within;
use crate::roofline::precision::Precision;
use crate::roofline::{BoundClass, RooflineReport, Roofs, Row};
use plotly::common::{DashType, Line, Marker, Mode, Title};
use plotly::layout::{Axis, AxisType};
use plotly::{Plot, Scatter};

/// Both roofline charts, or why they cannot be drawn.
pub fn html(r: &RooflineReport) -> String {
    let rows: Vec<&Row> = r.rows.iter().collect();
    if plottable(&rows).is_empty() {
        return no_data("no profiled kernel has both an arithmetic intensity and a FLOP rate (kernels without floating-point work cannot be placed)");
    }
    let mut s = String::from("<div class=\"grid\">\n");
    s.push_str(&chart("chart-roofline", &physical(r, &rows)));
    match normalised_points(r, &rows) {
        points if points.is_empty() => s.push_str(&no_data(&format!(
            "normalised roofline: no GPU peaks ({})",
            r.peaks_note
        ))),
        points => s.push_str(&chart("chart-roofline-normalised", &normalised(&points))),
    }
    s.push_str("</div>\n");
    if let Some(roofs) = r.plot_roofs(&rows) {
        s.push_str(&format!(
            "<p class=\"note\">Roofs at the median clocks ncu measured over these kernels: SM {:.0} MHz ({:?}), tensor {:.0} MHz, DRAM {:.0} MHz ({:?}). Peaks: {}. Point size: GPU time.</p>\n",
            roofs.sm_clock_mhz, roofs.sm_clock_source, roofs.tensor_clock_mhz, roofs.dram_clock_mhz, roofs.dram_clock_source, super::page::esc(&r.peaks_note)
        ));
    }
    s
}

/// Rows with positive intensity and FLOP/s: (row, intensity, FLOP/s).
fn plottable<'a>(rows: &[&'a Row]) -> Vec<(&'a Row, f64, f64)> {
    rows.iter()
        .filter_map(|r| {
            let ai = r.point.executed_intensity.filter(|v| *v > 0.0)?;
            let f = r.point.flops_per_s().filter(|v| *v > 0.0)?;
            Some((*r, ai, f))
        })
        .collect()
}

fn hover(r: &Row) -> String {
    let module = crate::measure::op_tables::modules_label(&r.point.modules)
        .map_or(String::new(), |m| format!("<br>module {m}"));
    format!(
        "{}<br>stage {}{module}<br>{:.2} µs<br>{}: {}",
        short_name_within(&r.point.name, 60),
        r.point.stage.as_deref().unwrap_or("—"),
        r.point.duration_ns.unwrap_or(0.0) / 1e3,
        r.bound.class.label(),
        r.bound.reason
    )
}

/// Marker size from GPU time: 8 to 30 px by the square root of the share of the largest.
fn sizes(points: &[(&Row, f64, f64)]) -> Vec<usize> {
    let max = points
        .iter()
        .map(|p| p.0.point.weight_ns)
        .fold(0.0, f64::max);
    points
        .iter()
        .map(|p| {
            let share = if max > 0.0 {
                p.0.point.weight_ns / max
            } else {
                0.0
            };
            (8.0 + 22.0 * share.sqrt()).round() as usize
        })
        .collect()
}

fn add_classes(plot: &mut Plot, points: &[(&Row, f64, f64)]) {
    for class in BoundClass::ALL {
        let of: Vec<(&Row, f64, f64)> = points
            .iter()
            .filter(|p| p.0.bound.class == class)
            .cloned()
            .collect();
        if of.is_empty() {
            continue;
        }
        plot.add_trace(
            Scatter::new(
                of.iter().map(|p| p.1).collect(),
                of.iter().map(|p| p.2).collect(),
            )
            .name(class.label())
            .mode(Mode::Markers)
            .hover_text_array(of.iter().map(|p| hover(p.0)).collect())
            .marker(
                Marker::new()
                    .color(class.color())
                    .size_array(sizes(&of))
                    .opacity(0.8),
            ),
        );
    }
}

fn physical(r: &RooflineReport, rows: &[&Row]) -> Plot {
    let points: Vec<(&Row, f64, f64)> = plottable(rows)
        .into_iter()
        .map(|(row, ai, f)| (row, ai, f / 1e12))
        .collect();
    let mut plot = Plot::new();
    if let Some(roofs) = r.plot_roofs(rows) {
        add_roofs(&mut plot, &roofs, rows, &points);
    }
    add_classes(&mut plot, &points);
    plot.set_layout(
        base_layout("Roofline (executed FLOPs)")
            .height(480)
            .x_axis(
                Axis::new()
                    .type_(AxisType::Log)
                    .title(Title::with_text("arithmetic intensity, FLOP/byte (DRAM)")),
            )
            .y_axis(
                Axis::new()
                    .type_(AxisType::Log)
                    .title(Title::with_text("TFLOP/s")),
            ),
    );
    plot
}

/// The DRAM roof up to the highest ridge, and a compute roof per precision the kernels used
/// (fp32 always), in TFLOP/s.
fn add_roofs(plot: &mut Plot, roofs: &Roofs, rows: &[&Row], points: &[(&Row, f64, f64)]) {
    let mut used: Vec<Precision> = rows.iter().filter_map(|r| r.point.precision).collect();
    used.push(Precision::Fp32);
    used.sort();
    used.dedup();
    let ridges: Vec<(Precision, f64, f64)> = used
        .iter()
        .filter_map(|p| {
            Some((
                *p,
                roofs.ridge(Some(*p))?,
                *roofs.compute_flops_per_s.get(p)? / 1e12,
            ))
        })
        .collect();
    let xs: Vec<f64> = points
        .iter()
        .map(|p| p.1)
        .chain(ridges.iter().map(|r| r.1))
        .collect();
    let x_lo = xs.iter().cloned().fold(f64::INFINITY, f64::min) / 10.0;
    let x_hi = xs.iter().cloned().fold(0.0, f64::max) * 10.0;
    let top_ridge = ridges.iter().map(|r| r.1).fold(x_lo, f64::max);
    let bw_tb = roofs.dram_bytes_per_s / 1e12;
    plot.add_trace(
        Scatter::new(vec![x_lo, top_ridge], vec![bw_tb * x_lo, bw_tb * top_ridge])
            .name(format!("DRAM {:.0} GB/s", roofs.dram_bytes_per_s / 1e9))
            .mode(Mode::Lines)
            .line(Line::new().color("#333333").width(2.0)),
    );
    for (p, ridge, peak) in ridges {
        plot.add_trace(
            Scatter::new(vec![ridge, x_hi], vec![peak, peak])
                .name(format!("{} {:.0} TFLOP/s", p.name(), peak))
                .mode(Mode::Lines)
                .line(Line::new().color("#555555").width(1.5).dash(DashType::Dash)),
        );
    }
}

/// (row, intensity ÷ ridge, FLOP/s ÷ compute roof) at each kernel's own clocks and precision.
fn normalised_points<'a>(r: &RooflineReport, rows: &[&'a Row]) -> Vec<(&'a Row, f64, f64)> {
    let Some(peaks) = &r.peaks else {
        return Vec::new();
    };
    plottable(rows)
        .into_iter()
        .filter_map(|(row, ai, f)| {
            let roofs = Roofs::from_peaks(
                &peaks.at_clocks(row.point.sm_clock_mhz, row.point.dram_clock_mhz),
            );
            let prec = row.point.precision.unwrap_or(Precision::Fp32);
            let ridge = roofs.ridge(Some(prec))?;
            let peak = *roofs.compute_flops_per_s.get(&prec)?;
            Some((row, ai / ridge, f / peak))
        })
        .collect()
}

fn normalised(points: &[(&Row, f64, f64)]) -> Plot {
    let mut plot = Plot::new();
    let lo = points.iter().map(|p| p.1.min(p.2)).fold(1.0, f64::min) / 10.0;
    let hi = points.iter().map(|p| p.1).fold(1.0, f64::max) * 10.0;
    plot.add_trace(
        Scatter::new(vec![lo, 1.0, hi], vec![lo, 1.0, 1.0])
            .name("roof: min(x, 1)")
            .mode(Mode::Lines)
            .line(Line::new().color("#333333").width(2.0)),
    );
    add_classes(&mut plot, points);
    plot.set_layout(
        base_layout("Normalised roofline (each kernel's own roofs)")
            .height(480)
            .x_axis(
                Axis::new()
                    .type_(AxisType::Log)
                    .title(Title::with_text("intensity ÷ ridge")),
            )
            .y_axis(
                Axis::new()
                    .type_(AxisType::Log)
                    .title(Title::with_text("FLOP/s ÷ compute roof")),
            ),
    );
    plot
}
