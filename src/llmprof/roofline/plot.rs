//! Roofline plots: log-log SVG (DRAM roof, compute roofs, kernels as circles sized by GPU time
//! and labelled), rasterised to PNG with resvg. One plot per stage when stages are known.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::precision::Precision;
use super::{BoundClass, RooflineReport, Roofs, Row};
use crate::measure::kernel_names::short_name_within;

const W: f64 = 960.0;
const H: f64 = 640.0;
const LEFT: f64 = 90.0;
const RIGHT: f64 = 30.0;
const TOP: f64 = 50.0;
const BOTTOM: f64 = 70.0;
/// Kernels labelled per plot (largest GPU time first); the rest stay unlabelled to stay legible.
const LABELS: usize = 10;

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

struct Axes {
    x_lo: f64,
    x_hi: f64,
    y_lo: f64,
    y_hi: f64,
}

impl Axes {
    fn x(&self, ai: f64) -> f64 {
        LEFT + (ai.log10() - self.x_lo) / (self.x_hi - self.x_lo) * (W - LEFT - RIGHT)
    }
    fn y(&self, flops: f64) -> f64 {
        H - BOTTOM - (flops.log10() - self.y_lo) / (self.y_hi - self.y_lo) * (H - TOP - BOTTOM)
    }
}

/// Rows that can be placed on log axes: positive intensity and achieved FLOP/s.
fn plottable<'a>(rows: &[&'a Row]) -> Vec<(&'a Row, f64, f64)> {
    rows.iter()
        .filter_map(|r| {
            let ai = r.point.executed_intensity.filter(|v| *v > 0.0)?;
            let fps = r.point.flops_per_s().filter(|v| *v > 0.0)?;
            Some((*r, ai, fps))
        })
        .collect()
}

