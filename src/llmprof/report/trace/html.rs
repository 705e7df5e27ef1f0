//! report.html of `llmprof analyze trace`: the GPU time breakdown (a stacked bar per device, or
//! per iteration when the trace has ProfilerStep ranges), regions, kernels and operators as
//! sortable, filterable tables, and the ranks side by side.
use plotly::common::{Marker, Title};
use plotly::layout::{Axis, BarMode};
use plotly::{Bar, Plot};

use super::markdown::size;
use crate::report::html::page::{chart, esc, Page, Section};
use crate::report::html::plots::{base_layout, marker_color};
use crate::report::html::table::{num, text, Cell, Table};
use crate::trace::analysis::TraceAnalysis;
use crate::trace::ranks::{AcrossRanks, Analysed};
use crate::trace::timeline::Breakdown;

/// Rows per table (a trace may name tens of thousands of kernels; JSON has them all).
const MAX_ROWS: usize = 2000;

/// The whole page.
pub fn render(analysed: &Analysed) -> String {
    let traces = analysed.traces();
    let mut sections = Vec::new();
    if let Analysed::Ranks(m) = analysed {
        sections.push(Section::new(
            "ranks",
            "Across ranks",
            across(&m.across_ranks),
        ));
    }
    for (rank, a) in &traces {
        let suffix = rank.map(|r| format!(" (rank {r})")).unwrap_or_default();
        let id = rank.map(|r| format!("-r{r}")).unwrap_or_default();
        sections.push(Section::new(
            &format!("gpu{id}"),
            &format!("GPU time{suffix}"),
            gpu_time(a, &id),
        ));
        sections.push(Section::new(
            &format!("regions{id}"),
            &format!("Regions{suffix}"),
            regions(a, &id),
        ));
        sections.push(Section::new(
            &format!("kernels{id}"),
            &format!("Kernels{suffix}"),
            kernels(a, &id),
        ));
        sections.push(Section::new(
            &format!("operators{id}"),
            &format!("Operators{suffix}"),
            operators(a, &id),
        ));
    }
    let first = traces
        .first()
        .map(|t| t.1.source.path.clone())
        .unwrap_or_default();
    Page {
        title: "llmprof analyze trace".into(),
        subtitle: if traces.len() > 1 {
            format!("{} ranks: {first}, …", traces.len())
        } else {
            first
        },
        banners: Vec::new(),
        sections,
    }
    .render()
}

fn ms(us: f64) -> Option<f64> {
    Some(us / 1000.0)
}

fn pct(part: f64, whole: f64) -> Option<f64> {
    (whole > 0.0).then(|| 100.0 * part / whole)
}

fn gpu_time(a: &TraceAnalysis, id: &str) -> String {
    let s = &a.source;
    let mut body = format!(
        "<p>{} host events, {} GPU events, {} of JSON{}. GPU work summed: {:.3} ms.{}</p>\n",
        s.host_events,
        s.device_events,
        size(s.bytes),
        if s.devices.is_empty() {
            String::new()
        } else {
            format!(" on {}", esc(&s.devices.join(", ")))
        },
        a.gpu_total_us / 1000.0,
        if a.graphs.launches > 0 {
            format!(
                " CUDA graphs: {} launches replayed {} kernels ({:.3} ms).",
                a.graphs.launches,
                a.graphs.calls,
                a.graphs.total_us / 1000.0
            )
        } else {
            String::new()
        }
    );
    let mut t = Table::new(
        &format!("breakdown{id}"),
        vec![
            num("device"),
            num("window ms"),
            num("computation %"),
            num("communication %"),
            num("memory %"),
            num("idle %"),
            num("host wait %"),
            num("kernel wait %"),
            num("other idle %"),
        ],
    );
    for d in &a.timeline {
        let w = d.window_us;
        t.push(vec![
            Cell::num(Some(d.device as f64), 0),
            Cell::num(ms(w), 3),
            Cell::num(pct(d.computation_us, w), 1),
            Cell::num(pct(d.communication_us, w), 1),
            Cell::num(pct(d.memory_us, w), 1),
            Cell::num(pct(d.idle_us, w), 1),
            Cell::num(pct(d.idle_host_wait_us, w), 1),
            Cell::num(pct(d.idle_kernel_wait_us, w), 1),
            Cell::num(pct(d.idle_other_us, w), 1),
        ]);
    }
    body.push_str(&t.html());
    let bars: Vec<(String, &Breakdown)> = if a.iterations.is_empty() {
        a.timeline
            .iter()
            .map(|d| (format!("device {}", d.device), d))
            .collect()
    } else {
        a.iterations
            .iter()
            .flat_map(|it| {
                it.devices
                    .iter()
                    .map(move |d| (format!("step {} · gpu {}", it.step, d.device), d))
            })
            .collect()
    };
    body.push_str(&chart(&format!("breakdown-chart{id}"), &stacked(&bars)));
    body
}

