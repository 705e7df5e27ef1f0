//! Where a GPU's time goes: computation, communication, memory copies and idle, with idle split
//! by what the GPU waited for. The definitions follow HolisticTraceAnalysis (HTA 0.5.0,
//! `hta/analyzers/breakdown_analysis.py`: `get_temporal_breakdown`, `get_idle_time_breakdown`),
//! with the differences docs/analyze-trace.md lists:
//! - the window is the first GPU work's start to the last one's end, on one device;
//! - busy time is the union of all GPU work on the device (streams overlap: nothing counts twice);
//!   computation is the union of compute kernels, communication the part of the collectives'
//!   union that no computation overlaps, memory the part of copies and memsets that neither
//!   overlaps (HTA folds the last two into "non-compute");
//! - an idle gap is *host wait* when the work that ends it was launched (its runtime call began)
//!   after the gap began, *kernel wait* when it was launched earlier and the gap is shorter than
//!   the threshold (HTA's `consecutive_kernel_delay`, 30 µs), else *other* (waits on events,
//!   other streams, other devices). HTA classifies gaps per stream; here they are the device's
//!   gaps, so the three parts add up to the idle time.
//!
//! Pure.
use std::collections::HashMap;

use super::intervals::IntervalSet;
use crate::measure::kineto_events::{DeviceKind, KernelRecord, ProfileEvents};
use crate::measure::op_tables::Launches;

/// HTA's `consecutive_kernel_delay` default (30, compared with trace microseconds).
pub const KERNEL_WAIT_THRESHOLD_NS: u64 = 30_000;

/// What a piece of GPU work is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkClass {
    Computation,
    Communication,
    Memory,
}

/// Lower-case name fragments that make a kernel a collective: NCCL/RCCL and the custom
/// all-reduce kernels of vLLM, SGLang and TensorRT-LLM (`cross_device_reduce_*`,
/// `*allreduce*`), symmetric-memory collectives (`one_shot_all_reduce`).
const COLLECTIVE_FRAGMENTS: &[&str] = &[
    "nccl",
    "rccl",
    "cross_device_reduce",
    "allreduce",
    "all_reduce",
    "allgather",
    "all_gather",
    "reducescatter",
    "reduce_scatter",
    "alltoall",
    "all_to_all",
];

/// Communication for collectives, memory for copies and memsets, computation for the rest.
pub fn classify(k: &KernelRecord) -> WorkClass {
    match k.kind {
        DeviceKind::Memcpy | DeviceKind::Memset => return WorkClass::Memory,
        DeviceKind::Kernel | DeviceKind::UserScope => {}
    }
    let lower = k.name.to_ascii_lowercase();
    if COLLECTIVE_FRAGMENTS.iter().any(|f| lower.contains(f)) {
        WorkClass::Communication
    } else {
        WorkClass::Computation
    }
}

/// Nanoseconds as the microseconds trace analyses report.
pub fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// One device's time over a set of GPU work, in microseconds.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Breakdown {
    pub device: i32,
    /// Pieces of GPU work (kernels, copies, memsets).
    pub work_items: u64,
    /// First work's start to the last one's end.
    pub window_us: f64,
    /// Union of all work.
    pub busy_us: f64,
    /// Union of compute kernels.
    pub computation_us: f64,
    /// Union of collectives, less the part computation overlaps.
    pub communication_us: f64,
    /// Union of copies and memsets, less the part computation or communication overlaps.
    pub memory_us: f64,
    /// window − busy.
    pub idle_us: f64,
    pub idle_host_wait_us: f64,
    pub idle_kernel_wait_us: f64,
    pub idle_other_us: f64,
    /// Collectives' time that computation overlaps (HTA's communication/computation overlap
    /// is this ÷ the collectives' union).
    pub communication_overlapped_us: f64,
    /// Summed durations per class (overlaps counted as often as they occur).
    pub sum_computation_us: f64,
    pub sum_communication_us: f64,
    pub sum_memory_us: f64,
}

