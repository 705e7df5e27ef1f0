//! The matcher on a real trace of CUDA-graph replays (tests/fixtures/kineto/hf_cuda_graph: HF
//! transformers' decode step captured and replayed 8 times, 218 kernels each), with a replay op
//! put around each launch as llmprof's shim opens it, and records built from replay 0.
use super::*;
use crate::measure::capture_record::{GraphNode, REPLAY_OP_PREFIX};
use crate::measure::kineto_events::{HostKind, KernelRecord, OpRecord};
use crate::region::ModulePath;

fn fixture() -> ProfileEvents {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/kineto/hf_cuda_graph.trace.json.gz"
    );
    let file = std::fs::File::open(path).unwrap();
    let mut events = crate::measure::kineto_json::read_trace(file, &mut |_| {})
        .unwrap()
        .events;
    // The shim's replay op around each launch: 1 µs before it to 1 µs after.
    let launches: Vec<OpRecord> = events
        .ops
        .iter()
        .filter(|o| o.kind == HostKind::Runtime && o.name.contains("GraphLaunch"))
        .cloned()
        .collect();
    assert_eq!(launches.len(), 8);
    for l in launches {
        events.ops.push(OpRecord {
            name: format!("{REPLAY_OP_PREFIX}5").into(),
            kind: HostKind::Op,
            start_ns: l.start_ns - 1000,
            duration_ns: l.duration_ns + 2000,
            correlation_id: 0,
            linked_correlation_id: 0,
            flops: 0,
            input_shapes: "".into(),
            ..l
        });
    }
    events
}

/// The device events of each replay, in start order.
fn replays(events: &ProfileEvents, a: &Attribution) -> Vec<Vec<usize>> {
    let mut by_launch: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    for (i, k) in events.kernels.iter().enumerate() {
        if replay_of(events, a, i).is_some() {
            let launch = a.launches.of(k).unwrap();
            by_launch
                .entry(events.ops[launch].start_ns)
                .or_default()
                .push(i);
        }
    }
    let mut v: Vec<Vec<usize>> = by_launch.into_values().collect();
    for r in &mut v {
        r.sort_by_key(|&i| events.kernels[i].start_ns);
    }
    v
}

/// A node of `kind` named `name` after `deps`, owned by `module` (and `region`) when given.
fn node(
    kind: NodeKind,
    name: &str,
    deps: Vec<u32>,
    module: Option<&str>,
    region: Option<&str>,
) -> GraphNode {
    GraphNode {
        kind,
        name: name.into(),
        mangled: String::new(),
        deps,
        owner: NodeOwner {
            region: region.map(Into::into),
            module: module.map(|m| ModulePath {
                kind: m.into(),
                index: None,
            }),
        },
    }
}

/// A chain record of `events` (each node depends on the one before), node i owned by module
/// `m{i}`.
fn chain_record(k: &[&KernelRecord]) -> CaptureRecord {
    CaptureRecord {
        serial: 5,
        label: "decode_step batch 1 window 64".into(),
        nodes: k
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let deps = if i == 0 { vec![] } else { vec![i as u32 - 1] };
                let m = format!("m{i}");
                node(node_kind_of(e.kind).unwrap(), &e.name, deps, Some(&m), None)
            })
            .collect(),
        error: None,
    }
}

fn setup() -> (ProfileEvents, Attribution, Vec<Vec<usize>>, CaptureRecord) {
    let events = fixture();
    let a = Attribution::new(&events);
    let r = replays(&events, &a);
    let first: Vec<&KernelRecord> = r[0].iter().map(|&i| &events.kernels[i]).collect();
    let record = chain_record(&first);
    (events, a, r, record)
}

#[test]
fn every_replay_matches_its_record_node_for_node() {
    let (events, a, r, record) = setup();
    assert_eq!(r.len(), 8);
    assert!(
        r.iter().all(|x| x.len() == 218),
        "{:?}",
        r.iter().map(Vec::len).collect::<Vec<_>>()
    );
    let got = match_replays(&events, &a, &BTreeMap::from([(5, record)]));
    let m = &got.mapping;
    assert_eq!((m.graphs, m.graphs_without_record, m.replays), (1, 0, 8));
    assert_eq!(
        (m.replays_matched, m.kernels_matched, m.kernels_unmatched),
        (8, 8 * 218, 0)
    );
    assert_eq!(
        (m.mismatches_total, m.nodes_missing, m.names_unchecked),
        (0, 0, 0)
    );
    for replay in &r {
        for (pos, &i) in replay.iter().enumerate() {
            let owner = got.owners[i].as_ref().unwrap();
            assert_eq!(owner.module.as_ref().unwrap().kind, format!("m{pos}"));
            assert!(got.replayed[i]);
        }
    }
    // Work outside the replays is neither replayed nor owned.
    let outside = (0..events.kernels.len()).filter(|&i| !got.replayed[i]);
    assert!(outside.clone().all(|i| got.owners[i].is_none()));
}