/// SVG of `rows` under `roofs` (roofs may be absent: points only).
pub fn svg(title: &str, rows: &[&Row], roofs: Option<&Roofs>) -> String {
    let pts = plottable(rows);
    let mut xs: Vec<f64> = pts.iter().map(|p| p.1).collect();
    let mut ys: Vec<f64> = pts.iter().map(|p| p.2).collect();
    let used: Vec<Precision> = {
        let mut v: Vec<Precision> = rows.iter().filter_map(|r| r.point.precision).collect();
        v.push(Precision::Fp32);
        v.sort();
        v.dedup();
        v
    };
    if let Some(r) = roofs {
        for p in &used {
            if let (Some(peak), Some(ridge)) = (r.compute_flops_per_s.get(p), r.ridge(Some(*p))) {
                ys.push(*peak);
                xs.push(ridge);
            }
        }
    }
    let lo = |v: &[f64], d: f64| {
        v.iter()
            .cloned()
            .fold(f64::INFINITY, f64::min)
            .log10()
            .floor()
            - d
    };
    let hi = |v: &[f64], d: f64| {
        v.iter()
            .cloned()
            .fold(f64::NEG_INFINITY, f64::max)
            .log10()
            .ceil()
            + d
    };
    let ax = if xs.is_empty() {
        Axes {
            x_lo: -2.0,
            x_hi: 4.0,
            y_lo: 9.0,
            y_hi: 16.0,
        }
    } else {
        Axes {
            x_lo: lo(&xs, 1.0),
            x_hi: hi(&xs, 1.0),
            y_lo: lo(&ys, 1.0),
            y_hi: hi(&ys, 0.0),
        }
    };
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="DejaVu Sans, Arial, sans-serif">"#
    );
    let _ = writeln!(s, r##"<rect width="{W}" height="{H}" fill="#ffffff"/>"##);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="28" font-size="18" text-anchor="middle">{}</text>"#,
        W / 2.0,
        escape(title)
    );
    // Grid and decade ticks.
    for d in (ax.x_lo as i32)..=(ax.x_hi as i32) {
        let x = ax.x(10f64.powi(d));
        let _ = writeln!(
            s,
            r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{}" stroke="#dddddd"/>"##,
            H - BOTTOM
        );
        let _ = writeln!(
            s,
            r#"<text x="{x:.1}" y="{}" font-size="12" text-anchor="middle">1e{d}</text>"#,
            H - BOTTOM + 18.0
        );
    }
    for d in (ax.y_lo as i32)..=(ax.y_hi as i32) {
        let y = ax.y(10f64.powi(d));
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="#dddddd"/>"##,
            W - RIGHT
        );
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{:.1}" font-size="12" text-anchor="end">1e{d}</text>"#,
            LEFT - 6.0,
            y + 4.0
        );
    }
    let _ = writeln!(
        s,
        r##"<rect x="{LEFT}" y="{TOP}" width="{}" height="{}" fill="none" stroke="#000000"/>"##,
        W - LEFT - RIGHT,
        H - TOP - BOTTOM
    );
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" font-size="14" text-anchor="middle">executed arithmetic intensity (FLOP / DRAM byte)</text>"#,
        (LEFT + W - RIGHT) / 2.0,
        H - 20.0
    );
    let _ = writeln!(
        s,
        r#"<text x="20" y="{}" font-size="14" text-anchor="middle" transform="rotate(-90 20 {})">achieved executed FLOP/s</text>"#,
        H / 2.0,
        H / 2.0
    );
    // Roofs: DRAM slope up to the highest ridge, then one flat roof per precision in use, at the
    // clocks the subtitle states.
    if let Some(r) = roofs {
        let _ = writeln!(
            s,
            r#"<text x="{}" y="44" font-size="12" text-anchor="middle">{}</text>"#,
            W / 2.0,
            escape(&roof_clocks(r))
        );
        let x0 = 10f64.powf(ax.x_lo);
        let x1 = 10f64.powf(ax.x_hi);
        let top = used
            .iter()
            .filter_map(|p| r.compute_flops_per_s.get(p))
            .cloned()
            .fold(0.0, f64::max);
        if top > 0.0 {
            let ridge = top / r.dram_bytes_per_s;
            let xa = x0.max(10f64.powf(ax.y_lo) / r.dram_bytes_per_s);
            let ya = r.dram_bytes_per_s * xa;
            let _ = writeln!(
                s,
                r##"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#000000" stroke-width="2"/>"##,
                ax.x(xa),
                ax.y(ya),
                ax.x(ridge),
                ax.y(top)
            );
            let _ = writeln!(
                s,
                r#"<text x="{:.1}" y="{:.1}" font-size="12">DRAM {:.2} TB/s</text>"#,
                ax.x(xa) + 8.0,
                ax.y(ya) - 8.0,
                r.dram_bytes_per_s / 1e12
            );
        }
        for p in &used {
            let Some(peak) = r.compute_flops_per_s.get(p) else {
                continue;
            };
            let ridge = peak / r.dram_bytes_per_s;
            let _ = writeln!(
                s,
                r##"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#000000" stroke-width="2" stroke-dasharray="6 3"/>"##,
                ax.x(ridge),
                ax.y(*peak),
                ax.x(x1),
                ax.y(*peak)
            );
            let _ = writeln!(
                s,
                r#"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="end">{} {:.1} TFLOP/s</text>"#,
                ax.x(x1) - 4.0,
                ax.y(*peak) - 5.0,
                p.name(),
                peak / 1e12
            );
        }
    }
    // Kernels.
    let total: f64 = pts
        .iter()
        .map(|p| p.0.point.weight_ns)
        .sum::<f64>()
        .max(f64::MIN_POSITIVE);
    let mut order: Vec<usize> = (0..pts.len()).collect();
    order.sort_by(|a, b| {
        pts[*b]
            .0
            .point
            .weight_ns
            .total_cmp(&pts[*a].0.point.weight_ns)
    });
    for (rank, &i) in order.iter().enumerate() {
        let (row, ai, fps) = pts[i];
        let r = 3.0 + 14.0 * (row.point.weight_ns / total).sqrt();
        let (cx, cy) = (ax.x(ai), ax.y(fps));
        let _ = writeln!(
            s,
            r##"<circle cx="{cx:.1}" cy="{cy:.1}" r="{r:.1}" fill="{}" fill-opacity="0.6" stroke="#000000" stroke-width="0.5"><title>{}</title></circle>"##,
            row.bound.class.color(),
            escape(&row.point.name)
        );
        if rank < LABELS {
            let _ = writeln!(
                s,
                r#"<text x="{:.1}" y="{:.1}" font-size="10">{}</text>"#,
                cx + r + 2.0,
                cy + 3.0,
                escape(&short_name_within(&row.point.name, 36))
            );
        }
    }
    // Legend and a note on what could not be placed.
    for (i, class) in BoundClass::ALL.iter().enumerate() {
        let y = TOP + 16.0 + 16.0 * i as f64;
        let _ = writeln!(
            s,
            r##"<circle cx="{}" cy="{y}" r="5" fill="{}" fill-opacity="0.6"/><text x="{}" y="{}" font-size="12">{}</text>"##,
            LEFT + 14.0,
            class.color(),
            LEFT + 24.0,
            y + 4.0,
            class.label()
        );
    }
    let skipped = rows.len() - pts.len();
    if skipped > 0 {
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" font-size="11" text-anchor="end">{skipped} kernel(s) not plotted: no FLOPs, no DRAM bytes or zero intensity</text>"#,
            W - RIGHT,
            H - 6.0
        );
    }
    s.push_str("</svg>\n");
    s
}

