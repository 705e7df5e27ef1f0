//! The analyses on traces built by construction (every number below follows from the events
//! written) and on a recorded one (numbers recomputed from the raw JSON by a separate pass).
use serde_json::{json, Value};

use super::analysis::{analyse, Options};
use super::ranks::across;
use super::regions::RegionFilter;
use crate::measure::kineto_json::read_trace;

/// Builds a Kineto-shaped trace; times in µs.
#[derive(Default)]
struct Trace {
    events: Vec<Value>,
    next_id: u64,
    rank: Option<u64>,
}

impl Trace {
    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }
    /// A host range (user annotation or op) on thread 1.
    fn host(&mut self, cat: &str, name: &str, ts: f64, dur: f64) -> u64 {
        let id = self.id();
        self.events.push(
            json!({"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1,
            "ts": ts, "dur": dur, "args": {"External id": id}}),
        );
        id
    }
    /// A launch call at `ts` (2 µs long) and the GPU work it made at `gpu_ts` on `stream`.
    fn launch(
        &mut self,
        cat: &str,
        name: &str,
        ts: f64,
        gpu_ts: f64,
        dur: f64,
        stream: i64,
    ) -> u64 {
        let corr = self.id();
        self.events.push(
            json!({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
            "pid": 1, "tid": 1, "ts": ts, "dur": 2, "args": {"correlation": corr}}),
        );
        self.events.push(json!({"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": stream,
            "ts": gpu_ts, "dur": dur, "args": {"correlation": corr, "device": 0, "stream": stream}}));
        corr
    }
    /// A cudaGraphLaunch at `ts` replaying `kernels` (gpu start, duration) on stream 7.
    fn graph(&mut self, ts: f64, kernels: &[(f64, f64)]) {
        let corr = self.id();
        self.events.push(
            json!({"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch",
            "pid": 1, "tid": 1, "ts": ts, "dur": 5, "args": {"correlation": corr}}),
        );
        for (i, (gpu_ts, dur)) in kernels.iter().enumerate() {
            self.events.push(
                json!({"ph": "X", "cat": "kernel", "name": format!("graph_kernel_{i}"),
                "pid": 0, "tid": 7, "ts": gpu_ts, "dur": dur,
                "args": {"correlation": corr, "device": 0, "stream": 7}}),
            );
        }
    }
    fn text(&self) -> String {
        let mut root =
            json!({"traceEvents": self.events, "deviceProperties": [{"name": "NVIDIA H200"}]});
        if let Some(rank) = self.rank {
            root["distributedInfo"] = json!({"rank": rank, "world_size": 2});
        }
        root.to_string()
    }
    fn analyse(&self, options: &Options) -> super::TraceAnalysis {
        let read = read_trace(self.text().as_bytes(), &mut |_| {}).unwrap();
        analyse(&read, "built", options)
    }
}

#[test]
fn the_gpu_breakdown_follows_from_the_events() {
    let mut t = Trace::default();
    // Compute 100..200 (launched at 90), a collective 150..260 on another stream, a copy
    // 255..270 that only the collective overlaps at its start.
    t.launch("kernel", "gemm", 90.0, 100.0, 100.0, 7);
    t.launch(
        "kernel",
        "ncclDevKernel_AllReduce_Sum_bf16",
        95.0,
        150.0,
        110.0,
        20,
    );
    t.launch(
        "gpu_memcpy",
        "Memcpy DtoD (Device -> Device)",
        96.0,
        255.0,
        15.0,
        7,
    );
    // Gap 270..300: the kernel ending it was launched at 285 (after the gap began): host wait.
    t.launch("kernel", "a", 285.0, 300.0, 10.0, 7);
    // Gap 310..320 (10 µs, launched long before): kernel wait.
    t.launch("kernel", "b", 97.0, 320.0, 10.0, 7);
    // Gap 330..400 (70 µs ≥ 30, launched before): other.
    t.launch("kernel", "c", 98.0, 400.0, 10.0, 7);
    let a = t.analyse(&Options::default());
    assert_eq!(a.timeline.len(), 1);
    let d = &a.timeline[0];
    assert_eq!(d.work_items, 6);
    assert_eq!(d.window_us, 310.0); // 100 .. 410
    assert_eq!(d.computation_us, 100.0 + 30.0);
    assert_eq!(d.communication_us, 60.0); // 200..260 (150..200 is under the gemm)
    assert_eq!(d.communication_overlapped_us, 50.0);
    assert_eq!(d.memory_us, 10.0); // 260..270
    assert_eq!(d.busy_us, 200.0);
    assert_eq!(d.idle_us, 110.0);
    assert_eq!(
        (d.idle_host_wait_us, d.idle_kernel_wait_us, d.idle_other_us),
        (30.0, 10.0, 70.0)
    );
    assert_eq!(
        (
            d.sum_computation_us,
            d.sum_communication_us,
            d.sum_memory_us
        ),
        (130.0, 110.0, 15.0)
    );
    assert!((d.communication_share() - 60.0 / 310.0).abs() < 1e-12);
    // Every kernel once in the kernel table, with its class's work summed.
    assert_eq!(a.kernels.iter().map(|k| k.calls).sum::<u64>(), 6);
    assert_eq!(a.gpu_total_us, 255.0);
}

