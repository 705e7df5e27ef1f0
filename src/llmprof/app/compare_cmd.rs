//! `llmprof compare A B [--threshold PCT] [--metrics LIST] [--format md|json|html]`: renders the
//! comparison to stdout and turns it into the exit status a CI gate reads: 0 no significant
//! regression, 1 a regression beyond the threshold, 2 bad input (the error names the file and the
//! fix). docs/compare.md.
use crate::cli::Format;
use crate::compare::{self, render_html, render_md, Options};
use anyhow::{Context, Result};
use std::path::Path;

/// Exit status for bad input (also clap's for a malformed command line).
pub const BAD_INPUT: i32 = 2;

pub struct Args<'a> {
    pub a: &'a Path,
    pub b: &'a Path,
    pub threshold: f64,
    pub metrics: &'a [String],
    pub format: Option<Format>,
}

pub fn run(args: Args) -> Result<i32> {
    if !args.threshold.is_finite() || args.threshold < 0.0 {
        return bad(&format!(
            "--threshold {} is not a percentage\n  fix: give a number >= 0 (default 5)",
            args.threshold
        ));
    }
    if matches!(args.format, Some(Format::Yaml)) {
        return bad("compare writes md, json or html, not yaml\n  fix: --format md|json|html");
    }
    let opts = Options {
        threshold_pct: args.threshold,
        metrics: args
            .metrics
            .iter()
            .map(|m| m.trim().to_string())
            .filter(|m| !m.is_empty())
            .collect(),
        ..Options::default()
    };
    let c = match compare::compare(args.a, args.b, &opts) {
        Ok(c) => c,
        Err(e) => return bad(&e.to_string()),
    };
    for l in render_md::mismatch_lines(&c) {
        tracing::warn!("SETUP MISMATCH {l}");
    }
    let text = match args.format {
        Some(Format::Json) => {
            let mut v = serde_json::to_value(&c).context("serialising the comparison")?;
            v["exit_code"] = c.exit_code().into();
            serde_json::to_string_pretty(&v).context("serialising the comparison")? + "\n"
        }
        Some(Format::Html) => render_html::render(&c),
        _ => render_md::render(&c),
    };
    crate::stdout::print(&text)?;
    Ok(c.exit_code())
}

fn bad(message: &str) -> Result<i32> {
    eprintln!("Error: {message}");
    Ok(BAD_INPUT)
}