/// "roofs at SM 1336 MHz, DRAM 3199 MHz (measured)": the clocks a plot's roofs use.
pub fn roof_clocks(r: &Roofs) -> String {
    use crate::measure::peaks::ClockSource;
    let how = |c: ClockSource| match c {
        ClockSource::Measured => "measured, median over the kernels",
        ClockSource::SkuTable => "rated",
        ClockSource::CudaClockRate => "CUDA clock rate",
        ClockSource::MaxMemoryClock => "maximum memory clock",
    };
    let sm = if r.tensor_clock_mhz == r.sm_clock_mhz {
        format!("SM {:.0} MHz", r.sm_clock_mhz)
    } else {
        format!(
            "SM {:.0} MHz (tensor roofs {:.0} MHz)",
            r.sm_clock_mhz, r.tensor_clock_mhz
        )
    };
    format!(
        "roofs at {sm} ({}), DRAM {:.0} MHz ({})",
        how(r.sm_clock_source),
        r.dram_clock_mhz,
        how(r.dram_clock_source)
    )
}

/// Font files tried when fontconfig knows none (Debian's fonts-dejavu-core, which bootstrap.sh
/// installs).
const FALLBACK_FONTS: [&str; 2] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
];

/// Rasterises an SVG to PNG bytes. Returns `None` when no font is available: a PNG without its
/// axis labels would mislead, and the SVG keeps them.
pub fn png(svg: &str) -> Result<Option<Vec<u8>>> {
    let mut opt = resvg::usvg::Options::default();
    opt.fontdb_mut().load_system_fonts();
    if opt.fontdb.is_empty() {
        for f in FALLBACK_FONTS {
            let _ = opt.fontdb_mut().load_font_file(f);
        }
    }
    if opt.fontdb.is_empty() {
        return Ok(None);
    }
    let tree = resvg::usvg::Tree::from_str(svg, &opt).context("parsing the roofline SVG")?;
    let size = tree.size().to_int_size();
    let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width(), size.height())
        .context("allocating the PNG canvas")?;
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::default(),
        &mut pixmap.as_mut(),
    );
    pixmap
        .encode_png()
        .context("encoding the roofline PNG")
        .map(Some)
}

