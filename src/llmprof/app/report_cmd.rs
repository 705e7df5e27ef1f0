//! `llmprof report RUN_DIR [--open]`: rebuild every report of a run directory (or of each job of
//! a multirun root, then the sweep's summary) from what the run recorded, without a GPU or
//! libtorch: stage 1's metrics.json, report.md, summary and assumptions.md from measurements.json
//! (report/rebuild.rs), then report.html; optionally open the page in a browser.
use crate::report::html;
use crate::report::rebuild::{self, Rebuilt};
use anyhow::Result;
use std::path::Path;

pub fn run(dir: &Path, open: bool) -> Result<i32> {
    if html::is_multirun_root(dir) {
        for job in &crate::run_dir::job_dirs(dir)? {
            // One job that cannot be rebuilt leaves the others and the sweep page to be built.
            if let Err(e) = rebuild_one(job) {
                tracing::warn!("{}: {e:#}", job.display());
                eprintln!("llmprof: {}: {e:#}", job.display());
            }
        }
        // The sweep's numbers come from the jobs' metrics.json, read again after their rebuild.
        let jobs = crate::report::sweep::jobs_on_disk(dir)?;
        let summary = crate::report::sweep::summary_markdown(&jobs);
        crate::run_dir::write_atomic(
            &dir.join(crate::report::artifacts::SWEEP_SUMMARY_MD),
            &summary,
        )?;
    } else {
        html::load::RunArtifacts::check_is_run_dir(dir)?;
        rebuild_one(dir)?;
    }
    let path = html::write(dir)?;
    crate::stdout::println(&path.display().to_string())?;
    if open {
        open_in_browser(&path);
    }
    Ok(0)
}

/// The reports of one run directory, saying what they were built from.
fn rebuild_one(dir: &Path) -> Result<()> {
    match rebuild::run_dir(dir)? {
        Rebuilt::Measurements => tracing::info!(
            "{}: metrics.json, report.md, stakeholder_summary.md, assumptions.md rebuilt from measurements.json",
            dir.display()
        ),
        Rebuilt::MetricsOnly => tracing::warn!(
            "{}: recorded before measurements.json existed: metrics.json kept as recorded, report.md and stakeholder_summary.md rendered from it",
            dir.display()
        ),
        Rebuilt::Nothing => {}
    }
    Ok(())
}

/// Hands the page to the desktop's opener; says so when there is none (the page is written).
fn open_in_browser(path: &Path) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    match std::process::Command::new(opener)
        .arg(path)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        Ok(_) => tracing::info!("opened {} with {opener}", path.display()),
        Err(e) => tracing::warn!(
            "could not start {opener} ({e}): open {} in a browser yourself",
            path.display()
        ),
    }
}