fn phases() -> Trace {
    let mut t = Trace::default();
    t.host("user_annotation", "ProfilerStep#0", 0.0, 100.0);
    t.host("user_annotation", "prefill", 1.0, 90.0);
    t.launch("kernel", "prefill_gemm", 2.0, 10.0, 40.0, 7);
    t.launch("kernel", "prefill_gemm", 3.0, 50.0, 40.0, 7);
    t.host("user_annotation", "ProfilerStep#1", 100.0, 100.0);
    t.host("user_annotation", "decode", 101.0, 90.0);
    t.graph(102.0, &[(110.0, 5.0), (115.0, 6.0), (121.0, 7.0)]);
    t.host("user_annotation", "ProfilerStep#2", 200.0, 100.0);
    t.host("user_annotation", "decode", 201.0, 90.0);
    t.graph(202.0, &[(210.0, 5.0), (215.0, 6.0), (221.0, 7.0)]);
    // Outside every annotation.
    t.launch("kernel", "stray", 350.0, 360.0, 1.0, 7);
    t
}

#[test]
fn kernels_are_grouped_by_their_annotations_and_graph_replays_counted() {
    let a = phases().analyse(&Options::default());
    let region = |name: &str| a.regions.iter().find(|r| r.region == name).unwrap().clone();
    let decode = region("decode");
    assert_eq!((decode.calls, decode.total_us), (6, 36.0));
    assert_eq!((decode.graph_launches, decode.graph_calls), (2, 6));
    let prefill = region("prefill");
    assert_eq!(
        (prefill.calls, prefill.total_us, prefill.graph_launches),
        (2, 80.0, 0)
    );
    assert_eq!(region("(no region)").calls, 1);
    assert!(a
        .regions
        .iter()
        .all(|r| !r.region.starts_with("ProfilerStep")));
    assert_eq!(
        (a.graphs.launches, a.graphs.calls, a.graphs.total_us),
        (2, 6, 36.0)
    );
    let k0 = a
        .kernels
        .iter()
        .find(|k| k.name == "graph_kernel_0")
        .unwrap();
    assert_eq!((k0.calls, k0.graph_calls, k0.total_us), (2, 2, 10.0));
    let by = |r: &str, n: &str| {
        a.kernels_by_region
            .iter()
            .find(|k| k.region == r && k.name == n)
            .map(|k| (k.calls, k.total_us))
    };
    assert_eq!(by("prefill", "prefill_gemm"), Some((2, 80.0)));
    assert_eq!(by("decode", "graph_kernel_2"), Some((2, 14.0)));

    // Grouping by iteration instead, with a glob.
    let options = Options {
        regions: RegionFilter::new(&["ProfilerStep#*".to_string()]).unwrap(),
        ..Options::default()
    };
    let by_step = phases().analyse(&options);
    let names: Vec<(&str, u64)> = by_step
        .regions
        .iter()
        .map(|r| (r.region.as_str(), r.calls))
        .collect();
    assert_eq!(
        names,
        [
            ("ProfilerStep#0", 2),
            ("ProfilerStep#1", 3),
            ("ProfilerStep#2", 3),
            ("(no region)", 1)
        ]
    );
    assert!(RegionFilter::new(&[" ".to_string()]).is_err());
}

