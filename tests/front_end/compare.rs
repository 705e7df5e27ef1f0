//! `llmprof compare` on recorded runs (tests/fixtures/runs/: a CPU stage1 run of the tiny model
//! and a two-job CPU sweep, recorded with this build; README.md there says how). The "slower"
//! runs are copies of a recorded run whose per-request samples the test scales: that is
//! legitimate here because these tests check the comparer's decision on given samples, not the
//! speed of a model.
use crate::support::{repo_root, run_in, scratch, stderr, stdout};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    repo_root().join("tests/fixtures/runs").join(name)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

/// A copy of the recorded run under `dir/name`, with metrics.json passed through `edit`.
fn edited_copy(dir: &Path, name: &str, edit: impl FnOnce(&mut Value)) -> PathBuf {
    let to = dir.join(name);
    copy_dir(&fixture("stage1_cpu"), &to);
    let p = to.join("metrics.json");
    let mut m: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    edit(&mut m);
    std::fs::write(&p, serde_json::to_string_pretty(&m).unwrap()).unwrap();
    to
}

/// Every request's prefill (and so TTFT and e2e) `factor` times as long.
fn slower_prefill(m: &mut Value, factor: f64) {
    for r in m["requests"].as_array_mut().unwrap() {
        let prefill = r["stage_ms"]["prefill"].as_f64().unwrap();
        let extra = prefill * (factor - 1.0);
        r["stage_ms"]["prefill"] = (prefill * factor).into();
        let e2e = r["stage_ms"]["e2e"].as_f64().unwrap();
        r["stage_ms"]["e2e"] = (e2e + extra).into();
        for k in ["ttft_ms", "e2e_ms"] {
            let v = r[k].as_f64().unwrap();
            r[k] = (v + extra).into();
        }
    }
}

fn compare(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let mut all = vec!["compare"];
    all.extend_from_slice(args);
    let out = run_in(dir, &all);
    (out.status.code().unwrap_or(-1), stdout(&out), stderr(&out))
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}):\n{text}"))
}

/// (key, verdict) of every metric row of the first pair.
fn verdicts(v: &Value) -> Vec<(String, String)> {
    v["pairs"][0]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["key"].as_str().unwrap().to_string(),
                m["verdict"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn identical_runs_show_no_regression_and_exit_0() {
    let dir = scratch("compare-identical");
    let a = fixture("stage1_cpu");
    let a = a.to_str().unwrap();
    let (code, out, err) = compare(&dir, &[a, a]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains("no significant regression beyond 5 %"),
        "{out}"
    );
    assert!(
        !out.contains("regressed") && !out.contains("SETUP MISMATCH"),
        "{out}"
    );
    assert!(
        out.contains("Mann-Whitney") && out.contains("confidence level 95 %"),
        "{out}"
    );
    let (code, out, _) = compare(&dir, &[a, a, "--format", "json"]);
    assert_eq!(code, 0);
    let v = json(&out);
    assert_eq!(v["exit_code"], 0);
    let rows = verdicts(&v);
    assert!(rows.len() >= 10, "{rows:?}");
    assert!(
        rows.iter()
            .all(|(_, verdict)| verdict == "no_significant_change"),
        "{rows:?}"
    );
    for m in v["pairs"][0]["metrics"].as_array().unwrap() {
        assert_eq!(m["delta_pct"].as_f64(), Some(0.0), "{m}");
    }
}

#[test]
fn a_clearly_slower_prefill_exits_1_naming_prefill() {
    let dir = scratch("compare-slower");
    let a = fixture("stage1_cpu");
    let b = edited_copy(&dir, "slower", |m| slower_prefill(m, 2.0));
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let (code, out, err) = compare(&dir, &[a, b]);
    assert_eq!(code, 1, "{out}\n{err}");
    let result = out.lines().find(|l| l.contains("Result:")).unwrap();
    assert!(
        result.contains("REGRESSION") && result.contains("stage prefill"),
        "{result}"
    );
    let (code, out, _) = compare(&dir, &[a, b, "--format", "json"]);
    assert_eq!(code, 1);
    let v = json(&out);
    let rows = verdicts(&v);
    let verdict = |k: &str| {
        rows.iter()
            .find(|r| r.0 == k)
            .map(|r| r.1.as_str())
            .unwrap_or_else(|| panic!("{k} missing"))
    };
    for k in ["stage.prefill", "ttft", "stage.e2e", "e2e"] {
        assert_eq!(verdict(k), "regressed", "{k}: {rows:?}");
    }
    // What the edit left alone does not move.
    for k in [
        "stage.sam",
        "stage.clip",
        "stage.vision",
        "stage.decode",
        "stage.decode_step",
        "itl",
        "tpot",
    ] {
        assert_eq!(verdict(k), "no_significant_change", "{k}: {rows:?}");
    }
    let prefill = &v["pairs"][0]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["key"] == "stage.prefill")
        .unwrap()
        .clone();
    assert!(
        (prefill["delta_pct"].as_f64().unwrap() - 100.0).abs() < 1e-6,
        "{prefill}"
    );
    assert_eq!(prefill["basis"], "statistical");
    assert!(
        prefill["mann_whitney"]["p_two_sided"].as_f64().unwrap() < 0.05,
        "{prefill}"
    );
    assert!(
        prefill["ratio_ci"]["low"].as_f64().unwrap() > 1.0,
        "{prefill}"
    );
    // The other way round the same change is an improvement: exit 0.
    let (code, out, _) = compare(&dir, &[b, a]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("improved"), "{out}");
    // A threshold above the change lets it pass.
    let (code, _, _) = compare(&dir, &[a, b, "--threshold", "150"]);
    assert_eq!(code, 0);
    // Gating on decode alone ignores the prefill regression.
    let (code, out, _) = compare(&dir, &[a, b, "--metrics", "decode,tpot,itl"]);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("stage prefill"), "{out}");
}