#[test]
fn a_renamed_node_is_reported_at_its_position_and_the_rest_stays_unmatched() {
    let (events, a, r, mut record) = setup();
    record.nodes[40].name = "void not_what_ran<float>()".into();
    let got = match_replays(&events, &a, &BTreeMap::from([(5, record)]));
    let m = &got.mapping;
    assert_eq!(m.mismatches_total, 8);
    assert_eq!(m.replays_matched, 0);
    assert_eq!(m.kernels_matched, 8 * 40);
    assert_eq!(m.kernels_unmatched, 8 * (218 - 40));
    let want_ns: u64 = r
        .iter()
        .flat_map(|x| &x[40..])
        .map(|&i| events.kernels[i].duration_ns)
        .sum();
    assert_eq!(m.unmatched_ns, want_ns);
    let first = &m.mismatches[0];
    assert_eq!((first.serial, first.replay, first.position), (5, 0, 40));
    assert_eq!(first.expected, ["void not_what_ran<float>()"]);
    assert_eq!(first.found, normalised(&events.kernels[r[0][40]].name));
    assert!(got.owners[r[0][39]].is_some() && got.owners[r[0][40]].is_none());
}

#[test]
fn a_node_the_trace_lacks_is_counted_missing_and_a_graph_without_record_unmatched() {
    let (events, a, _, mut record) = setup();
    let mut extra = record.nodes[217].clone();
    extra.deps = vec![217];
    record.nodes.push(extra);
    let got = match_replays(&events, &a, &BTreeMap::from([(5, record)]));
    assert_eq!(
        (got.mapping.nodes_missing, got.mapping.replays_matched),
        (8, 0)
    );
    assert_eq!(got.mapping.kernels_unmatched, 0);
    let none = match_replays(&events, &a, &BTreeMap::new());
    assert_eq!(
        (
            none.mapping.graphs_without_record,
            none.mapping.kernels_unmatched
        ),
        (1, 8 * 218)
    );
    assert!(none.owners.iter().all(Option::is_none));
}

#[test]
fn untraced_copies_are_skipped_and_counted_not_failed() {
    let (events, a, _, mut record) = setup();
    // A memset between nodes 10 and 11 that no trace event shows.
    record
        .nodes
        .push(node(NodeKind::Memset, "", vec![10], None, None));
    record.nodes[11].deps = vec![218];
    let got = match_replays(&events, &a, &BTreeMap::from([(5, record)]));
    let m = &got.mapping;
    assert_eq!(
        (m.replays_matched, m.copies_not_traced, m.mismatches_total),
        (8, 8, 0)
    );
}

#[test]
fn two_branches_interleaved_in_time_match_by_name_and_readiness() {
    // Node 0 forks into branches a (1 → 2) and b (3), joined by 4. The trace shows a1, b, a2, join.
    let node = |name: &str, deps: Vec<u32>, m: &str| {
        node(NodeKind::Kernel, name, deps, Some(m), Some("sam"))
    };
    let record = CaptureRecord {
        serial: 9,
        label: "vision".into(),
        nodes: vec![
            node("fork", vec![], "f"),
            node("a", vec![0], "a1"),
            node("a", vec![1], "a2"),
            node("b", vec![0], "b"),
            node("join", vec![2, 3], "j"),
        ],
        error: None,
    };
    let host = |name: &str, kind, start, dur, corr| {
        crate::measure::op_tables::tests::host(name, kind, start, dur, corr)
    };
    let ops = vec![
        host(&format!("{REPLAY_OP_PREFIX}9"), HostKind::Op, 0, 100, 1),
        host("cudaGraphLaunch", HostKind::Runtime, 10, 20, 77),
    ];
    let kernel = |name: &str, start: u64| KernelRecord {
        name: name.into(),
        kind: DeviceKind::Kernel,
        device_index: 0,
        stream: 7,
        start_ns: start,
        duration_ns: 5,
        correlation_id: 77,
        op_correlation_id: 0,
    };
    let events = ProfileEvents {
        ops,
        kernels: vec![
            kernel("fork", 100),
            kernel("a", 110),
            kernel("b", 112),
            kernel("a", 120),
            kernel("join", 130),
        ],
    };
    let a = Attribution::new(&events);
    let got = match_replays(&events, &a, &BTreeMap::from([(9, record)]));
    let names: Vec<String> = got
        .owners
        .iter()
        .map(|o| o.as_ref().unwrap().module.as_ref().unwrap().kind.clone())
        .collect();
    assert_eq!(names, ["f", "a1", "b", "a2", "j"]);
    assert_eq!(got.mapping.replays_matched, 1);
    assert_eq!(
        got.owners[2].as_ref().unwrap().region.as_deref(),
        Some("sam")
    );
}