fn stacked(bars: &[(String, &Breakdown)]) -> Plot {
    let labels: Vec<String> = bars.iter().map(|b| b.0.clone()).collect();
    type Part = (&'static str, fn(&Breakdown) -> f64);
    let parts: [Part; 6] = [
        ("computation", |d| d.computation_us),
        ("communication", |d| d.communication_us),
        ("memory", |d| d.memory_us),
        ("idle: host wait", |d| d.idle_host_wait_us),
        ("idle: kernel wait", |d| d.idle_kernel_wait_us),
        ("idle: other", |d| d.idle_other_us),
    ];
    let mut plot = Plot::new();
    for (k, (name, f)) in parts.iter().enumerate() {
        let ys: Vec<f64> = bars.iter().map(|b| f(b.1) / 1000.0).collect();
        plot.add_trace(
            Bar::new(labels.clone(), ys)
                .name(*name)
                .marker(Marker::new().color(marker_color(k))),
        );
    }
    plot.set_layout(
        base_layout("Where the GPU's time went")
            .bar_mode(BarMode::Stack)
            .y_axis(Axis::new().title(Title::with_text("ms"))),
    );
    plot
}

fn capped(t: &Table, total: usize) -> String {
    let mut html = t.html();
    if total > MAX_ROWS {
        html.push_str(&format!(
            "<p>{} more rows in analysis.json (<code>--format json</code>).</p>\n",
            total - MAX_ROWS
        ));
    }
    html
}

fn regions(a: &TraceAnalysis, id: &str) -> String {
    let mut t = Table::new(
        &format!("regions-table{id}"),
        vec![
            text("region"),
            num("calls"),
            num("total ms"),
            num("share %"),
            num("graph launches"),
            num("kernels from graphs"),
        ],
    );
    for r in a.regions.iter().take(MAX_ROWS) {
        t.push(vec![
            Cell::text(r.region.clone()),
            Cell::num(Some(r.calls as f64), 0),
            Cell::num(ms(r.total_us), 3),
            Cell::num(Some(100.0 * r.share_of_gpu), 1),
            Cell::num(Some(r.graph_launches as f64), 0),
            Cell::num(Some(r.graph_calls as f64), 0),
        ]);
    }
    capped(&t, a.regions.len())
}

fn kernels(a: &TraceAnalysis, id: &str) -> String {
    // A trace with early starts (programmatic dependent launch) gets the waits' column.
    let waits = a.early_start_us > 0.0;
    let mut columns = vec![
        text("kernel"),
        num("calls"),
        num("total ms"),
        num("mean µs"),
        num("share %"),
        num("from graphs"),
    ];
    if waits {
        columns.push(num("waited ms"));
    }
    let mut t = Table::new(&format!("kernels-table{id}"), columns);
    let names = crate::measure::kernel_names::distinct_short_names(
        a.kernels.iter().map(|k| k.name.as_str()),
    );
    for (k, name) in a.kernels.iter().zip(names).take(MAX_ROWS) {
        let mut row = vec![
            Cell::named(name, k.name.clone()),
            Cell::num(Some(k.calls as f64), 0),
            Cell::num(ms(k.total_us), 3),
            Cell::num(Some(k.mean_us), 2),
            Cell::num(Some(100.0 * k.share_of_gpu), 1),
            Cell::num(Some(k.graph_calls as f64), 0),
        ];
        if waits {
            row.push(Cell::num(ms(k.early_start_us), 3));
        }
        t.push(row);
    }
    capped(&t, a.kernels.len())
}

fn operators(a: &TraceAnalysis, id: &str) -> String {
    let mut t = Table::new(
        &format!("operators-table{id}"),
        vec![
            text("operator"),
            text("kind"),
            num("calls"),
            num("self CPU ms"),
            num("total CPU ms"),
            num("self CUDA ms"),
            num("total CUDA ms"),
        ],
    );
    for o in a.operators.iter().take(MAX_ROWS) {
        t.push(vec![
            Cell::text(o.name.clone()),
            Cell::text(format!("{:?}", o.kind)),
            Cell::num(Some(o.calls as f64), 0),
            Cell::num(ms(o.self_cpu_us), 3),
            Cell::num(ms(o.total_cpu_us), 3),
            Cell::num(ms(o.self_cuda_us), 3),
            Cell::num(ms(o.total_cuda_us), 3),
        ]);
    }
    capped(&t, a.operators.len())
}

fn across(view: &AcrossRanks) -> String {
    let mut t = Table::new(
        "ranks-table",
        vec![
            num("rank"),
            num("window ms"),
            num("computation ms"),
            num("communication %"),
            num("idle ms"),
            num("steps"),
            num("mean step ms"),
        ],
    );
    for r in &view.ranks {
        t.push(vec![
            Cell::num(Some(r.rank as f64), 0),
            Cell::num(ms(r.window_us), 3),
            Cell::num(ms(r.computation_us), 3),
            Cell::num(Some(100.0 * r.communication_share), 1),
            Cell::num(ms(r.idle_us), 3),
            Cell::num(Some(r.steps as f64), 0),
            Cell::num(ms(r.mean_step_us), 3),
        ]);
    }
    let mut body = t.html();
    if !view.steps.is_empty() {
        let mut s = Table::new(
            "steps-table",
            vec![
                num("step"),
                num("slowest rank (host)"),
                num("host spread ms"),
                num("straggler rank"),
                num("computation spread ms"),
            ],
        );
        for st in &view.steps {
            s.push(vec![
                Cell::num(Some(st.step as f64), 0),
                Cell::num(st.slowest_rank.map(|r| r as f64), 0),
                Cell::num(ms(st.host_spread_us), 3),
                Cell::num(st.straggler_rank.map(|r| r as f64), 0),
                Cell::num(ms(st.computation_spread_us), 3),
            ]);
        }
        body.push_str("<p>The straggler is the rank that computed longest in a step (the others wait for it in collectives).</p>\n");
        body.push_str(&s.html());
    }
    if let Some((rank, n)) = view.usual_straggler {
        body.push_str(&format!(
            "<p>Straggler: rank {rank} in {n} of {} steps.</p>\n",
            view.steps.len()
        ));
    }
    body
}
