//! report.html content on recorded run directories (tests/fixtures/report/README.md says how
//! each was recorded): every section and chart present, chart data equal to the artifacts'
//! numbers, sections without data saying so, nothing fetched from the network.
use super::load::RunArtifacts;
use super::*;
use crate::measure::nvml::NvmlTrace;
use crate::report::sweep::{jobs_on_disk, summary_markdown, table};
use crate::report::StageWindow;
use serde_json::Value;
use std::collections::BTreeMap;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/report")
        .join(name)
}

/// Chart id → its plotly figure, from a rendered page.
fn figures(html: &str) -> BTreeMap<String, Value> {
    let re =
        regex::Regex::new(r#"<script type="application/json" id="([^"]+)-data">(.*?)</script>"#)
            .expect("regex");
    re.captures_iter(html)
        .map(|c| {
            let fig: Value =
                serde_json::from_str(&c[2]).unwrap_or_else(|e| panic!("{}: {e}", &c[1]));
            (c[1].to_string(), fig)
        })
        .collect()
}

fn assert_offline(html: &str) {
    let js = page::plotly_js();
    assert!(
        js.len() > 1_000_000 && html.contains(&js),
        "plotly.js is embedded"
    );
    // What the page itself adds (plotly.js's own text left out) loads nothing from elsewhere.
    let own = html.replace(&js, "");
    let tags = regex::Regex::new(r"<(script|link|img|iframe)\b[^>]*>").unwrap();
    for t in tags.find_iter(&own) {
        let t = t.as_str();
        assert!(
            t == "<script>" || t.starts_with("<script type=\"application/json\""),
            "{t}"
        );
    }
}

#[test]
fn stage1_page_draws_the_recorded_requests() {
    let a = RunArtifacts::load(&fixture("stage1-cpu")).expect("loads");
    assert!(a.problems.is_empty(), "{:?}", a.problems);
    let m = a.metrics.as_ref().expect("metrics.json");
    let html = render_run(&a);
    assert_offline(&html);
    for id in ["setup", "time", "util", "nvml", "tables", "artifacts"] {
        assert!(
            html.contains(&format!("<section id=\"{id}\">")),
            "section {id}"
        );
    }
    assert!(
        html.contains(crate::report::SYNTHETIC_NOTE),
        "synthetic banner"
    );
    for o in &a.overrides {
        assert!(
            html.contains(&page::esc(o)),
            "override {o} in the config diff"
        );
    }
    // No GPU: the telemetry and utilisation sections say why instead of drawing.
    assert!(html.contains("No data: NVML unavailable"), "nvml note");
    assert!(!html.contains("id=\"chart-nvml\""));
    let figs = figures(&html);
    for id in [
        "chart-time-stack",
        "chart-stage-dist",
        "chart-serving-dist",
        "chart-itl-steps",
    ] {
        let data = figs[id]["data"].as_array().expect("data");
        assert!(!data.is_empty(), "{id} has traces");
    }
    // The stacked bars of each request add up to its prefill + decode.
    let stack = figs["chart-time-stack"]["data"].as_array().unwrap();
    for (i, r) in m.requests.iter().enumerate() {
        let sum: f64 = stack.iter().map(|t| t["y"][i].as_f64().unwrap()).sum();
        let want = r.stage_ms["prefill"] + r.stage_ms["decode"];
        assert!(
            (sum - want).abs() < 1e-6 * want,
            "request {i}: {sum} vs {want}"
        );
    }
    // Decode over time: one line per request, its gaps in order.
    let itl = figs["chart-itl-steps"]["data"].as_array().unwrap();
    assert_eq!(itl.len(), m.requests.len());
    let ys: Vec<f64> = itl[0]["y"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(ys, m.requests[0].itl_ms);
    // p50 markers of the serving chart are metrics.json's.
    let serving = figs["chart-serving-dist"]["data"].as_array().unwrap();
    let p50 = serving
        .iter()
        .find(|t| t["name"] == "p50")
        .expect("p50 trace");
    assert_eq!(
        p50["y"][0].as_f64(),
        m.serving.ttft_ms.as_ref().map(|s| s.p50_ms)
    );
}

#[test]
fn time_parts_split_prefill_into_the_models_leaf_regions() {
    let a = RunArtifacts::load(&fixture("stage1-cpu")).expect("loads");
    let regions = a.spec.as_ref().expect("spec").model.family.regions();
    let r = &a.metrics.as_ref().unwrap().requests[0];
    let parts = timing::time_parts(Some(&regions), r);
    let names: Vec<&str> = parts.iter().map(|p| p.0.as_str()).collect();
    // Leaves only: a region with a region inside it (vision) is not stacked on its children.
    for (name, _) in &parts {
        if let Some(reg) = regions.find(name) {
            assert!(
                !regions
                    .all()
                    .iter()
                    .any(|c| c.parent_name() == Some(reg.nvtx_name())
                        && r.stage_ms.contains_key(c.nvtx_name())),
                "{name} is not a leaf"
            );
        }
    }
    assert_eq!(names.last(), Some(&"decode"));
    let total: f64 = parts.iter().map(|p| p.1).sum();
    assert!((total - r.stage_ms["prefill"] - r.stage_ms["decode"]).abs() < 1e-9);
    // Without the region tree: prefill and decode.
    let plain = timing::time_parts(None, r);
    assert_eq!(
        plain.iter().map(|p| p.0.as_str()).collect::<Vec<_>>(),
        ["prefill", "decode"]
    );
}

#[test]
fn stage2_page_has_the_roofline_histograms_and_ncu_table() {
    let a = RunArtifacts::load(&fixture("stage2-h100")).expect("loads");
    assert!(a.problems.is_empty(), "{:?}", a.problems);
    let n = a.ncu.as_ref().expect("ncu/ analysed");
    let html = render_run(&a);
    assert_offline(&html);
    assert!(html.contains("H100"), "GPU from the ncu device attributes");
    let figs = figures(&html);
    for id in [
        "chart-roofline",
        "chart-roofline-normalised",
        "chart-bound-share",
        "chart-hist-occupancy",
        "chart-hist-sm",
        "chart-hist-dram",
        "chart-hist-tensor",
    ] {
        assert!(figs.contains_key(id), "{id} missing");
    }
    // Every kernel with FLOPs is a point of the physical roofline, in its bound class.
    let plotted: usize = figs["chart-roofline"]["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["mode"] == "markers")
        .map(|t| t["x"].as_array().unwrap().len())
        .sum();
    let with_flops = n
        .roofline
        .rows
        .iter()
        .filter(|r| {
            r.point.executed_intensity.is_some_and(|v| v > 0.0)
                && r.point.flops_per_s().is_some_and(|v| v > 0.0)
        })
        .count();
    assert!(with_flops > 0);
    assert_eq!(plotted, with_flops);
    // The normalised roofline: every point at or under the roof y = min(x, 1) (a little slack
    // for counter noise).
    for t in figs["chart-roofline-normalised"]["data"]
        .as_array()
        .unwrap()
    {
        if t["mode"] != "markers" {
            continue;
        }
        for (x, y) in t["x"]
            .as_array()
            .unwrap()
            .iter()
            .zip(t["y"].as_array().unwrap())
        {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            assert!(y <= x.min(1.0) * 1.05, "point ({x}, {y}) above the roof");
        }
    }
    // GPU time by bound: the classification summary's shares.
    let shares: f64 = figs["chart-bound-share"]["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["y"][0].as_f64().unwrap())
        .sum();
    assert!((shares - 100.0).abs() < 1e-6, "{shares}");
    // One table row per profiled kernel, full names on hover.
    assert_eq!(html.matches("<tr data-search=").count(), n.kernels.len());
    let full = page::esc(&n.kernels[0].kernel_name);
    assert!(html.contains(&format!("title=\"{full}\"")));
    // Sections stage 2 does not have are not shown as empty stage-1 sections.
    assert!(!html.contains("<section id=\"time\">"));
}

#[test]
fn telemetry_shades_stage_windows_and_marks_throttling() {
    let csv = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/nvml/h100-6pages-nvml.csv"),
    )
    .unwrap();
    let mut trace = NvmlTrace::from_csv(&csv).unwrap();
    let t0 = trace.samples[0].unix_ns;
    // A software power cap from the 10th sample on.
    for s in trace.samples.iter_mut().skip(10) {
        s.throttle_reasons = Some(0x4);
    }
    let mut a = RunArtifacts::load(&fixture("stage1-cpu")).unwrap();
    let m = a.metrics.as_mut().unwrap();
    for (i, r) in m.requests.iter_mut().enumerate() {
        let start = t0 + i as u64 * 100_000_000;
        r.windows = vec![
            StageWindow {
                stage: "prefill".into(),
                start_unix_ns: start,
                end_unix_ns: start + 40_000_000,
            },
            StageWindow {
                stage: "decode".into(),
                start_unix_ns: start + 40_000_000,
                end_unix_ns: start + 90_000_000,
            },
        ];
    }
    let windows = m.requests.len() * 2;
    a.nvml = Some(trace);
    let html = telemetry::section(&a).body;
    let figs = figures(&html);
    let fig = &figs["chart-nvml"];
    let shapes = fig["layout"]["shapes"].as_array().unwrap();
    assert_eq!(
        shapes.iter().filter(|s| s["type"] == "rect").count(),
        windows
    );
    assert_eq!(
        shapes.iter().filter(|s| s["type"] == "line").count(),
        1,
        "one throttle event"
    );
    assert!(html.contains("software power cap"));
    let names: Vec<&str> = fig["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    for want in [
        "power",
        "SM clock",
        "memory clock",
        "GPU util",
        "memory used",
        "temperature",
        "throttle",
    ] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
}

#[test]
fn throttle_events_skip_idle_and_repeats() {
    let s = |r: u64| crate::measure::nvml::NvmlSample {
        throttle_reasons: Some(r),
        ..Default::default()
    };
    let samples = vec![s(0), s(0x1), s(0x4), s(0x4), s(0x0), s(0x44), s(0x5)];
    let ev = telemetry::throttle_events(&samples);
    let at: Vec<usize> = ev.iter().map(|e| e.0).collect();
    assert_eq!(at, vec![2, 5, 6]);
    assert_eq!(
        ev[1].1,
        vec!["software power cap", "hardware thermal slowdown"]
    );
}

#[test]
fn chart_json_cannot_close_its_script() {
    let mut plot = plotly::Plot::new();
    plot.add_trace(plotly::Scatter::new(vec![1.0], vec![2.0]).name("</script><b>x</b>"));
    let html = page::chart("c", &plot);
    assert_eq!(html.matches("</script>").count(), 1);
    let fig = &figures(&html)["c"];
    assert_eq!(fig["data"][0]["name"], "</script><b>x</b>");
}

#[test]
fn sweep_summary_has_axes_numbers_and_errors() {
    let root = fixture("sweep-cpu");
    let jobs = jobs_on_disk(&root).unwrap();
    assert_eq!(jobs.iter().map(|j| j.num).collect::<Vec<_>>(), [0, 1, 2, 3]);
    let t = table(&jobs);
    assert_eq!(t.axes, ["runtime.batch_size", "device"]);
    let md = summary_markdown(&jobs);
    let lines: Vec<&str> = md.lines().collect();
    assert_eq!(lines.len(), 2 + jobs.len());
    assert!(lines[0].starts_with("| job | overrides | runtime.batch_size | device | TTFT p50 ms |"));
    assert!(lines[0].ends_with("| status | directory |"));
    for (j, line) in jobs.iter().zip(&lines[2..]) {
        assert!(line.starts_with(&format!("| {} | `", j.num)), "{line}");
        let status = read_status(j.dir.as_ref().unwrap());
        if j.status == "failed" {
            let err = status.error.unwrap().replace('\n', " ");
            assert!(line.contains(&format!("| failed: {err} |")), "{line}");
        } else {
            let m: Value = serde_json::from_str(
                &std::fs::read_to_string(j.dir.as_ref().unwrap().join("metrics.json")).unwrap(),
            )
            .unwrap();
            let ttft = m["serving"]["ttft_ms"]["p50_ms"].as_f64().unwrap();
            assert!(line.contains(&format!("| {ttft:.2} |")), "{line}");
            assert!(line.contains("| succeeded |"));
        }
    }
    let html = render_sweep(&root, &jobs);
    assert_offline(&html);
    let figs = figures(&html);
    assert!(figs.contains_key("chart-sweep-pareto"));
    assert!(figs.contains_key("chart-sweep-ttft_p50_ms"));
    // Metric against the axis: the succeeded jobs' values at their batch sizes.
    let ttft = &figs["chart-sweep-ttft_p50_ms"]["data"][0];
    assert_eq!(ttft["x"].as_array().unwrap().len(), 2);
    assert!(html.contains("class=\"failed\""), "failed rows highlighted");
}

fn read_status(d: &Path) -> crate::run_dir::Status {
    crate::run_dir::read_status(d).unwrap()
}

#[test]
fn pareto_front_by_hand() {
    // (per user, per GPU): b dominates d; a, b, c are each best somewhere.
    let pts = [(10.0, 100.0), (5.0, 300.0), (1.0, 500.0), (4.0, 200.0)];
    assert_eq!(sweep_page::pareto_front(&pts), vec![2, 1, 0]);
}

#[test]
fn not_a_run_directory_is_a_clear_error_and_the_run_hook_leaves_a_page() {
    let dir = std::env::temp_dir().join(format!("llmprof-html-empty-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let e = format!("{:#}", render(&dir).unwrap_err());
    assert!(
        e.contains("not an llmprof run directory") && e.contains("fix:"),
        "{e}"
    );
    write_after_run(&dir);
    let page = std::fs::read_to_string(dir.join(REPORT_HTML)).unwrap();
    assert!(page.contains("report.html could not be built"), "{page}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn unreadable_artifacts_are_listed_not_fatal() {
    let dir = std::env::temp_dir().join(format!("llmprof-html-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(fixture("stage1-cpu/status.json"), dir.join("status.json")).unwrap();
    std::fs::write(dir.join("metrics.json"), "{ not json").unwrap();
    let a = RunArtifacts::load(&dir).unwrap();
    assert_eq!(a.problems.len(), 1, "{:?}", a.problems);
    let html = render_run(&a);
    assert!(html.contains("Artifacts that could not be read") && html.contains("metrics.json: "));
    assert!(html.contains("No data: no metrics.json"));
    std::fs::remove_dir_all(&dir).unwrap();
}