#[test]
fn replayed_work_linked_to_the_replay_op_itself_matches_the_same() {
    // Kineto gives work launched inside an op that op's id (External id): replayed kernels are
    // then owned by the replay op, not by the graph launch (seen in llmprof's traces on an H200).
    let (mut events, _, _, record) = setup();
    let replay_ops: Vec<usize> = (0..events.ops.len())
        .filter(|&i| replay_serial(&events.ops[i].name).is_some())
        .collect();
    for (n, &op) in replay_ops.iter().enumerate() {
        events.ops[op].correlation_id = 9_000_000 + n as u64;
    }
    let a0 = Attribution::new(&events);
    for i in 0..events.kernels.len() {
        let Some(launch) = a0.launches.of(&events.kernels[i]) else {
            continue;
        };
        if let Some(n) = replay_ops
            .iter()
            .position(|&op| a0.op_parent[launch] == Some(op))
        {
            events.kernels[i].op_correlation_id = 9_000_000 + n as u64;
        }
    }
    let a = Attribution::new(&events);
    assert!(replay_ops
        .iter()
        .any(|&op| a.kernel_owner.contains(&Some(op))));
    let got = match_replays(&events, &a, &BTreeMap::from([(5, record)]));
    let m = &got.mapping;
    assert_eq!(
        (m.replays, m.replays_matched, m.kernels_matched),
        (8, 8, 8 * 218)
    );
}

#[test]
fn memsets_take_the_first_free_node_of_their_kind_and_never_hold_kernels_back() {
    // k0 → memset → k1, and a second memset; the trace shows the memsets first, then the kernels.
    // A third memset event has no node left: a mismatch at its position.
    let kernel_node = |name: &str, deps: Vec<u32>| node(NodeKind::Kernel, name, deps, None, None);
    let memset_node = |deps: Vec<u32>, m: &str| node(NodeKind::Memset, "", deps, Some(m), None);
    let record = CaptureRecord {
        serial: 2,
        label: "g".into(),
        nodes: vec![
            kernel_node("k0", vec![]),
            memset_node(vec![0], "first"),
            kernel_node("k1", vec![1]),
            memset_node(vec![], "second"),
        ],
        error: None,
    };
    let g = WorkGraph::new(&record);
    let ev = |k: NodeKind, n: &str| (k, n.to_string(), 7i64);
    let w = walk(
        &g,
        &[
            ev(NodeKind::Memset, "Memset (Device)"),
            ev(NodeKind::Memset, "Memset (Device)"),
            ev(NodeKind::Kernel, "k0"),
            ev(NodeKind::Kernel, "k1"),
        ],
    );
    assert!(w.mismatch.is_none());
    let modules: Vec<Option<String>> = w
        .owners
        .iter()
        .map(|o| o.as_ref().unwrap().module.as_ref().map(|m| m.kind.clone()))
        .collect();
    assert_eq!(
        modules,
        [Some("first".into()), Some("second".into()), None, None]
    );
    assert_eq!((w.kernels_left, w.copies_left), (0, 0));
    let w = walk(
        &g,
        &[
            ev(NodeKind::Memset, "m"),
            ev(NodeKind::Memset, "m"),
            ev(NodeKind::Memset, "m"),
        ],
    );
    assert_eq!(w.mismatch.unwrap().0, 2);
    assert_eq!(
        w.kernels_left, 0,
        "kernels are not counted before the walk ends"
    );
}

#[test]
fn two_streams_launching_one_kernel_name_keep_their_own_chains() {
    // fork → a: x → wide; fork → b: x → narrow; join. Stream 8 (b) runs its `x` first, before
    // stream 7's: taking the lowest ready `x` (a's) would leave b's `narrow` waiting on a node
    // never matched. The next kernel on the event's stream tells the two apart.
    let node =
        |name: &str, deps: Vec<u32>, m: &str| node(NodeKind::Kernel, name, deps, Some(m), None);
    let record = CaptureRecord {
        serial: 3,
        label: "lanes".into(),
        nodes: vec![
            node("fork", vec![], "f"),
            node("x", vec![0], "ax"),
            node("wide", vec![1], "aw"),
            node("x", vec![0], "bx"),
            node("narrow", vec![3], "bn"),
            node("join", vec![2, 4], "j"),
        ],
        error: None,
    };
    let g = WorkGraph::new(&record);
    let ev = |n: &str, s: i64| (NodeKind::Kernel, n.to_string(), s);
    let w = walk(
        &g,
        &[
            ev("fork", 7),
            ev("x", 8),
            ev("x", 7),
            ev("narrow", 8),
            ev("wide", 7),
            ev("join", 7),
        ],
    );
    assert!(w.mismatch.is_none());
    let modules: Vec<String> = w
        .owners
        .iter()
        .map(|o| o.as_ref().unwrap().module.as_ref().unwrap().kind.clone())
        .collect();
    assert_eq!(modules, ["f", "bx", "ax", "bn", "aw", "j"]);
    // The same trace with mangled names on the events matches the driver's names too.
    let mut mangled = record.clone();
    mangled.nodes[5].mangled = "_Z4joinv".into();
    let g = WorkGraph::new(&mangled);
    let w = walk(
        &g,
        &[
            ev("fork", 7),
            ev("x", 7),
            ev("wide", 7),
            ev("x", 8),
            ev("narrow", 8),
            ev("_Z4joinv", 7),
        ],
    );
    assert!(w.mismatch.is_none() && w.owners.len() == 6);
}
