//! `llmprof report RUN_DIR [--open]`: rebuild report.html from the artifacts already in a run
//! directory or a multirun root (no GPU, no libtorch), and optionally open it in a browser.
use crate::report::html;
use anyhow::Result;
use std::path::Path;

pub fn run(dir: &Path, open: bool) -> Result<i32> {
    let path = html::write(dir)?;
    crate::stdout::println(&path.display().to_string())?;
    if open {
        open_in_browser(&path);
    }
    Ok(0)
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
