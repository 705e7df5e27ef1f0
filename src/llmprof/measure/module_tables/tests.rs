use super::*;
use crate::measure::capture_record::{CaptureRecord, GraphNode, NodeKind, REPLAY_OP_PREFIX};
use crate::measure::graph_match::match_replays;
use crate::measure::kineto_events::{DeviceKind, KernelRecord};
use crate::measure::module_attr::kernel_modules;
use crate::measure::op_tables::tests::host;

fn kernel(name: &str, start: u64, dur: u64, corr: u64, op: u64) -> KernelRecord {
    KernelRecord {
        name: name.into(),
        kind: DeviceKind::Kernel,
        device_index: 0,
        stream: 7,
        start_ns: start,
        duration_ns: dur,
        correlation_id: corr,
        op_correlation_id: op,
    }
}

#[test]
fn kernel_rows_get_their_modules_most_time_first() {
    let row = |stage: Option<&str>, name: &str| KernelRow {
        stage: stage.map(str::to_string),
        name: name.into(),
        calls: 1,
        total_ns: 1,
        mean_ns: 1.0,
        share_of_gpu: 0.1,
        modules: Vec::new(),
    };
    let mk = |module: &str, name: &str, ns: u64| ModuleKernelRow {
        stage: "decode_step".into(),
        module: module.into(),
        name: name.into(),
        calls: 1,
        total_ns: ns,
    };
    let mut rows = vec![
        row(Some("decode_step"), "gemv"),
        row(Some("prefill"), "gemv"),
        row(None, "gemv"),
        row(Some("decode_step"), "rope"),
    ];
    attach_modules(
        &mut rows,
        &[
            mk("lm_head", "gemv", 5),
            mk("layer.attention.qkv", "gemv", 9),
            mk("layer.attention.rope_kv", "rope", 1),
        ],
    );
    assert_eq!(rows[0].modules, ["layer.attention.qkv", "lm_head"]);
    assert!(rows[1].modules.is_empty() && rows[2].modules.is_empty());
    assert_eq!(rows[3].modules, ["layer.attention.rope_kv"]);
}

#[test]
fn host_rows_give_each_module_its_self_time_and_the_stage_the_rest() {
    // decode [0,300) ⊃ decode_step [0,100) ⊃ layer[0] [10,60) ⊃ attention [20,40) ⊃ mm;
    // lm_head [70,90); an add in decode_step outside its modules [92,95); in decode after the
    // step, a sampling scope that is no module [150,170) ⊃ argmax, and a copy [200,210).
    let ops = vec![
        host("decode", HostKind::UserScope, 0, 300, 1),
        host("decode_step", HostKind::UserScope, 0, 100, 2),
        host("module:layer[0]", HostKind::UserScope, 10, 50, 3),
        host("module:layer[0].attention", HostKind::UserScope, 20, 20, 4),
        host("aten::mm", HostKind::Op, 25, 5, 5),
        host("module:lm_head", HostKind::UserScope, 70, 20, 6),
        host("aten::add", HostKind::Op, 92, 3, 7),
        host("sampling", HostKind::UserScope, 150, 20, 8),
        host("aten::argmax", HostKind::Op, 155, 5, 9),
        host("aten::copy_", HostKind::Op, 200, 10, 10),
    ];
    let mut events = ProfileEvents {
        ops,
        kernels: vec![],
    };
    events.ops[4].flops = 100; // aten::mm inside the attention
    let a = Attribution::new(&events);
    let rows = host_module_rows(&events, &a, &["decode", "decode_step", "prefill"]);
    let attention = rows.iter().find(|r| r.module == "layer.attention").unwrap();
    assert_eq!(attention.kineto_flops, 100);
    let got: Vec<(&str, &str, Option<u32>, u64, u64)> = rows
        .iter()
        .map(|r| (&*r.stage, &*r.module, r.index, r.time_ns, r.kernels))
        .collect();
    assert_eq!(
        got,
        [
            ("decode", OUTSIDE_MODULES, None, 200, 2),
            ("decode_step", OUTSIDE_MODULES, None, 30, 1),
            ("decode_step", "layer", Some(0), 30, 0),
            ("decode_step", "layer.attention", Some(0), 20, 1),
            ("decode_step", "lm_head", None, 20, 0),
        ]
    );
    let step: u64 = rows
        .iter()
        .filter(|r| r.stage == "decode_step")
        .map(|r| r.time_ns)
        .sum();
    assert_eq!(step, 100);
}

