//! `llmprof report` on recorded run directories (tests/fixtures/report), and the pages it writes
//! loaded from disk by a real browser (headless Chromium, networking off): every chart drawn, no
//! script error, a screenshot kept under target/ci-artifacts/. Without Chromium the browser test
//! skips loudly, unless CI is set or `.ci/run` left its marker (then it fails).
use crate::support::{repo_root, run_in, scratch, stderr, stdout};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        let to = dst.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to);
        } else {
            std::fs::copy(e.path(), &to).unwrap();
        }
    }
}

/// A fresh copy of a recorded run directory.
pub(crate) fn recorded(name: &str, scratch_name: &str) -> PathBuf {
    let dir = scratch(scratch_name).join(name);
    copy_dir(&repo_root().join("tests/fixtures/report").join(name), &dir);
    dir
}

pub(crate) fn report(dir: &Path) -> PathBuf {
    let out = run_in(dir.parent().unwrap(), &["report", dir.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "llmprof report failed:\n{}",
        stderr(&out)
    );
    let page = PathBuf::from(stdout(&out).trim());
    assert_eq!(page, dir.join("report.html"));
    page
}

#[test]
fn a_run_from_before_measurements_json_keeps_its_numbers() {
    // Recorded by an llmprof whose worker wrote metrics.json itself: there is nothing to derive
    // the numbers from again, so metrics.json stays byte for byte, and the Markdown reports are
    // rendered from it (#39 item 3).
    let dir = recorded("stage1-cpu", "report-old-run");
    assert!(!dir.join("measurements.json").exists() && !dir.join("report.md").exists());
    let metrics = std::fs::read(dir.join("metrics.json")).unwrap();
    let out = run_in(dir.parent().unwrap(), &["report", dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("recorded before measurements.json existed"),
        "{}",
        stderr(&out)
    );
    assert!(std::fs::read(dir.join("metrics.json")).unwrap() == metrics);
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(report.contains("deepseek_ocr_tiny"), "{report}");
    assert!(dir.join("stakeholder_summary.md").is_file());
}

#[test]
fn report_rebuilds_the_page_and_rejects_what_is_not_a_run() {
    let dir = recorded("stage1-cpu", "report-cli");
    let page = report(&dir);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.len() > 1_000_000, "plotly.js is embedded");
    assert!(html.contains("deepseek_ocr_tiny"));
    let missing = dir.join("no-such-run");
    let out = run_in(&dir, &["report", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("is not a directory"),
        "{}",
        stderr(&out)
    );
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let out = run_in(&dir, &["report", empty.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("not an llmprof run directory"),
        "{}",
        stderr(&out)
    );
    assert!(
        !empty.join("report.html").exists(),
        "nothing written for a bad input"
    );
}

/// Chromium, when installed (LLMPROF_CHROMIUM names another binary).
pub(crate) fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("LLMPROF_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .flat_map(|n| std::env::split_paths(&path).map(move |d| d.join(n)))
        .find(|p| p.is_file())
}

/// Runs headless Chromium with networking off on `page`; returns (stdout, stderr). Output goes
/// through files: a DOM dump holds all of plotly.js, more than a pipe buffers.
pub(crate) fn browse(chromium: &Path, page: &Path, extra: &[String]) -> (String, String) {
    let out_path = page.with_extension("stdout.txt");
    let err_path = page.with_extension("stderr.txt");
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--proxy-server=127.0.0.1:9",
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--hide-scrollbars",
            "--virtual-time-budget=30000",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .expect("chromium starts");
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(180) {
            let _ = child.kill();
            panic!("chromium did not finish within 180 s on {}", page.display());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let read = |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap()).to_string();
    (read(&out_path), read(&err_path))
}

/// The start tags of the chart divs of a DOM dump.
fn chart_tags(dom: &str) -> Vec<String> {
    let re = regex::Regex::new(r#"<div [^>]*class="chart[^"]*"[^>]*>"#).unwrap();
    re.find_iter(dom).map(|m| m.as_str().to_string()).collect()
}

#[test]
fn report_pages_render_in_a_headless_browser() {
    let Some(chromium) = chromium() else {
        if crate::support::services_required() {
            panic!("CI (or .ci/run's marker target/ci-services-required) asks for it but chromium is not installed: .ci/run installs it (apt-get install chromium)");
        }
        eprintln!("\n!!!!!!!! SKIPPED report_pages_render_in_a_headless_browser: chromium is not installed (apt-get install chromium); CI runs it !!!!!!!!\n");
        return;
    };
    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("ci-artifacts");
    std::fs::create_dir_all(&shots).unwrap();
    let body_tag = regex::Regex::new(r"<body[^>]*>").unwrap();
    for name in ["stage1-cpu", "stage2-h100", "sweep-cpu"] {
        let dir = recorded(name, "report-browser");
        let page = report(&dir);
        let html = std::fs::read_to_string(&page).unwrap();
        if name == "sweep-cpu" {
            // The root's page links every job's page, rebuilt with it.
            for job in ["0", "1", "2", "3"] {
                assert!(
                    dir.join(job).join("report.html").is_file(),
                    "job {job} page"
                );
                assert!(
                    html.contains(&format!("href=\"./{job}/report.html\"")),
                    "job {job} link"
                );
            }
        }
        let charts = html.matches("<div class=\"chart\"").count();
        assert!(charts > 0, "{name}: no chart in the page");
        let (dom, log) = browse(&chromium, &page, &["--dump-dom".into()]);
        assert!(
            dom.contains(&format!("data-charts-done=\"{charts}\"")),
            "{name}: the page script did not finish its {charts} charts\n{log}"
        );
        let tags = chart_tags(&dom);
        assert_eq!(tags.len(), charts, "{name}");
        for t in &tags {
            assert!(
                t.contains("data-rendered=\"1\"") && t.contains("js-plotly-plot"),
                "{name}: chart not drawn: {t}"
            );
            assert!(
                !t.contains("data-traces=\"0\""),
                "{name}: chart drew no trace: {t}"
            );
        }
        assert!(dom.contains("class=\"main-svg\""), "{name}: no plotly SVG");
        let body = body_tag
            .find(&dom)
            .map(|m| m.as_str().to_string())
            .unwrap_or_default();
        assert!(
            !body.contains("data-script-errors"),
            "{name}: script errors on the page: {body}"
        );
        assert!(
            dom.contains("<pre id=\"script-errors\" hidden=\"\"></pre>"),
            "{name}: the error box is not empty"
        );
        for bad in ["Uncaught", "CONSOLE(", "net::ERR"] {
            let lines: Vec<&str> = log.lines().filter(|l| l.contains(bad)).collect();
            assert!(
                lines.is_empty(),
                "{name}: browser log has {bad}:\n{}",
                lines.join("\n")
            );
        }
        let png = shots.join(format!("report-{name}.png"));
        let _ = std::fs::remove_file(&png);
        browse(
            &chromium,
            &page,
            &[
                "--window-size=1400,4200".into(),
                format!("--screenshot={}", png.display()),
            ],
        );
        let size = std::fs::metadata(&png).map(|m| m.len()).unwrap_or(0);
        assert!(
            size > 20_000,
            "{name}: screenshot {} missing or blank",
            png.display()
        );
        eprintln!("screenshot: {}", png.display());
    }
}
