//! `--format html`: one small self-contained page (inline style, no script, no network) with the
//! same content as the Markdown: mismatch banner, result, method, metric and kernel tables.
use super::render_md::{
    ci, method_line, mismatch_lines, num, opt, p_value, pct, result_line, verdict_text,
};
use super::{Comparison, PairComparison, Verdict};
use std::fmt::Write;

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse;margin:.5em 0 1.5em}th,td{border:1px solid #ccc;padding:.25em .5em;font-size:.9em}td.n{text-align:right;font-variant-numeric:tabular-nums}th{background:#f2f2f2}.regressed{background:#fdd;font-weight:bold}.improved{background:#dfd}.mismatch{border:3px solid #c00;background:#fee;padding:.5em 1em;margin-bottom:1em}.ok{color:#060}.bad{color:#c00}code{font-size:.9em}";

/// Escapes text for HTML element content and attribute values.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

pub fn render(c: &Comparison) -> String {
    let mut s = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>llmprof compare</title><style>{STYLE}</style></head><body>\n<h1>llmprof compare</h1>\n"
    );
    let mismatches = mismatch_lines(c);
    if !mismatches.is_empty() {
        s.push_str("<div class=\"mismatch\"><strong>SETUP MISMATCH</strong>: the runs were not made under the same setup; deltas mix the change you made with these differences:<ul>");
        for l in &mismatches {
            let _ = write!(s, "<li><strong>{}</strong></li>", esc(l));
        }
        s.push_str("</ul></div>\n");
    }
    let _ = writeln!(
        s,
        "<p>A: <code>{}</code><br>B: <code>{}</code></p>",
        esc(&c.a.display().to_string()),
        esc(&c.b.display().to_string())
    );
    let switches = super::render_md::switch_lines(c);
    if !switches.is_empty() {
        s.push_str("<p>Fast-path switches that differ:</p><ul>");
        for l in &switches {
            let _ = write!(s, "<li>{}</li>", esc(l));
        }
        s.push_str("</ul>\n");
    }
    let class = if c.regressions.is_empty() {
        "ok"
    } else {
        "bad"
    };
    let _ = writeln!(
        s,
        "<p class=\"{class}\"><strong>Result: {}</strong></p>",
        esc(&result_line(c))
    );
    let _ = writeln!(s, "<p>Method: {}</p>", esc(&method_line(c)));
    if !c.unmatched_jobs.is_empty() {
        s.push_str("<p>Jobs without a partner (not compared):</p><ul>");
        for u in &c.unmatched_jobs {
            let _ = write!(s, "<li>{}</li>", esc(u));
        }
        s.push_str("</ul>\n");
    }
    for p in &c.pairs {
        pair(&mut s, p);
    }
    s.push_str("</body></html>\n");
    s
}

fn pair(s: &mut String, p: &PairComparison) {
    if !p.job.is_empty() {
        let _ = writeln!(s, "<h2>Job <code>{}</code></h2>", esc(&p.job));
    }
    s.push_str("<h3>Metrics</h3>\n<table><tr><th>metric</th><th>unit</th><th>A</th><th>B</th><th>Δ</th><th>n A/B</th><th>p (Mann-Whitney)</th><th>B/A median ratio [CI]</th><th>verdict</th><th>note</th></tr>\n");
    for m in &p.metrics {
        let class = match m.verdict {
            Verdict::Regressed => " class=\"regressed\"",
            Verdict::Improved => " class=\"improved\"",
            _ => "",
        };
        let _ = writeln!(
            s,
            "<tr{class}><td title=\"{}\">{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}/{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&m.key),
            esc(&m.label),
            esc(&m.unit),
            opt(m.a),
            opt(m.b),
            pct(m.delta_pct),
            m.n_a,
            m.n_b,
            esc(&p_value(m)),
            ci(m),
            esc(&verdict_text(m)),
            esc(&m.note)
        );
    }
    s.push_str("</table>\n<h3>Kernels whose total time changed most</h3>\n");
    let k = &p.kernels;
    if let Some(note) = &k.note {
        let _ = writeln!(s, "<p>{}</p>", esc(note));
        return;
    }
    let _ = writeln!(
        s,
        "<p>All kernels: A {} ms, B {} ms (one Kineto pass each).</p>",
        num(k.a_total_ms),
        num(k.b_total_ms)
    );
    s.push_str("<table><tr><th>kernel</th><th>A ms</th><th>B ms</th><th>Δ ms</th><th>Δ</th><th>calls A/B</th></tr>\n");
    for r in &k.rows {
        let _ = writeln!(
            s,
            "<tr><td><code>{}</code></td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{:+.3}</td><td class=\"n\">{}</td><td>{}/{}</td></tr>",
            esc(&r.name),
            num(r.a_ms),
            num(r.b_ms),
            r.delta_ms,
            r.delta_pct.map(|d| format!("{d:+.1} %")).unwrap_or_else(|| "new".into()),
            r.a_calls,
            r.b_calls
        );
    }
    s.push_str("</table>\n");
}