#[test]
fn module_scopes_are_regions_only_when_asked_for() {
    let default = RegionFilter::new(&[]).unwrap();
    assert!(default.accepts("decode_step") && !default.accepts("module:layer[3].mlp"));
    assert!(!default.accepts("ProfilerStep#4"));
    let modules = RegionFilter::new(&["module:*".to_string()]).unwrap();
    assert!(modules.accepts("module:layer[3].mlp") && !modules.accepts("decode_step"));
}

#[test]
fn iterations_hold_the_work_their_steps_launched() {
    let a = phases().analyse(&Options::default());
    let steps: Vec<(u64, f64, u64, f64)> = a
        .iterations
        .iter()
        .map(|i| {
            (
                i.step,
                i.host_us,
                i.devices[0].work_items,
                i.devices[0].busy_us,
            )
        })
        .collect();
    assert_eq!(
        steps,
        [
            (0, 100.0, 2, 80.0),
            (1, 100.0, 3, 18.0),
            (2, 100.0, 3, 18.0)
        ]
    );
    // Step 0: gemm 10..50 and 50..90 touch: no gap. Step 1: 110..128, no gaps.
    assert_eq!(a.iterations[0].devices[0].idle_us, 0.0);
    assert_eq!(a.iterations[1].gpu_span_us(), 18.0);
}

/// Two ranks, three steps: rank 1 computes 30 µs longer each step; rank 0 waits in the
/// all-reduce for it.
fn rank(rank: u64) -> Trace {
    let mut t = Trace {
        rank: Some(rank),
        ..Trace::default()
    };
    for step in 0..3u64 {
        let base = 1000.0 * step as f64;
        t.host(
            "user_annotation",
            &format!("ProfilerStep#{step}"),
            base,
            500.0,
        );
        let compute = 100.0 + 30.0 * rank as f64;
        t.launch("kernel", "gemm", base + 1.0, base + 10.0, compute, 7);
        // The all-reduce ends together on both ranks (at base + 300).
        let comm_start = base + 10.0 + compute;
        t.launch(
            "kernel",
            "ncclDevKernel_AllReduce_Sum_bf16",
            base + 2.0,
            comm_start,
            base + 300.0 - comm_start,
            7,
        );
    }
    t
}

#[test]
fn the_straggler_and_communication_share_across_ranks() {
    let r0 = rank(0).analyse(&Options::default());
    let r1 = rank(1).analyse(&Options::default());
    assert_eq!((r0.source.rank, r1.source.rank), (Some(0), Some(1)));
    let view = across(&[(0, &r0), (1, &r1)]);
    assert_eq!(view.steps.len(), 3);
    for s in &view.steps {
        assert_eq!(s.straggler_rank, Some(1));
        assert_eq!(
            s.slowest_rank, None,
            "equal host durations: no slowest rank"
        );
        assert_eq!(s.computation_spread_us, 30.0);
        assert_eq!(s.host_spread_us, 0.0);
    }
    assert_eq!(view.usual_straggler, Some((1, 3)));
    // Rank 0: per step 290 µs of window, 190 of it in the all-reduce; rank 1: 160 of 290.
    let share = |r: usize| view.ranks[r].communication_share;
    assert!(
        (share(0) - 3.0 * 190.0 / (2290.0)).abs() < 1e-12,
        "{}",
        share(0)
    );
    assert!(
        (share(1) - 3.0 * 160.0 / (2290.0)).abs() < 1e-12,
        "{}",
        share(1)
    );
}

#[test]
fn on_a_recorded_trace_region_totals_equal_the_raw_sums() {
    let text = include_str!("../../../tests/fixtures/kineto/h100_decode_step_slice.json");
    let read = read_trace(text.as_bytes(), &mut |_| {}).unwrap();
    let a = analyse(&read, "fixture", &Options::default());
    // A separate pass over the raw JSON: every kernel/memset event's dur, in ns.
    let raw: Value = serde_json::from_str(text).unwrap();
    let mut by_name: std::collections::BTreeMap<String, (u64, u64)> = Default::default();
    for e in raw["traceEvents"].as_array().unwrap() {
        if e["ph"] == "X"
            && matches!(
                e["cat"].as_str(),
                Some("kernel" | "gpu_memset" | "gpu_memcpy")
            )
        {
            let ns = (e["dur"].as_f64().unwrap() * 1000.0).round() as u64;
            let entry = by_name
                .entry(e["name"].as_str().unwrap().to_string())
                .or_default();
            entry.0 += 1;
            entry.1 += ns;
        }
    }
    assert_eq!(a.kernels.len(), by_name.len());
    for k in &a.kernels {
        let (calls, ns) = by_name[&k.name];
        assert_eq!(
            (k.calls, (k.total_us * 1000.0).round() as u64),
            (calls, ns),
            "{}",
            k.name
        );
    }
    // All of it lies in the one user scope.
    assert_eq!(a.regions.len(), 1);
    assert_eq!(a.regions[0].region, "decode_step");
    let all: u64 = by_name.values().map(|v| v.1).sum();
    assert_eq!((a.regions[0].total_us * 1000.0).round() as u64, all);
    assert_eq!(
        a.timeline[0].sum_computation_us + a.timeline[0].sum_memory_us,
        a.gpu_total_us
    );
}

