//! The multirun root's report.html: the sweep table (axes, headline numbers, state, errors,
//! links to each job's page), each headline metric against the swept axis, and throughput
//! against latency (tokens/s per user vs tokens/s per GPU, the Pareto front marked).
use super::page::{chart, esc, no_data, Page, Section};
use super::plots::{base_layout, marker_color};
use super::table::{num, text, Cell, Table};
use crate::report::sweep::{SweepRow, SweepTable, METRICS, TOKENS_PER_S, TOKENS_PER_S_PER_USER};
use plotly::common::{Line, Marker, Mode, Title};
use plotly::layout::{Axis, AxisType};
use plotly::{Plot, Scatter};
use std::path::Path;

pub fn render(root: &Path, t: &SweepTable) -> String {
    let failed = t.rows.iter().filter(|r| r.job.status == "failed").count();
    let done = t
        .rows
        .iter()
        .filter(|r| r.job.status == "succeeded")
        .count();
    let mut sections = vec![Section::new("jobs", "Jobs", jobs(root, t))];
    sections.push(Section::new(
        "metrics",
        "Metrics against the sweep",
        metric_charts(t),
    ));
    sections.push(Section::new(
        "pareto",
        "Throughput against latency",
        pareto(t),
    ));
    sections.push(Section::new(
        "artifacts",
        "Raw artifacts",
        super::links::list(|f| root.join(f).exists()),
    ));
    let mut banners = Vec::new();
    if failed > 0 {
        banners.push(format!(
            "{failed} of {} jobs failed (their errors are in the table)",
            t.rows.len()
        ));
    }
    Page {
        title: format!("llmprof sweep: {} jobs", t.rows.len()),
        subtitle: format!(
            "{} · {done} succeeded · axes: {}",
            root.display(),
            if t.axes.is_empty() {
                "none".to_string()
            } else {
                t.axes.join(", ")
            }
        ),
        banners,
        sections,
    }
    .render()
}

/// A job's page relative to the root; none when the page is not inside the root (after symbolic
/// links) or its path is not UTF-8: links are relative paths only (docs/security.md).
fn job_link(root: &Path, r: &SweepRow) -> Option<String> {
    let dir = r.job.dir.as_ref()?;
    let page = dir.join("report.html");
    if !page.is_file() {
        return None;
    }
    let root = std::fs::canonicalize(root).ok()?;
    let page = std::fs::canonicalize(&page).ok()?;
    let relative = page.strip_prefix(&root).ok()?;
    relative.to_str().map(str::to_string)
}

