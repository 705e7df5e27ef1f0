//! The real Kineto profiler through the shim: CPU run in every build, CUDA run on a GPU only.
use std::path::PathBuf;
use std::sync::Mutex;

use llmprof::measure::kineto_events::{HostKind, ProfileEvents};
use llmprof::measure::op_tables::{kernel_table, operator_table, write_tables, Attribution};
use llmprof_worker::measure::kineto::{KinetoSession, ProfilerConfig};
use tch::{Device, Kind, Tensor};

/// The profiler is process-global: one profiling test at a time.
static PROFILER: Mutex<()> = Mutex::new(());

fn scratch_dir(name: &str) -> PathBuf {
    let root = std::env::temp_dir();
    crate::support::remove_ended(&root, &format!("llmprof-{name}"));
    let dir = root.join(format!("llmprof-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

/// Without a GPU, a process that profiles prints none of libkineto's device-probe errors
/// (`gpuGetDeviceCount failed with code 35`): the shim sets its log level before the first
/// start. Checked on a fresh process (this test binary running the CPU profile test alone), whose
/// stderr libtest cannot capture since C++ writes it.
#[test]
fn a_cpu_profile_prints_no_kineto_device_errors() {
    if tch::Cuda::device_count() > 0 {
        return; // the messages only exist without a GPU
    }
    // The profile test's name as libtest knows it: this module's path without the crate's name.
    let name = format!(
        "{}::cpu_profile_finds_mm_with_its_flops_inside_the_user_scope",
        module_path!().split_once("::").expect("a test module").1
    );
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([name.as_str(), "--exact", "--nocapture"])
        .env_remove("KINETO_LOG_LEVEL")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(text.contains("1 passed"), "the profile test ran: {text}");
    for noise in ["gpuGetDeviceCount", "DeviceProperties.cpp"] {
        assert!(!text.contains(noise), "{noise} printed:\n{text}");
    }
}

#[test]
fn cpu_profile_finds_mm_with_its_flops_inside_the_user_scope() {
    let _lock = PROFILER.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch_dir("kineto-cpu");
    let trace = dir.join("trace.json");
    let config = ProfilerConfig {
        activity_cuda: false,
        ..ProfilerConfig::detect()
    };

    let session = KinetoSession::start(config).expect("start profiler");
    let a = Tensor::ones([64, 128], (Kind::Float, Device::Cpu));
    let b = Tensor::ones([128, 32], (Kind::Float, Device::Cpu));
    {
        let _stage = session.scope("decode_step").expect("user scope");
        let c = a.mm(&b).relu();
        assert_eq!(c.sum(Kind::Float).double_value(&[]), (64 * 32 * 128) as f64);
    }
    let profile = session.finish(Some(&trace)).expect("stop profiler");

    let ops = &profile.events.ops;
    let mm = ops
        .iter()
        .find(|o| &*o.name == "aten::mm")
        .expect("aten::mm recorded");
    assert_eq!(
        mm.flops,
        2 * 64 * 128 * 32,
        "FLOPs of a 64×128 @ 128×32 matmul"
    );
    assert_eq!(&*mm.input_shapes, "[[64, 128], [128, 32]]");
    assert!(ops
        .iter()
        .any(|o| o.kind == HostKind::UserScope && &*o.name == "decode_step"));

    let att = Attribution::new(&profile.events);
    let mm_index = ops.iter().position(|o| &*o.name == "aten::mm").unwrap();
    let scope = att.op_scope[mm_index].expect("aten::mm lies inside a user scope");
    assert_eq!(&*ops[scope].name, "decode_step");

    let rows = operator_table(&profile.events, &att);
    let mm_row = rows.iter().find(|r| r.name == "aten::mm").unwrap();
    assert_eq!(
        (mm_row.calls, mm_row.flops, mm_row.self_cuda_ns),
        (1, 2 * 64 * 128 * 32, 0)
    );
    assert!(mm_row.self_cpu_ns > 0 && mm_row.self_cpu_ns <= mm_row.total_cpu_ns);

    // The saved Chrome trace reads back with the same op.
    let json = std::fs::read_to_string(&trace).expect("trace written");
    let back = ProfileEvents::from_chrome_trace(&json).expect("trace parses");
    assert!(back.ops.iter().any(|o| &*o.name == "aten::mm"));

    let (ops_md, kernels_md) = write_tables(&profile.events, &dir).expect("tables written");
    assert!(std::fs::read_to_string(ops_md)
        .unwrap()
        .contains("| aten::mm | Op | 1 |"));
    assert!(std::fs::read_to_string(kernels_md)
        .unwrap()
        .starts_with("# Kernels"));
}

#[test]
#[ignore = "needs GPU"]
fn cuda_profile_attributes_kernels_and_shim_cuda_calls_work() {
    use llmprof_worker::ffi;
    use llmprof_worker::measure::timing::{ClockKind, StepTimer};

    let _lock = PROFILER.lock().unwrap_or_else(|e| e.into_inner());
    assert!(
        ffi::cuda_device_count() > 0,
        "this test needs a CUDA device"
    );
    let dev = Device::Cuda(0);
    let a = Tensor::randn([1024, 1024], (Kind::BFloat16, dev));
    let b = Tensor::randn([1024, 1024], (Kind::BFloat16, dev));
    let _ = a.mm(&b); // warm-up (cuBLAS handle, allocator)
    ffi::cuda_device_synchronize().unwrap();

    let session = KinetoSession::start(ProfilerConfig::detect()).expect("start profiler");
    {
        let _stage = session.scope("decode_step").unwrap();
        let _c = a.mm(&b).softmax(-1, Kind::Float);
    }
    ffi::cuda_device_synchronize().unwrap();
    let profile = session.finish(None).expect("stop profiler");
    let att = Attribution::new(&profile.events);
    let ops = operator_table(&profile.events, &att);
    let mm = ops
        .iter()
        .find(|r| r.name == "aten::mm")
        .expect("aten::mm row");
    assert!(mm.self_cuda_ns > 0, "GEMM kernel charged to aten::mm");
    assert_eq!(mm.flops, 2 * 1024 * 1024 * 1024);
    let kernels = kernel_table(&profile.events, &att);
    assert!(!kernels.is_empty());
    assert!(
        kernels
            .iter()
            .all(|k| k.stage.as_deref() == Some("decode_step")),
        "{kernels:?}"
    );

    // CUDA events: one per step, read at the end.
    let mut timer = StepTimer::new("mm", ClockKind::CudaEvents);
    timer.mark().unwrap();
    for _ in 0..3 {
        let _ = a.mm(&b);
        timer.mark().unwrap();
    }
    let steps = timer.finish().unwrap();
    assert_eq!(steps.durations_ns.len(), 3);
    assert!(steps.durations_ns.iter().all(|&ns| ns > 0));

    // Allocator statistics.
    ffi::cuda_allocator_reset_peak(0).unwrap();
    let stats = ffi::cuda_allocator_stats(0).unwrap();
    assert!(stats.allocated_bytes_current >= 2 * 1024 * 1024 * 2);
    assert!(stats.reserved_bytes_current >= stats.allocated_bytes_current);
    assert!(ffi::cuda_sm_count(0).unwrap() > 0);

    // CUDA graph: capture one matmul into a static output, replay, compare with eager.
    let mut out = Tensor::zeros([1024, 1024], (Kind::BFloat16, dev));
    ffi::cuda_device_synchronize().unwrap();
    let mut graph = ffi::CudaGraph::new().unwrap();
    graph
        .capture(None, || -> Result<(), ffi::ShimError> {
            out.copy_(&a.mm(&b));
            Ok(())
        })
        .unwrap();
    let _ = out.zero_();
    graph.replay().unwrap();
    ffi::cuda_stream_synchronize().unwrap();
    let eager = a.mm(&b);
    assert!(out.equal(&eager), "replayed output equals eager output");
}
