//! report.html: one self-contained page per run directory (stage1, stage2, infer) and per
//! multirun root, built only from the artifacts already in the folder (docs/report.md). Charts
//! are plotly.js (embedded by the `plotly` crate), tables sort and filter in the page; nothing is
//! fetched from the network.
mod header;
mod infer;
pub mod links;
pub mod load;
mod modules;
mod ncu;
pub mod page;
pub(crate) mod plots;
mod roofline;
pub mod sweep_page;
pub mod table;
mod telemetry;
mod timing;
mod top_tables;
mod utilisation;

#[cfg(test)]
mod tests;

use super::sweep::{jobs_on_disk, table as sweep_table, SweepJob};
use anyhow::{Context, Result};
use load::RunArtifacts;
use page::{Page, Section};
use std::path::{Path, PathBuf};

pub use super::artifacts::REPORT_HTML;

/// The page of a run directory.
pub fn render_run(a: &RunArtifacts) -> String {
    let command = a.command();
    let mut sections: Vec<Section> = vec![header::section(a)];
    match command.as_str() {
        "stage1" => sections.extend([
            timing::section(a),
            utilisation::section(a),
            modules::section(a),
            telemetry::section(a),
            top_tables::section(a),
        ]),
        "stage2" => sections.push(ncu::section(a)),
        "infer" => sections.push(infer::section(a)),
        _ => sections.extend([
            timing::section(a),
            utilisation::section(a),
            modules::section(a),
            telemetry::section(a),
            top_tables::section(a),
            ncu::section(a),
            infer::section(a),
        ]),
    }
    sections.push(links::section(a));
    Page {
        title: header::title(a),
        subtitle: a.dir.display().to_string(),
        banners: header::banners(a),
        sections,
    }
    .render()
}

/// A multirun root: has multirun.yaml.
pub fn is_multirun_root(dir: &Path) -> bool {
    dir.join(super::artifacts::MULTIRUN_YAML).is_file()
}

/// The page of `dir`: a multirun root's sweep page, or a run directory's page.
pub fn render(dir: &Path) -> Result<String> {
    if is_multirun_root(dir) {
        let jobs =
            jobs_on_disk(dir).with_context(|| format!("listing the jobs of {}", dir.display()))?;
        return Ok(render_sweep(dir, &jobs));
    }
    Ok(render_run(&RunArtifacts::load(dir)?))
}

/// The sweep page of `root` for `jobs`.
pub fn render_sweep(root: &Path, jobs: &[SweepJob]) -> String {
    sweep_page::render(root, &sweep_table(jobs))
}

/// Writes `dir/report.html` from the artifacts in `dir`; for a multirun root, each job's page
/// first (a job whose page fails is logged and left without a link).
pub fn write(dir: &Path) -> Result<PathBuf> {
    if is_multirun_root(dir) {
        let jobs =
            jobs_on_disk(dir).with_context(|| format!("listing the jobs of {}", dir.display()))?;
        for job in jobs.iter().filter_map(|j| j.dir.as_deref()) {
            if let Err(e) = write(job) {
                tracing::warn!("report.html of {}: {e:#}", job.display());
            }
        }
    }
    let html = render(dir)?;
    let path = dir.join(REPORT_HTML);
    crate::run_dir::write_atomic(&path, &html)?;
    Ok(path)
}

/// At the end of a run: write report.html; on failure, warn (log and stderr) and leave a
/// report.html that says what went wrong, never failing the run.
pub fn write_after_run(dir: &Path) {
    if let Err(e) = write(dir) {
        let msg = format!(
            "report.html could not be built: {e:#} (rebuild it with `llmprof report {}`)",
            dir.display()
        );
        tracing::warn!("{msg}");
        let page = Page {
            title: "llmprof report".into(),
            subtitle: dir.display().to_string(),
            banners: vec![msg],
            sections: Vec::new(),
        };
        if let Err(e2) = crate::run_dir::write_atomic(&dir.join(REPORT_HTML), &page.render()) {
            tracing::warn!("writing the error page failed too: {e2:#}");
        }
    }
}

/// A sweep root's summary.md and report.html for `jobs`; a failure to write either is logged and
/// printed, never fatal (the jobs' own directories hold their results).
pub fn write_sweep_files(root: &Path, jobs: &[SweepJob]) {
    let md = super::sweep::summary_markdown(jobs);
    if let Err(e) =
        crate::run_dir::write_atomic(&root.join(super::artifacts::SWEEP_SUMMARY_MD), &md)
    {
        tracing::warn!("summary.md: {e:#}");
        eprintln!("llmprof: {e:#}");
    }
    if let Err(e) = crate::run_dir::write_atomic(&root.join(REPORT_HTML), &render_sweep(root, jobs))
    {
        tracing::warn!("report.html of the sweep: {e:#}");
        eprintln!("llmprof: {e:#}");
    }
}