impl Breakdown {
    /// communication ÷ window: the share of the device's time only collectives ran.
    pub fn communication_share(&self) -> f64 {
        if self.window_us > 0.0 {
            self.communication_us / self.window_us
        } else {
            0.0
        }
    }
}

/// The breakdown of `items` (indices into `events.kernels`, all GPU work on `device`).
pub fn breakdown(
    events: &ProfileEvents,
    launches: &Launches,
    device: i32,
    items: &[usize],
    kernel_wait_threshold_ns: u64,
) -> Breakdown {
    let kernels = &events.kernels;
    let mut by_class: HashMap<WorkClass, Vec<(u64, u64)>> = HashMap::new();
    let mut sums: HashMap<WorkClass, u64> = HashMap::new();
    for &i in items {
        let k = &kernels[i];
        let class = classify(k);
        by_class
            .entry(class)
            .or_default()
            .push((k.start_ns, k.end_ns()));
        *sums.entry(class).or_default() += k.duration_ns;
    }
    let mut union = |c| IntervalSet::union_of(by_class.remove(&c).unwrap_or_default());
    let compute = union(WorkClass::Computation);
    let comm = union(WorkClass::Communication);
    let memory = union(WorkClass::Memory);
    let compute_or_comm = compute.with(&comm);
    let busy = compute_or_comm.with(&memory);
    let (window_start, window_end) = busy.span().unwrap_or((0, 0));

    // Each gap ends where some work starts: the earliest-starting item there tells who waited.
    let mut by_start: Vec<usize> = items.to_vec();
    by_start.sort_unstable_by_key(|&i| kernels[i].start_ns);
    let (mut host_wait, mut kernel_wait, mut other) = (0u64, 0u64, 0u64);
    for (g0, g1) in busy.gaps() {
        let at = by_start.partition_point(|&i| kernels[i].start_ns < g1);
        let launch_start = by_start
            .get(at)
            .and_then(|&i| launches.of(&kernels[i]))
            .map(|l| events.ops[l].start_ns);
        let gap = g1 - g0;
        match launch_start {
            Some(t) if t > g0 => host_wait += gap,
            _ if gap < kernel_wait_threshold_ns => kernel_wait += gap,
            _ => other += gap,
        }
    }
    let sum = |c| us(sums.get(&c).copied().unwrap_or(0));
    Breakdown {
        device,
        work_items: items.len() as u64,
        window_us: us(window_end - window_start),
        busy_us: us(busy.length()),
        computation_us: us(compute.length()),
        communication_us: us(comm.length() - comm.overlap(&compute)),
        memory_us: us(memory.length() - memory.overlap(&compute_or_comm)),
        idle_us: us(window_end - window_start - busy.length()),
        idle_host_wait_us: us(host_wait),
        idle_kernel_wait_us: us(kernel_wait),
        idle_other_us: us(other),
        communication_overlapped_us: us(comm.overlap(&compute)),
        sum_computation_us: sum(WorkClass::Computation),
        sum_communication_us: sum(WorkClass::Communication),
        sum_memory_us: sum(WorkClass::Memory),
    }
}

/// GPU work grouped by device, devices in ascending order.
pub fn work_by_device(events: &ProfileEvents) -> Vec<(i32, Vec<usize>)> {
    let mut map: std::collections::BTreeMap<i32, Vec<usize>> = Default::default();
    for (i, k) in events.kernels.iter().enumerate() {
        if k.is_gpu_work() {
            map.entry(k.device_index).or_default().push(i);
        }
    }
    map.into_iter().collect()
}

/// One breakdown per device over the whole trace.
pub fn per_device(
    events: &ProfileEvents,
    launches: &Launches,
    threshold_ns: u64,
) -> Vec<Breakdown> {
    work_by_device(events)
        .into_iter()
        .map(|(device, items)| breakdown(events, launches, device, &items, threshold_ns))
        .collect()
}
