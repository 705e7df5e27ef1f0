//! Iterations: the `ProfilerStep#N` ranges torch.profiler's `step()` records. Host events belong
//! to the step whose range holds their start; GPU work to the step of the call that launched it
//! (HTA's rule, `hta/common/trace.py`). Each step gets its host duration and a GPU breakdown per
//! device over the work it launched. Unlike HTA, the last step is kept (HTA drops it by default,
//! `include_last_profiler_step=False`). Pure.
use super::regions::iteration_number;
use super::timeline::{breakdown, us, Breakdown};
use crate::measure::kineto_events::{HostKind, ProfileEvents};
use crate::measure::op_tables::Attribution;

/// One iteration.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Iteration {
    /// N of `ProfilerStep#N`.
    pub step: u64,
    /// The step's range on the host.
    pub host_us: f64,
    /// Its GPU work, per device.
    pub devices: Vec<Breakdown>,
}

impl Iteration {
    /// The GPU span of the step's work (largest over devices).
    pub fn gpu_span_us(&self) -> f64 {
        self.devices.iter().map(|d| d.window_us).fold(0.0, f64::max)
    }

    /// Computation time of the step (largest over devices).
    pub fn computation_us(&self) -> f64 {
        self.devices
            .iter()
            .map(|d| d.computation_us)
            .fold(0.0, f64::max)
    }
}

/// The iterations of a trace, in step order; empty when it has no ProfilerStep ranges.
pub fn iterations(
    events: &ProfileEvents,
    attribution: &Attribution,
    threshold_ns: u64,
) -> Vec<Iteration> {
    let ops = &events.ops;
    let launches = &attribution.launches;
    // (start, end, step, op index) of every step range, by start.
    let mut steps: Vec<(u64, u64, u64)> = ops
        .iter()
        .filter(|o| o.kind == HostKind::UserScope)
        .filter_map(|o| Some((o.start_ns, o.end_ns(), iteration_number(&o.name)?)))
        .collect();
    if steps.is_empty() {
        return Vec::new();
    }
    steps.sort_unstable();
    let step_of = |t: u64| -> Option<usize> {
        let at = steps.partition_point(|s| s.0 <= t);
        let i = at.checked_sub(1)?;
        (t < steps[i].1).then_some(i)
    };
    // Per step, per device: the GPU work it launched.
    let mut work: Vec<std::collections::BTreeMap<i32, Vec<usize>>> =
        vec![Default::default(); steps.len()];
    for (k, kernel) in events.kernels.iter().enumerate() {
        if !kernel.is_gpu_work() {
            continue;
        }
        let host = launches.of(kernel).or(attribution.kernel_owner[k]);
        if let Some(s) = host.and_then(|h| step_of(ops[h].start_ns)) {
            work[s].entry(kernel.device_index).or_default().push(k);
        }
    }
    steps
        .iter()
        .zip(work)
        .map(|(&(start, end, step), by_device)| Iteration {
            step,
            host_us: us(end - start),
            devices: by_device
                .into_iter()
                .map(|(device, items)| breakdown(events, launches, device, &items, threshold_ns))
                .collect(),
        })
        .collect()
}
