//! Expected numbers were read off tests/fixtures/kineto/h100_decode_step_slice.json by hand
//! (µs values in the file; 3 decimals = whole ns).
use super::*;
use crate::measure::kineto_events::{DeviceKind, KernelRecord, OpRecord};

fn fixture() -> ProfileEvents {
    let json = include_str!("../../../../tests/fixtures/kineto/h100_decode_step_slice.json");
    ProfileEvents::from_chrome_trace(json).expect("fixture parses")
}

fn row<'a>(rows: &'a [OperatorRow], name: &str) -> &'a OperatorRow {
    rows.iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("no row {name}"))
}

#[test]
fn fixture_keeps_only_complete_events_of_known_categories() {
    let ev = fixture();
    // 33 cpu_op + 1 user_annotation + 22 cuda_runtime + 3 cuda_driver;
    // 12 kernel + 6 gpu_memset + 1 gpu_user_annotation. ac2g/instant/overhead skipped.
    assert_eq!(ev.ops.len(), 59);
    assert_eq!(ev.kernels.len(), 19);
    let scope = ev
        .ops
        .iter()
        .find(|o| o.kind == HostKind::UserScope)
        .unwrap();
    assert_eq!(&*scope.name, "decode_step");
    assert_eq!(scope.start_ns, 4_459_499_379_117_141);
    assert_eq!(scope.duration_ns, 132_474_372);
    let mm = ev.ops.iter().find(|o| &*o.name == "aten::mm").unwrap();
    assert_eq!(mm.correlation_id, 3);
    assert_eq!(&*mm.input_shapes, "[[8192, 8192], [8192, 8192]]");
    let launch = ev
        .ops
        .iter()
        .find(|o| &*o.name == "cuLaunchKernelEx")
        .unwrap();
    assert_eq!(
        (
            launch.kind,
            launch.correlation_id,
            launch.linked_correlation_id
        ),
        (HostKind::Driver, 15, 3)
    );
    let memset = &ev
        .kernels
        .iter()
        .find(|k| k.kind == DeviceKind::Memset)
        .unwrap();
    assert_eq!(
        (memset.duration_ns, memset.stream, memset.op_correlation_id),
        (768, 7, 3)
    );
}

#[test]
fn operator_self_and_total_times_from_recorded_trace() {
    let ev = fixture();
    let rows = operator_table(&ev, &Attribution::new(&ev));
    assert!(
        rows.iter().all(|r| r.name != "decode_step"),
        "user scopes are not operators"
    );

    // aten::mm (External ids 3, 14, 25): nvjet 1383.896 + 1379.095 + 1379.928 and memsets
    // 0.768 + 1.088 + 0.800 µs → 4145.575 µs, all its own; nothing nested launches more.
    let mm = row(&rows, "aten::mm");
    assert_eq!(mm.calls, 3);
    assert_eq!(mm.self_cuda_ns, 4_145_575);
    assert_eq!(mm.total_cuda_ns, 4_145_575);
    // Self CPU: 3763.960 − cudaMemsetAsync 64.423 − cuLaunchKernelEx 63.715
    //         + 208.716 − 19.555 − 23.440 + 66.201 − 5.550 − 10.201 = 3851.993 µs.
    assert_eq!(mm.self_cpu_ns, 3_851_993);
    assert_eq!(mm.total_cpu_ns, 3_763_960 + 208_716 + 66_201);

    // aten::matmul launches nothing itself; its total is its aten::mm children's.
    let matmul = row(&rows, "aten::matmul");
    assert_eq!(matmul.self_cuda_ns, 0);
    assert_eq!(matmul.total_cuda_ns, 4_145_575);
    assert_eq!(matmul.total_cpu_ns, 4_139_823); // 3822.465 + 241.909 + 75.449

    // aten::sum nests in aten::sum (6 calls, 3 outermost). Totals count outermost only:
    // CPU 33779.366 + 79.509 + 53.830 = 33912.705 µs; CUDA reduce 98.178 + 98.498 + 98.338
    // + memsets 1.183 + 0.769 + 0.800 = 297.766 µs (charged to the inner sums: self = total).
    let sum = row(&rows, "aten::sum");
    assert_eq!(sum.calls, 6);
    assert_eq!(sum.total_cpu_ns, 33_912_705);
    assert_eq!(sum.total_cuda_ns, 297_766);
    assert_eq!(sum.self_cuda_ns, 297_766);

    // softmax kernels 383.398 + 387.078 + 385.863; copy kernels 207.172 + 204.068 + 203.843.
    assert_eq!(row(&rows, "aten::_softmax").self_cuda_ns, 1_156_339);
    assert_eq!(row(&rows, "aten::copy_").self_cuda_ns, 615_083);
    assert_eq!(
        row(&rows, "aten::softmax").total_cuda_ns,
        1_156_339 + 615_083
    );

    let order: Vec<&str> = rows.iter().take(4).map(|r| r.name.as_str()).collect();
    assert_eq!(
        order,
        ["aten::mm", "aten::_softmax", "aten::copy_", "aten::sum"]
    );
    // No GPU time is lost or counted twice: self CUDA over all rows = all GPU work.
    assert_eq!(rows.iter().map(|r| r.self_cuda_ns).sum::<u64>(), 6_214_763);
}