fn file_stem(stage: &str) -> String {
    stage
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Writes `roofline.svg`/`.png` for all kernels and, when stages are known, one
/// `roofline_<stage>.svg`/`.png` per stage into `dir`. Returns the files written.
pub fn write_plots(dir: &Path, report: &RooflineReport) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let gpu = report
        .peaks
        .as_ref()
        .map(|p| p.gpu_name.as_str())
        .unwrap_or("GPU peaks unknown");
    let mut plots: Vec<(String, String, Vec<&Row>)> = vec![(
        "roofline".into(),
        format!("Roofline: {gpu}"),
        report.rows.iter().collect(),
    )];
    for stage in report.stages() {
        let rows = report
            .rows
            .iter()
            .filter(|r| r.point.stage.as_deref() == Some(stage.as_str()))
            .collect();
        plots.push((
            format!("roofline_{}", file_stem(&stage)),
            format!("Roofline: {gpu}, stage {stage}"),
            rows,
        ));
    }
    let mut written = Vec::new();
    for (stem, title, rows) in plots {
        let text = svg(&title, &rows, report.plot_roofs(&rows).as_ref());
        let svg_path = dir.join(format!("{stem}.svg"));
        std::fs::write(&svg_path, &text)
            .with_context(|| format!("writing {}", svg_path.display()))?;
        written.push(svg_path);
        let png_path = dir.join(format!("{stem}.png"));
        match png(&text)? {
            Some(bytes) => {
                std::fs::write(&png_path, bytes)
                    .with_context(|| format!("writing {}", png_path.display()))?;
                written.push(png_path);
            }
            None => tracing::warn!(
                "no font found for PNG labels (apt-get install fonts-dejavu-core): wrote {stem}.svg only"
            ),
        }
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::peaks::{derive, props_for_name};
    use crate::roofline::{KernelPoint, Thresholds};

    fn report() -> RooflineReport {
        let k = |name: &str, stage: &str, ai: f64, flops: f64, ns: f64| KernelPoint {
            name: name.into(),
            stage: Some(stage.into()),
            weight_ns: ns,
            duration_ns: Some(ns),
            executed_flops: Some(flops),
            executed_intensity: Some(ai),
            dram_bytes: Some(if ai > 0.0 { flops / ai } else { 0.0 }),
            useful_flops: None,
            useful_op: None,
            modules: Vec::new(),
            useful_why_not: None,
            sm_clock_mhz: None,
            dram_clock_mhz: None,
            precision: Some(if ai > 10.0 {
                Precision::TensorBf16
            } else {
                Precision::Fp32
            }),
            sm_pct: Some(70.0),
            dram_pct: Some(70.0),
            why_unknown: None,
        };
        let peaks = derive(&props_for_name("H100 SXM").expect("known")).expect("peaks");
        RooflineReport::build(
            vec![
                k("gemv<a&b>", "decode", 1.0, 2e6, 6000.0),
                k("gemm", "prefill", 300.0, 6e11, 1e6),
                k("copy", "decode", 0.0, 0.0, 100.0),
            ],
            Some(peaks),
            String::new(),
            &Thresholds::default(),
        )
    }

    #[test]
    fn svg_has_roofs_points_and_escaped_labels() {
        let r = report();
        let rows: Vec<&Row> = r.rows.iter().collect();
        let text = svg(
            "t",
            &rows,
            Some(&Roofs::from_peaks(r.peaks.as_ref().expect("peaks"))),
        );
        assert!(text.starts_with("<svg"));
        assert_eq!(
            text.matches("<circle cx").count() - BoundClass::ALL.len(),
            2,
            "two plottable kernels"
        );
        assert!(text.contains("gemv&lt;a&amp;b&gt;"));
        assert!(text.contains("tensor_bf16"));
        assert!(text.contains("DRAM 3.35 TB/s"));
        assert!(
            text.contains(
                "roofs at SM 1980 MHz (tensor roofs 1830 MHz) (rated), DRAM 2617 MHz (rated)"
            ),
            "{text}"
        );
        assert!(text.contains("1 kernel(s) not plotted"));
    }

    #[test]
    fn writes_svg_and_png_per_stage() {
        let dir = std::env::temp_dir().join(format!("llmprof-roofline-{}", std::process::id()));
        let files = write_plots(&dir, &report()).expect("written");
        let names: Vec<String> = files
            .iter()
            .map(|p| p.file_name().expect("name").to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "roofline.svg",
                "roofline.png",
                "roofline_decode.svg",
                "roofline_decode.png",
                "roofline_prefill.svg",
                "roofline_prefill.png"
            ]
        );
        let png = std::fs::read(dir.join("roofline.png")).expect("png");
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }
}