#[test]
fn identical_ranks_have_no_straggler_and_a_multi_rank_analysis_reads_back() {
    use super::ranks::{Analysed, RankAnalysis};
    let one = rank(0).analyse(&Options::default());
    let view = across(&[(0, &one), (1, &one)]);
    assert!(view.steps.iter().all(|s| s.straggler_rank.is_none()));
    assert_eq!(view.usual_straggler, None);
    let analysed = Analysed::from_ranks(vec![
        RankAnalysis {
            rank: 0,
            analysis: rank(0).analyse(&Options::default()),
        },
        RankAnalysis {
            rank: 1,
            analysis: rank(1).analyse(&Options::default()),
        },
    ]);
    let text = serde_json::to_string(&analysed).unwrap();
    assert_eq!(Analysed::from_json(&text).unwrap(), analysed);
    let single = Analysed::from_ranks(vec![RankAnalysis {
        rank: 0,
        analysis: one,
    }]);
    assert_eq!(
        Analysed::from_json(&serde_json::to_string(&single).unwrap()).unwrap(),
        single
    );
}

#[test]
fn work_without_a_recorded_launch_takes_the_innermost_accepted_gpu_annotation() {
    let mut t = Trace::default();
    for (name, ts, dur) in [("decode", 0.0, 100.0), ("attn", 10.0, 20.0)] {
        t.events.push(
            json!({"ph": "X", "cat": "gpu_user_annotation", "name": name, "pid": 0,
            "tid": 7, "ts": ts, "dur": dur, "args": {"device": 0}}),
        );
    }
    // A kernel inside both, whose launch the trace does not hold.
    t.events.push(
        json!({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7,
        "ts": 12.0, "dur": 5.0, "args": {"correlation": 999, "device": 0, "stream": 7}}),
    );
    let region_of = |patterns: &[&str]| {
        let options = Options {
            regions: RegionFilter::new(&patterns.iter().map(|p| p.to_string()).collect::<Vec<_>>())
                .unwrap(),
            ..Options::default()
        };
        t.analyse(&options).regions[0].region.clone()
    };
    assert_eq!(region_of(&[]), "attn");
    assert_eq!(region_of(&["decode"]), "decode");
    assert_eq!(region_of(&["prefill"]), "(no region)");
}

#[test]
fn early_starts_are_counted_as_waits_in_the_kernel_table() {
    let mut t = Trace::default();
    // Stream 7: a 100..200, then b started at 180 (programmatic dependent launch) and ended at
    // 230: 20 µs waited; c 230..240 starts on time. Stream 9: d 150..170 runs beside them.
    t.launch("kernel", "a", 90.0, 100.0, 100.0, 7);
    t.launch("kernel", "b", 91.0, 180.0, 50.0, 7);
    t.launch("kernel", "c", 92.0, 230.0, 10.0, 7);
    t.launch("kernel", "d", 93.0, 150.0, 20.0, 9);
    let a = t.analyse(&Options::default());
    assert_eq!(a.early_start_us, 20.0);
    let waited = |name: &str| {
        a.kernels
            .iter()
            .find(|k| k.name == name)
            .unwrap()
            .early_start_us
    };
    assert_eq!(
        (waited("a"), waited("b"), waited("c"), waited("d")),
        (0.0, 20.0, 0.0, 0.0)
    );
    // Kineto's durations stay the table's times; the waits are beside them.
    assert_eq!(
        a.kernels.iter().find(|k| k.name == "b").unwrap().total_us,
        50.0
    );
}
