//! The Markdown rendering of a comparison (the default of `llmprof compare`): a setup-mismatch
//! banner first, then the result line, the method, one metric table per compared pair and the
//! kernel diff. The number formats are shared with the HTML page.
use super::{Basis, Comparison, MetricRow, PairComparison, Verdict};
use std::fmt::Write;

/// Text from a run or a trace (a region's name) inside a table cell: bars escaped, line breaks
/// as spaces.
fn table_text(text: &str) -> String {
    text.replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// A number with about four significant digits.
pub fn num(v: f64) -> String {
    let a = v.abs();
    if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.3}")
    } else {
        format!("{v:.4}")
    }
}

pub fn opt(v: Option<f64>) -> String {
    v.map(num).unwrap_or_else(|| "—".into())
}

pub fn pct(v: Option<f64>) -> String {
    v.map(|d| format!("{d:+.1} %"))
        .unwrap_or_else(|| "—".into())
}

/// "regressed", "improved (threshold only)", …
pub fn verdict_text(m: &MetricRow) -> String {
    let only = m.basis == Basis::ThresholdOnly
        && matches!(m.verdict, Verdict::Regressed | Verdict::Improved);
    format!(
        "{}{}",
        m.verdict.text(),
        if only { " (threshold only)" } else { "" }
    )
}

pub fn p_value(m: &MetricRow) -> String {
    m.mann_whitney
        .map(|t| {
            let p = t.p_two_sided;
            let text = if p < 0.001 {
                format!("{p:.1e}")
            } else {
                format!("{p:.3}")
            };
            format!("{text}{}", if t.exact { " (exact)" } else { "" })
        })
        .unwrap_or_else(|| "—".into())
}

pub fn ci(m: &MetricRow) -> String {
    m.ratio_ci
        .map(|c| format!("{:.3} [{:.3}, {:.3}]", c.ratio, c.low, c.high))
        .unwrap_or_else(|| "—".into())
}

/// The result line: the regressions, or that there are none.
pub fn result_line(c: &Comparison) -> String {
    if c.regressions.is_empty() {
        format!(
            "no significant regression beyond {} %",
            c.method.threshold_pct
        )
    } else {
        format!(
            "REGRESSION beyond {} %: {}",
            c.method.threshold_pct,
            c.regressions.join(", ")
        )
    }
}

pub fn method_line(c: &Comparison) -> String {
    let m = &c.method;
    format!(
        "{}; confidence level {} %, alpha {}, {} bootstrap resamples (seed {:#x}); threshold {} %. Values are medians of the samples (n = sample count), or the run's or trace's one value (threshold only).",
        m.test,
        m.confidence * 100.0,
        m.alpha,
        m.bootstrap_resamples,
        m.bootstrap_seed,
        m.threshold_pct
    )
}

/// Every setup mismatch of every pair, one line each (empty when the setups agree).
pub fn mismatch_lines(c: &Comparison) -> Vec<String> {
    lines(c, |p| &p.setup_mismatch)
}

/// The fast-path switches that differ, one line each, with the job where there are several.
pub fn switch_lines(c: &Comparison) -> Vec<String> {
    lines(c, |p| &p.switches)
}

fn lines(
    c: &Comparison,
    of: fn(&super::PairComparison) -> &Vec<super::setup::Mismatch>,
) -> Vec<String> {
    let mut out = Vec::new();
    for p in &c.pairs {
        for m in of(p) {
            let job = if p.job.is_empty() {
                String::new()
            } else {
                format!("[{}] ", p.job)
            };
            out.push(format!("{job}{}: A = {} | B = {}", m.field, m.a, m.b));
        }
    }
    out
}

pub fn render(c: &Comparison) -> String {
    let mut s = String::from("# llmprof compare\n\n");
    let mismatches = mismatch_lines(c);
    if !mismatches.is_empty() {
        s.push_str("> **!! SETUP MISMATCH !!** the runs were not made under the same setup; deltas mix the change you made with these differences:\n>\n");
        for l in &mismatches {
            let _ = writeln!(s, "> - **{l}**");
        }
        s.push('\n');
    }
    let _ = writeln!(s, "- A: `{}`\n- B: `{}`\n", c.a.display(), c.b.display());
    let switches = switch_lines(c);
    if !switches.is_empty() {
        s.push_str("Fast-path switches that differ (docs/fast-path.md):\n\n");
        for l in &switches {
            let _ = writeln!(s, "- {l}");
        }
        s.push('\n');
    }
    let _ = writeln!(s, "**Result: {}**\n", result_line(c));
    let _ = writeln!(s, "Method: {}\n", method_line(c));
    if !c.unmatched_jobs.is_empty() {
        s.push_str("Jobs without a partner (not compared):\n\n");
        for u in &c.unmatched_jobs {
            let _ = writeln!(s, "- {u}");
        }
        s.push('\n');
    }
    for p in &c.pairs {
        pair(&mut s, p);
    }
    s
}

fn pair(s: &mut String, p: &PairComparison) {
    let level = if p.job.is_empty() {
        "##"
    } else {
        let _ = writeln!(
            s,
            "## Job `{}`\n\n- A: `{}`\n- B: `{}`\n",
            p.job,
            p.a.display(),
            p.b.display()
        );
        "###"
    };
    let _ = writeln!(s, "{level} Metrics\n");
    s.push_str("| metric | unit | A | B | Δ | n A/B | p (Mann-Whitney) | B/A median ratio [CI] | verdict | note |\n|---|---|---:|---:|---:|---|---|---|---|---|\n");
    for m in &p.metrics {
        let v = verdict_text(m);
        let v = if m.verdict == Verdict::Regressed {
            format!("**{v}**")
        } else {
            v
        };
        let _ = writeln!(
            s,
            "| {} (`{}`) | {} | {} | {} | {} | {}/{} | {} | {} | {} | {} |",
            table_text(&m.label),
            table_text(&m.key).replace('`', "'"),
            m.unit,
            opt(m.a),
            opt(m.b),
            pct(m.delta_pct),
            m.n_a,
            m.n_b,
            p_value(m),
            ci(m),
            v,
            m.note
        );
    }
    let _ = writeln!(s, "\n{level} Kernels whose total time changed most\n");
    let k = &p.kernels;
    if let Some(note) = &k.note {
        let _ = writeln!(s, "{note}\n");
        return;
    }
    let _ = writeln!(
        s,
        "All kernels: A {} ms, B {} ms (one Kineto pass each).\n",
        num(k.a_total_ms),
        num(k.b_total_ms)
    );
    s.push_str("| kernel | A ms | B ms | Δ ms | Δ | calls A/B |\n|---|---:|---:|---:|---:|---|\n");
    for r in &k.rows {
        let _ = writeln!(
            s,
            "| `{}` | {} | {} | {:+.3} | {} | {}/{} |",
            r.name.replace('|', "\\|"),
            num(r.a_ms),
            num(r.b_ms),
            r.delta_ms,
            r.delta_pct
                .map(|d| format!("{d:+.1} %"))
                .unwrap_or_else(|| "new".into()),
            r.a_calls,
            r.b_calls
        );
    }
    s.push('\n');
}