#[test]
fn eager_and_replayed_work_land_in_their_modules_and_sum_to_the_stage() {
    // prefill (eager): module:layer[0].mlp.down ⊃ aten::mm (op 11) → gemm (30 ns), plus a
    // copy outside modules (5 ns). decode_step ⊃ replay#4 ⊃ cudaGraphLaunch (corr 90): two
    // replayed kernels, the first matched to lm_head, the second to nothing (renamed).
    let ops = vec![
        host("prefill", HostKind::UserScope, 0, 1000, 1),
        host("module:layer[0].mlp.down", HostKind::UserScope, 10, 100, 2),
        host("aten::mm", HostKind::Op, 20, 50, 11),
        host("cudaLaunchKernel", HostKind::Runtime, 30, 5, 80),
        host("aten::copy_", HostKind::Op, 200, 20, 12),
        host("cudaMemcpyAsync", HostKind::Runtime, 205, 5, 81),
        host("decode_step", HostKind::UserScope, 2000, 1000, 3),
        host(&format!("{REPLAY_OP_PREFIX}4"), HostKind::Op, 2010, 100, 13),
        host("cudaGraphLaunch", HostKind::Runtime, 2020, 10, 90),
    ];
    let mut copy = kernel("Memcpy HtoD", 300, 5, 81, 12);
    copy.kind = DeviceKind::Memcpy;
    let events = ProfileEvents {
        ops,
        kernels: vec![
            kernel("gemm", 100, 30, 80, 11),
            copy,
            kernel("lm_head_gemm", 2100, 40, 90, 0),
            kernel("other", 2150, 7, 90, 0),
        ],
    };
    let record = CaptureRecord {
        serial: 4,
        label: "decode".into(),
        nodes: vec![
            GraphNode {
                kind: NodeKind::Kernel,
                name: "lm_head_gemm".into(),
                mangled: String::new(),
                deps: vec![],
                owner: NodeOwner {
                    region: None,
                    module: Some(ModulePath {
                        kind: "lm_head".into(),
                        index: None,
                    }),
                },
            },
            GraphNode {
                kind: NodeKind::Kernel,
                name: "not_other".into(),
                mangled: String::new(),
                deps: vec![0],
                owner: NodeOwner::default(),
            },
        ],
        error: None,
    };
    let mut events = events;
    events.ops[2].flops = 1_000; // aten::mm in layer[0].mlp.down
    events.ops[4].flops = 10; // aten::copy_ outside modules
    let a = Attribution::new(&events);
    let eager = kernel_modules(&events, &a);
    let replay = match_replays(&events, &a, &BTreeMap::from([(4, record)]));
    let (rows, kernels) = module_rows(&events, &a, &eager, &replay);
    let got: Vec<(&str, &str, Option<u32>, u64, u64)> = rows
        .iter()
        .map(|r| (&*r.stage, &*r.module, r.index, r.time_ns, r.replayed_ns))
        .collect();
    assert_eq!(
        got,
        [
            ("decode_step", UNMATCHED, None, 7, 7),
            ("decode_step", "lm_head", None, 40, 40),
            ("prefill", OUTSIDE_MODULES, None, 5, 0),
            ("prefill", "layer.mlp.down", Some(0), 30, 0),
        ]
    );
    let flops: Vec<u64> = rows.iter().map(|r| r.kineto_flops).collect();
    assert_eq!(flops, [0, 0, 10, 1_000]);
    let by_kernel: Vec<(&str, &str, &str, u64)> = kernels
        .iter()
        .map(|r| (&*r.stage, &*r.module, &*r.name, r.total_ns))
        .collect();
    assert_eq!(
        by_kernel,
        [
            ("decode_step", UNMATCHED, "other", 7),
            ("decode_step", "lm_head", "lm_head_gemm", 40),
            ("prefill", OUTSIDE_MODULES, "Memcpy HtoD", 5),
            ("prefill", "layer.mlp.down", "gemm", 30),
        ]
    );
    assert_eq!(replay.mapping.mismatches_total, 1);
    assert_eq!(
        stage_runs(&events, &["decode_step", "prefill", "vision"]),
        BTreeMap::from([
            ("decode_step".into(), 1),
            ("prefill".into(), 1),
            ("vision".into(), 0)
        ])
    );
}

#[test]
fn stages_captured_inside_a_graph_count_its_replays_as_runs() {
    // Two replays of graph 7, whose capture ran sam twice (two views) and clip once inside
    // the vision scope; vision has scopes of its own and keeps its count.
    let ops = vec![
        host("vision", HostKind::UserScope, 0, 100, 1),
        host(&format!("{REPLAY_OP_PREFIX}7"), HostKind::Op, 10, 50, 2),
        host("vision", HostKind::UserScope, 200, 100, 3),
        host(&format!("{REPLAY_OP_PREFIX}7"), HostKind::Op, 210, 50, 4),
        host(&format!("{REPLAY_OP_PREFIX}9"), HostKind::Op, 400, 5, 5),
    ];
    let events = ProfileEvents {
        ops,
        kernels: vec![],
    };
    let node = |region: &str| GraphNode {
        kind: NodeKind::Kernel,
        name: "k".into(),
        mangled: String::new(),
        deps: vec![],
        owner: NodeOwner {
            region: Some(region.into()),
            module: None,
        },
    };
    let record = CaptureRecord {
        serial: 7,
        label: "vision".into(),
        nodes: vec![node("sam"), node("sam"), node("clip"), node("vision")],
        error: None,
    };
    let mut runs = stage_runs(&events, &["vision", "sam", "clip"]);
    add_replayed_stage_runs(&mut runs, &events, &BTreeMap::from([(7, record)]));
    assert_eq!(
        runs,
        BTreeMap::from([("clip".into(), 2), ("sam".into(), 2), ("vision".into(), 2)])
    );
}