fn jobs(root: &Path, t: &SweepTable) -> String {
    let mut cols = vec![num("job")];
    cols.extend(t.axes.iter().map(|a| text(a)));
    cols.extend(METRICS.iter().map(|m| num(m.title)));
    cols.extend([text("status"), text("report")]);
    let batch_column = t.has_batch_column();
    if batch_column {
        cols.push(text("batch ran"));
    }
    let mut table = Table::new("table-sweep", cols);
    for r in &t.rows {
        let mut row = vec![Cell::num(Some(r.job.num as f64), 0)];
        row.extend(r.axis_values.iter().map(|v| Cell::text(v.clone())));
        row.extend(
            METRICS
                .iter()
                .zip(&r.values)
                .map(|(m, v)| Cell::num(*v, m.decimals)),
        );
        row.push(match &r.error {
            Some(e) => Cell::named(
                format!("{}: {e}", r.job.status),
                format!("{}: {e}", r.job.status),
            )
            .wrapped(),
            None => Cell::text(r.job.status.clone()),
        });
        row.push(match job_link(root, r) {
            Some(href) => Cell::link(&href, "report.html"),
            None => Cell::text("—"),
        });
        if batch_column {
            row.push(Cell::text(r.batch_ran()));
        }
        if r.job.status == "failed" {
            table.push_with_class(row, "failed");
        } else {
            table.push(row);
        }
    }
    let mut s = table.html();
    let common: Vec<&String> = t
        .rows
        .first()
        .map(|r| {
            r.job
                .overrides
                .iter()
                .filter(|o| {
                    !t.axes.iter().any(|a| {
                        o.trim_start_matches(['+', '~'])
                            .starts_with(&format!("{a}="))
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    s.push_str(&format!(
        "<p class=\"note\">Overrides every job shares: <code>{}</code>. tokens/s is per GPU (all output tokens ÷ the requests' summed e2e time); per user is one batch row's rate. MFU is end to end, MBU of decode.</p>\n",
        esc(&common.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" "))
    ));
    s
}

/// The x of each row: its value of the first axis (numbers when all parse), else the job number.
fn xs(t: &SweepTable) -> (String, Vec<String>, bool) {
    match t.axes.first() {
        Some(axis) => {
            let v: Vec<String> = t.rows.iter().map(|r| r.axis_values[0].clone()).collect();
            let numeric = v.iter().all(|x| x.parse::<f64>().is_ok());
            (axis.clone(), v, numeric)
        }
        None => (
            "job".into(),
            t.rows.iter().map(|r| r.job.num.to_string()).collect(),
            true,
        ),
    }
}

/// The other axes' values of a row: one line per combination.
fn group(r: &SweepRow) -> String {
    r.axis_values
        .iter()
        .skip(1)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ")
}

fn metric_charts(t: &SweepTable) -> String {
    let (axis, x, numeric) = xs(t);
    let mut groups: Vec<String> = Vec::new();
    for r in &t.rows {
        if !groups.contains(&group(r)) {
            groups.push(group(r));
        }
    }
    let mut s = String::from("<div class=\"grid\">\n");
    let mut any = false;
    for (mi, m) in METRICS.iter().enumerate() {
        if t.rows.iter().all(|r| r.values[mi].is_none()) {
            continue;
        }
        any = true;
        let mut plot = Plot::new();
        for (gi, g) in groups.iter().enumerate() {
            let (gx, gy): (Vec<String>, Vec<f64>) = t
                .rows
                .iter()
                .zip(&x)
                .filter(|(r, _)| &group(r) == g)
                .filter_map(|(r, x)| Some((x.clone(), r.values[mi]?)))
                .unzip();
            if gx.is_empty() {
                continue;
            }
            plot.add_trace(
                Scatter::new(gx, gy)
                    .name(if g.is_empty() {
                        m.title.to_string()
                    } else {
                        g.clone()
                    })
                    .mode(Mode::LinesMarkers)
                    .marker(Marker::new().size(9).color(marker_color(gi))),
            );
        }
        let x_axis = Axis::new().title(Title::with_text(axis.as_str()));
        let x_axis = if numeric {
            x_axis
        } else {
            x_axis.type_(AxisType::Category)
        };
        plot.set_layout(
            base_layout(&format!("{} by {axis}", m.title))
                .height(320)
                .x_axis(x_axis)
                .y_axis(Axis::new().title(Title::with_text(m.title))),
        );
        s.push_str(&chart(&format!("chart-sweep-{}", m.key), &plot));
    }
    s.push_str("</div>\n");
    if !any {
        return no_data(
            "no job has a metrics.json with these numbers (failed jobs, or stage2/infer sweeps)",
        );
    }
    s
}

/// Rows on the Pareto front: no other row is at least as fast per user and per GPU and faster
/// in one of them.
pub fn pareto_front(points: &[(f64, f64)]) -> Vec<usize> {
    let mut front: Vec<usize> = (0..points.len())
        .filter(|&i| {
            let (a, b) = points[i];
            !points
                .iter()
                .any(|&(c, d)| c >= a && d >= b && (c > a || d > b))
        })
        .collect();
    front.sort_by(|&i, &j| points[i].0.total_cmp(&points[j].0));
    front
}

fn pareto(t: &SweepTable) -> String {
    let rows: Vec<(&SweepRow, f64, f64)> = t
        .rows
        .iter()
        .filter_map(|r| Some((r, r.value(TOKENS_PER_S_PER_USER)?, r.value(TOKENS_PER_S)?)))
        .collect();
    if rows.is_empty() {
        return no_data("no job has both tokens/s per user and tokens/s per GPU");
    }
    let label = |r: &SweepRow| {
        if r.axis_values.is_empty() {
            format!("#{}", r.job.num)
        } else {
            r.axis_values.join(", ")
        }
    };
    let points: Vec<(f64, f64)> = rows.iter().map(|r| (r.1, r.2)).collect();
    let front = pareto_front(&points);
    let mut plot = Plot::new();
    plot.add_trace(
        Scatter::new(
            front.iter().map(|&i| points[i].0).collect(),
            front.iter().map(|&i| points[i].1).collect(),
        )
        .name("Pareto front")
        .mode(Mode::Lines)
        .line(Line::new().color("#999999").width(1.5)),
    );
    plot.add_trace(
        Scatter::new(
            points.iter().map(|p| p.0).collect(),
            points.iter().map(|p| p.1).collect(),
        )
        .name("jobs")
        .mode(Mode::MarkersText)
        .text_array(rows.iter().map(|r| label(r.0)).collect())
        .text_position(plotly::common::Position::TopCenter)
        .marker(Marker::new().size(11).color(marker_color(0))),
    );
    plot.set_layout(
        base_layout("tokens/s per user against tokens/s per GPU")
            .height(420)
            .x_axis(Axis::new().title(Title::with_text("tokens/s per user (one batch row)")))
            .y_axis(Axis::new().title(Title::with_text("tokens/s per GPU (all rows)"))),
    );
    let mut s = chart("chart-sweep-pareto", &plot);
    s.push_str("<p class=\"note\">Each point a job, labelled with its axis values. Up and to the right is better; the line joins the jobs no other job beats on both.</p>\n");
    s
}
