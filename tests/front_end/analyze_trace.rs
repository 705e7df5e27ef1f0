//! `llmprof analyze trace` on traces made by code that is not llmprof (transformers on an H200,
//! tests/fixtures/kineto/README.md): the JSON interface, kernel totals against an independent
//! pass over the raw events, the operator table against torch.profiler's own `key_averages()`,
//! CUDA-graph replays, the folder it writes, and the errors on files that are not traces.
use std::collections::BTreeMap;
use std::io::Read;
use std::path::PathBuf;

use serde_json::Value;

use crate::support::{run_in, scratch, stderr, stdout};

fn fixture(name: &str) -> PathBuf {
    crate::support::repo_root()
        .join("tests/fixtures/kineto")
        .join(name)
}

fn analyse_json(args: &[&str]) -> Value {
    // A folder per call: tests run side by side and `scratch` empties its folder.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = scratch(&format!("analyze-trace-json-{call}"));
    let out = run_in(
        &dir,
        &[&["analyze", "trace", "--format", "json"], args].concat(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_str(&stdout(&out)).expect("analyze trace --format json prints JSON")
}

fn raw_events(name: &str) -> Vec<Value> {
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(fixture(name)).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let root: Value = serde_json::from_str(&text).unwrap();
    root["traceEvents"].as_array().unwrap().clone()
}

fn ns(v: &Value) -> u64 {
    (v.as_f64().unwrap() * 1000.0).round() as u64
}

#[test]
fn kernel_totals_equal_the_raw_events_and_regions_hold_them_all() {
    for name in ["hf_eager.trace.json.gz", "hf_cuda_graph.trace.json.gz"] {
        let path = fixture(name);
        let a = analyse_json(&[path.to_str().unwrap()]);
        // Independent pass: every kernel/memcpy/memset event's duration by name.
        let mut raw: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        for e in raw_events(name) {
            if e["ph"] == "X"
                && matches!(
                    e["cat"].as_str(),
                    Some("kernel" | "gpu_memcpy" | "gpu_memset")
                )
            {
                let entry = raw
                    .entry(e["name"].as_str().unwrap().to_string())
                    .or_default();
                entry.0 += 1;
                entry.1 += ns(&e["dur"]);
            }
        }
        let kernels = a["kernels"].as_array().unwrap();
        assert_eq!(
            kernels.len(),
            raw.len(),
            "{name}: one row per distinct kernel"
        );
        for k in kernels {
            let (calls, total) = raw[k["name"].as_str().unwrap()];
            assert_eq!(k["calls"].as_u64(), Some(calls), "{name}: {}", k["name"]);
            assert_eq!(ns(&k["total_us"]), total, "{name}: {}", k["name"]);
        }
        let all: u64 = raw.values().map(|v| v.1).sum();
        let regions: u64 = a["regions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| ns(&r["total_us"]))
            .sum();
        assert!(
            regions.abs_diff(all) <= a["regions"].as_array().unwrap().len() as u64,
            "{name}"
        );
    }
}

#[test]
fn operators_match_key_averages_self_device_time() {
    for stem in ["hf_eager", "hf_cuda_graph"] {
        let path = fixture(&format!("{stem}.trace.json.gz"));
        let a = analyse_json(&[path.to_str().unwrap()]);
        let reference: Vec<Value> = serde_json::from_str(
            &std::fs::read_to_string(fixture(&format!("{stem}.key_averages.json"))).unwrap(),
        )
        .unwrap();
        let mut ours: BTreeMap<&str, (f64, &str)> = BTreeMap::new();
        for o in a["operators"].as_array().unwrap() {
            ours.insert(
                o["name"].as_str().unwrap(),
                (
                    o["self_cuda_us"].as_f64().unwrap(),
                    o["kind"].as_str().unwrap(),
                ),
            );
        }
        let mut compared = 0;
        for r in &reference {
            let name = r["name"].as_str().unwrap();
            // ATen operators; runtime calls differ by design (docs/analyze-trace.md: torch
            // charges graph replays to nothing, llmprof to cudaGraphLaunch).
            let Some(&(mine, "Op")) = ours.get(name) else {
                continue;
            };
            let theirs = r["self_device_time_total_us"].as_f64().unwrap();
            assert!(
                (mine - theirs).abs() <= 0.01 * theirs.max(0.001),
                "{stem} {name}: llmprof {mine} µs, key_averages {theirs} µs"
            );
            compared += 1;
        }
        assert!(compared > 20, "{stem}: {compared} operators compared");
    }
}

#[test]
fn cuda_graph_replays_are_counted_under_their_region() {
    let path = fixture("hf_cuda_graph.trace.json.gz");
    let a = analyse_json(&[path.to_str().unwrap()]);
    let launches = raw_events("hf_cuda_graph.trace.json.gz")
        .iter()
        .filter(|e| e["ph"] == "X" && e["name"] == "cudaGraphLaunch")
        .count() as u64;
    assert_eq!(launches, 8);
    assert_eq!(a["graphs"]["launches"].as_u64(), Some(launches));
    let decode = a["regions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["region"] == "decode")
        .unwrap();
    assert_eq!(decode["graph_launches"].as_u64(), Some(8));
    assert_eq!(decode["graph_calls"], a["graphs"]["calls"]);
    // Nine iterations: the prefill step and eight replays, each with its GPU work.
    let steps = a["iterations"].as_array().unwrap();
    assert_eq!(steps.len(), 9);
    assert!(steps
        .iter()
        .all(|s| s["devices"][0]["work_items"].as_u64().unwrap() > 0));
}

#[test]
fn out_writes_a_folder_and_refuses_a_foreign_one() {
    let dir = scratch("analyze-trace-out");
    let out_dir = dir.join("analysis");
    let trace = fixture("hf_eager.trace.json.gz");
    let o = run_in(
        &dir,
        &[
            "analyze",
            "trace",
            trace.to_str().unwrap(),
            "--out",
            out_dir.to_str().unwrap(),
            "--regions",
            "prefill,decode,generate",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    for f in [
        "analysis.json",
        "report.md",
        "report.html",
        "kernels.md",
        "operators.md",
        "regions.md",
    ] {
        assert!(out_dir.join(f).metadata().is_ok_and(|m| m.len() > 0), "{f}");
    }
    let html = std::fs::read_to_string(out_dir.join("report.html")).unwrap();
    assert!(html.contains("id=\"regions\"") && html.contains("Where the GPU"));
    let a: Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("analysis.json")).unwrap())
            .unwrap();
    let regions: Vec<&str> = a["regions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["region"].as_str().unwrap())
        .collect();
    assert!(
        regions
            .iter()
            .all(|r| ["prefill", "decode", "generate", "(no region)"].contains(r)),
        "{regions:?}"
    );
    // Again into the same folder: fine. Into a folder of other files: refused.
    assert!(run_in(
        &dir,
        &[
            "analyze",
            "trace",
            trace.to_str().unwrap(),
            "--out",
            out_dir.to_str().unwrap()
        ]
    )
    .status
    .success());
    let foreign = dir.join("foreign");
    std::fs::create_dir_all(&foreign).unwrap();
    std::fs::write(foreign.join("notes.txt"), "mine").unwrap();
    let o = run_in(
        &dir,
        &[
            "analyze",
            "trace",
            trace.to_str().unwrap(),
            "--out",
            foreign.to_str().unwrap(),
        ],
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("choose another --out"),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        std::fs::read_to_string(foreign.join("notes.txt")).unwrap(),
        "mine"
    );
}

#[test]
fn a_folder_of_ranks_gets_the_view_across_ranks() {
    let dir = scratch("analyze-trace-ranks");
    let ranks = dir.join("ranks");
    std::fs::create_dir_all(&ranks).unwrap();
    for r in 0..2 {
        std::fs::copy(
            fixture("hf_cuda_graph.trace.json.gz"),
            ranks.join(format!("worker-rank{r}.pt.trace.json.gz")),
        )
        .unwrap();
    }
    std::fs::write(ranks.join("notes.txt"), "not a trace").unwrap();
    // Other JSON in the folder (a config, an earlier analysis) is skipped with a warning.
    std::fs::write(ranks.join("config.json"), r#"{"hidden_size": 512}"#).unwrap();
    let a = analyse_json(&[ranks.to_str().unwrap()]);
    let list = a["ranks"].as_array().expect("several files: a ranks list");
    assert_eq!(
        list.iter()
            .map(|r| r["rank"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        [0, 1]
    );
    assert!(list
        .iter()
        .all(|r| r["kernels"].as_array().is_some_and(|k| !k.is_empty())));
    assert_eq!(a["across_ranks"]["steps"].as_array().unwrap().len(), 9);
}

#[test]
fn files_that_are_not_traces_are_refused_by_name() {
    let dir = scratch("analyze-trace-bad");
    let cases: [(&str, &[u8], &str); 4] = [
        (
            "cut.json",
            br#"{"traceEvents": [{"ph": "X", "name": "a"}, {"ph": "X", "na"#,
            "truncated",
        ),
        ("table.json", b"name,calls\n", "starts with 'n'"),
        ("other.json", br#"{"data": [1, 2]}"#, "no traceEvents array"),
        ("empty.json", b"", "empty"),
    ];
    for (name, bytes, expected) in cases {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        let o = run_in(&dir, &["analyze", "trace", path.to_str().unwrap()]);
        assert!(!o.status.success(), "{name}");
        assert!(
            stderr(&o).contains(expected) && stderr(&o).contains(name),
            "{name}: {}",
            stderr(&o)
        );
    }
    let empty = dir.join("no-traces");
    std::fs::create_dir_all(&empty).unwrap();
    let o = run_in(&dir, &["analyze", "trace", empty.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("no trace files"), "{}", stderr(&o));
}

/// The graph trace with every kernel `factor` times longer, written as plain JSON.
fn slowed_copy(dir: &std::path::Path, factor: f64) -> PathBuf {
    let mut events = raw_events("hf_cuda_graph.trace.json.gz");
    for e in &mut events {
        if e["cat"] == "kernel" {
            let dur = e["dur"].as_f64().unwrap();
            e["dur"] = serde_json::json!((dur * factor * 1000.0).round() / 1000.0);
        }
    }
    let path = dir.join(format!("slowed-{factor}.json"));
    std::fs::write(
        &path,
        serde_json::json!({ "traceEvents": events }).to_string(),
    )
    .unwrap();
    path
}

#[test]
fn compare_takes_two_traces_and_gates_on_iterations() {
    let dir = scratch("analyze-trace-compare");
    let base = fixture("hf_cuda_graph.trace.json.gz");
    let base = base.to_str().unwrap();
    // The same trace twice: nothing changed, exit 0.
    let same = run_in(&dir, &["compare", base, base, "--format", "json"]);
    assert_eq!(same.status.code(), Some(0), "{}", stderr(&same));
    let c: Value = serde_json::from_str(&stdout(&same)).unwrap();
    let keys: Vec<&str> = c["pairs"][0]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["key"].as_str().unwrap())
        .collect();
    for k in [
        "iteration",
        "iteration_gpu_busy",
        "gpu_work",
        "idle_share",
        "region.decode",
    ] {
        assert!(keys.contains(&k), "{k} in {keys:?}");
    }
    // Kernels 30 % slower: GPU time per iteration regresses (9 samples a side), exit 1.
    let slow = slowed_copy(&dir, 1.3);
    let o = run_in(
        &dir,
        &["compare", base, slow.to_str().unwrap(), "--format", "json"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let c: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let busy = c["pairs"][0]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["key"] == "iteration_gpu_busy")
        .unwrap()
        .clone();
    assert_eq!(busy["verdict"], "regressed", "{busy}");
    assert!(c["pairs"][0]["kernels"]["rows"]
        .as_array()
        .is_some_and(|r| !r.is_empty()));
    // Folders written by --out compare the same way.
    let (out_a, out_b) = (dir.join("a"), dir.join("b"));
    for (trace, out) in [(base, &out_a), (slow.to_str().unwrap(), &out_b)] {
        assert!(run_in(
            &dir,
            &["analyze", "trace", trace, "--out", out.to_str().unwrap()]
        )
        .status
        .success());
    }
    let o = run_in(
        &dir,
        &["compare", out_a.to_str().unwrap(), out_b.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("GPU busy time per iteration"),
        "{}",
        stdout(&o)
    );
    // A trace against a run directory: bad input, exit 2, saying which is which.
    let run = dir.join("run");
    std::fs::create_dir_all(&run).unwrap();
    let o = run_in(&dir, &["compare", base, run.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("is a trace"), "{}", stderr(&o));
}