#[test]
fn kernel_table_from_recorded_trace() {
    let ev = fixture();
    let rows = kernel_table(&ev, &Attribution::new(&ev));
    // nvjet, elementwise copy, softmax, reduce, memset; all inside decode_step.
    assert_eq!(rows.len(), 5);
    assert!(rows
        .iter()
        .all(|r| r.stage.as_deref() == Some("decode_step")));
    let gemm = &rows[0];
    assert_eq!(gemm.name, "nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopB_NNT");
    assert_eq!(gemm.calls, 3);
    assert_eq!(gemm.total_ns, 4_142_919);
    assert!((gemm.mean_ns - 1_380_973.0).abs() < 1e-6);
    // All GPU work: kernels 4142.919 + 615.083 + 1156.339 + 295.014 + memsets 5.408 µs.
    assert!((gemm.share_of_gpu - 4_142_919.0 / 6_214_763.0).abs() < 1e-12);
    let memset = rows.iter().find(|r| r.name == "Memset (Device)").unwrap();
    assert_eq!((memset.calls, memset.total_ns), (6, 5_408));
}

/// A host event on thread 1 (also used by measure/module_attr.rs's tests).
pub(crate) fn host(name: &str, kind: HostKind, start: u64, dur: u64, corr: u64) -> OpRecord {
    OpRecord {
        name: name.into(),
        kind,
        thread_id: 1,
        start_ns: start,
        duration_ns: dur,
        correlation_id: corr,
        linked_correlation_id: 0,
        flops: 0,
        input_shapes: "".into(),
    }
}

#[test]
fn graph_replay_kernels_go_to_the_runtime_call_and_nested_stage() {
    // decode ⊃ decode_step ⊃ cudaGraphLaunch (CUPTI 50); the kernels carry no op id.
    let ev = ProfileEvents {
        ops: vec![
            host("decode", HostKind::UserScope, 0, 1000, 1),
            host("decode_step", HostKind::UserScope, 10, 500, 2),
            host("cudaGraphLaunch", HostKind::Runtime, 20, 30, 50),
        ],
        kernels: vec![KernelRecord {
            name: "k".into(),
            kind: DeviceKind::Kernel,
            device_index: 0,
            stream: 7,
            start_ns: 100,
            duration_ns: 40,
            correlation_id: 50,
            op_correlation_id: 0,
        }],
    };
    let att = Attribution::new(&ev);
    assert_eq!(att.op_parent, vec![None, Some(0), Some(1)]);
    assert_eq!(att.kernel_owner, vec![Some(2)]);
    assert_eq!(att.kernel_stage, vec![Some(Name::from("decode_step"))]);
    let rows = operator_table(&ev, &att);
    assert_eq!(
        (rows[0].name.as_str(), rows[0].self_cuda_ns),
        ("cudaGraphLaunch", 40)
    );
}
