//! Kineto's events as plain records: host-side `OpRecord`s (ops, user scopes, runtime calls) and
//! device-side `KernelRecord`s (kernels, memcpy, memset), read from libtorch's profiler (in the
//! worker) or back from a Chrome trace, so tables can be tested on recorded data. Pure.
use std::sync::Arc;

/// An event name or shape list, shared by every event that has it (traces repeat a few thousand
/// names millions of times).
pub type Name = Arc<str>;

/// libkineto::ActivityType values (torch/include/kineto/ActivityType.h, torch 2.11).
pub mod activity {
    pub const CPU_OP: u8 = 0;
    pub const USER_ANNOTATION: u8 = 1;
    pub const GPU_USER_ANNOTATION: u8 = 2;
    pub const GPU_MEMCPY: u8 = 3;
    pub const GPU_MEMSET: u8 = 4;
    pub const CONCURRENT_KERNEL: u8 = 5;
    pub const CUDA_RUNTIME: u8 = 7;
    pub const CUDA_DRIVER: u8 = 8;
}

/// What a host-side event is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum HostKind {
    /// An ATen operator (`cpu_op`).
    Op,
    /// A user scope (`at::RecordFunction` USER_SCOPE, `user_annotation`): a stage.
    UserScope,
    /// A CUDA runtime call (`cudaLaunchKernel`, ...).
    Runtime,
    /// A CUDA driver call (`cuLaunchKernelEx`, ...).
    Driver,
}

/// What a device-side event is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum DeviceKind {
    Kernel,
    Memcpy,
    Memset,
    /// The GPU-timeline image of a user scope (`gpu_user_annotation`); not GPU work.
    UserScope,
}

/// A host-side event (operator, user scope, runtime/driver call).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct OpRecord {
    pub name: Name,
    pub kind: HostKind,
    pub thread_id: u64,
    /// Unix epoch nanoseconds.
    pub start_ns: u64,
    pub duration_ns: u64,
    /// Ops and scopes: their own id (Kineto's "External id"). Runtime/driver calls: the CUPTI
    /// correlation id that their GPU activity carries.
    pub correlation_id: u64,
    /// Runtime/driver calls: the id of the op that made them (0 when none).
    pub linked_correlation_id: u64,
    /// FLOPs as counted by the profiler (`with_flops`); 0 when not counted.
    pub flops: u64,
    /// e.g. `[[8192, 8192], [8192, 8192]]`; empty when shapes were not recorded.
    pub input_shapes: Name,
}

impl OpRecord {
    pub fn end_ns(&self) -> u64 {
        self.start_ns + self.duration_ns
    }
}

/// A device-side event (kernel, memcpy, memset, GPU image of a user scope).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct KernelRecord {
    pub name: Name,
    pub kind: DeviceKind,
    pub device_index: i32,
    pub stream: i64,
    /// Unix epoch nanoseconds (GPU clock mapped to the host clock by Kineto).
    pub start_ns: u64,
    pub duration_ns: u64,
    /// CUPTI correlation id: equals the `correlation_id` of the runtime call that launched it.
    pub correlation_id: u64,
    /// The op that launched it (its `OpRecord::correlation_id`); 0 when none.
    pub op_correlation_id: u64,
}

impl KernelRecord {
    pub fn end_ns(&self) -> u64 {
        self.start_ns + self.duration_ns
    }

    /// True for GPU work (kernels, copies, memsets), false for annotations.
    pub fn is_gpu_work(&self) -> bool {
        self.kind != DeviceKind::UserScope
    }
}

/// Each event's duration as charged to what launched it: a kernel, copy or memset that starts
/// before the work ahead of it on its stream (same device) has ended — launched with
/// programmatic dependent launch, it was scheduled early and waited — is charged from that end
/// to its own; work on other streams is not affected (it runs beside). The charged durations of
/// one stream partition the time it was busy. Annotations keep their duration.
pub fn charged_durations(kernels: &[KernelRecord]) -> Vec<u64> {
    let mut charged: Vec<u64> = kernels.iter().map(|k| k.duration_ns).collect();
    let mut order: Vec<usize> = (0..kernels.len())
        .filter(|&i| kernels[i].is_gpu_work())
        .collect();
    // Equal starts in launch order: the one launched first is the work ahead.
    order.sort_by_key(|&i| {
        let k = &kernels[i];
        (k.device_index, k.stream, k.start_ns, k.correlation_id)
    });
    let mut ahead: Option<(i32, i64, u64)> = None; // (device, stream, latest end so far)
    for i in order {
        let k = &kernels[i];
        // The latest end of the work ahead of `k` on its own stream (0: it is the first).
        let end_ahead = match ahead {
            Some((d, s, end)) if d == k.device_index && s == k.stream => end,
            _ => 0,
        };
        charged[i] = k.end_ns().saturating_sub(k.start_ns.max(end_ahead));
        ahead = Some((k.device_index, k.stream, end_ahead.max(k.end_ns())));
    }
    charged
}

/// All events of one profile, split by side.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct ProfileEvents {
    pub ops: Vec<OpRecord>,
    pub kernels: Vec<KernelRecord>,
}