#[test]
fn bad_inputs_exit_2_with_the_file_and_the_fix() {
    let dir = scratch("compare-bad");
    let a = fixture("stage1_cpu");
    let a = a.to_str().unwrap();
    let missing = dir.join("no-such-run");
    let (code, out, err) = compare(&dir, &[a, missing.to_str().unwrap()]);
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(
        err.contains("no-such-run") && err.contains("no such directory") && err.contains("fix:"),
        "{err}"
    );
    assert!(out.is_empty(), "{out}");

    let failed = edited_copy(&dir, "failed", |_| {});
    let status = failed.join("status.json");
    let text = std::fs::read_to_string(&status)
        .unwrap()
        .replace("\"succeeded\"", "\"failed\"");
    std::fs::write(&status, text).unwrap();
    let (code, _, err) = compare(&dir, &[a, failed.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(
        err.contains("failed/status.json") && err.contains("did not succeed"),
        "{err}"
    );

    let old = edited_copy(&dir, "old-schema", |m| {
        m["schema"] = "llmprof.metrics/v1".into()
    });
    let (code, _, err) = compare(&dir, &[old.to_str().unwrap(), a]);
    assert_eq!(code, 2);
    assert!(
        err.contains("old-schema/metrics.json")
            && err.contains("llmprof.metrics/v1")
            && err.contains("fix:"),
        "{err}"
    );

    let broken = edited_copy(&dir, "broken", |m| m["stages"] = "oops".into());
    let (code, _, err) = compare(&dir, &[a, broken.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(
        err.contains("broken/metrics.json") && err.contains("stages"),
        "{err}"
    );

    let (code, _, err) = compare(&dir, &[a, a, "--metrics", "ttft,no_such_metric"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("no_such_metric") && err.contains("ttft"),
        "{err}"
    );

    let sweep = fixture("sweep_cpu");
    let (code, _, err) = compare(&dir, &[a, sweep.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(
        err.contains("multirun root") && err.contains("fix:"),
        "{err}"
    );
}

#[test]
fn setup_mismatch_is_printed_first() {
    let dir = scratch("compare-mismatch");
    let a = fixture("stage1_cpu");
    let b = edited_copy(&dir, "bigger-batch", |m| {
        m["setup"]["batch_size"] = 8.into();
        m["setup"]["gpu"] = "NVIDIA H100 80GB HBM3".into();
    });
    let (code, out, err) = compare(&dir, &[a.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    let banner = out.find("SETUP MISMATCH").expect("banner");
    assert!(banner < out.find("Result:").unwrap() && banner < out.find("| metric").unwrap());
    assert!(
        out.contains("gpu: A = (none) | B = NVIDIA H100 80GB HBM3")
            && out.contains("batch_size: A = 1 | B = 8"),
        "{out}"
    );
    assert!(err.contains("SETUP MISMATCH"), "also on stderr: {err}");
}

#[test]
fn sweeps_match_jobs_by_their_overrides() {
    let dir = scratch("compare-sweeps");
    let a = fixture("sweep_cpu");
    let b = dir.join("sweep-b");
    copy_dir(&a, &b);
    // Job 1 (batch 2) of B gets a slower prefill; job 0 stays the same.
    let p = b.join("1/metrics.json");
    let mut m: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    slower_prefill(&mut m, 3.0);
    std::fs::write(&p, serde_json::to_string(&m).unwrap()).unwrap();
    let (code, out, err) = compare(
        &dir,
        &[a.to_str().unwrap(), b.to_str().unwrap(), "--format", "json"],
    );
    assert_eq!(code, 1, "{out}\n{err}");
    let v = json(&out);
    let jobs: Vec<&str> = v["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["job"].as_str().unwrap())
        .collect();
    assert_eq!(jobs, vec!["runtime.batch_size=1", "runtime.batch_size=2"]);
    let regressions: Vec<&str> = v["regressions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    assert!(
        regressions
            .iter()
            .all(|r| r.starts_with("[runtime.batch_size=2]")),
        "{regressions:?}"
    );
    assert!(
        regressions.contains(&"[runtime.batch_size=2] stage prefill"),
        "{regressions:?}"
    );
}

#[test]
fn html_is_one_self_contained_page() {
    let dir = scratch("compare-html");
    let a = fixture("stage1_cpu");
    let b = edited_copy(&dir, "slower", |m| slower_prefill(m, 2.0));
    let (code, out, _) = compare(
        &dir,
        &[a.to_str().unwrap(), b.to_str().unwrap(), "--format", "html"],
    );
    assert_eq!(code, 1);
    assert!(out.starts_with("<!DOCTYPE html>") && out.trim_end().ends_with("</html>"));
    assert!(
        out.contains("<tr class=\"regressed\"><td title=\"stage.prefill\">"),
        "{out}"
    );
    for external in ["<script", "http://", "https://", "<link"] {
        assert!(!out.contains(external), "{external} in the page");
    }
}
