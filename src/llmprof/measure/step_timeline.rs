//! Where a stage's time goes on the GPU timeline, run by run (each user scope of the stage, e.g.
//! every `decode_step`): its span (first start to last end of its GPU work), the work itself
//! (Σ charged durations, what the module rows add up to: a kernel that started before the work
//! ahead of it on its stream ended, under programmatic dependent launch, is charged from that
//! end, and the time it waited is `early_start`), the time the GPU was busy (their union), and
//! the gap to the next run with the GPU work inside it (sampling between decode steps). On the
//! timeline: `span = busy + idle inside`, `work = busy + overlap` (work of two streams at once),
//! `period = span + gap`, exactly; the report sets `span` against the timed measurement of the
//! same stage (CUDA events) for the 2 % check (#41). Pure.
use super::kineto_events::{HostKind, ProfileEvents};
use super::op_tables::Attribution;
use serde::{Deserialize, Serialize};

/// Means over the runs of one stage, in ns (gaps over the runs that have a next one).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StageTimeline {
    pub stage: String,
    /// Runs with GPU work.
    pub runs: u64,
    pub span_ns: f64,
    pub work_ns: f64,
    pub busy_ns: f64,
    /// From a run's last end to the next run's first start.
    pub gap_ns: f64,
    /// GPU work inside those gaps (not of the stage).
    pub gap_work_ns: f64,
    /// Of the durations Kineto reports, the part before the work ahead on the same stream had
    /// ended (kernels launched early by programmatic dependent launch, waiting): not in `work`.
    #[serde(default)]
    pub early_start_ns: f64,
}

impl StageTimeline {
    /// GPU idle between the stage's own work, inside its span.
    pub fn idle_inside_ns(&self) -> f64 {
        self.span_ns - self.busy_ns
    }

    /// Work running beside other work of the same run (two streams).
    pub fn overlap_ns(&self) -> f64 {
        self.work_ns - self.busy_ns
    }
}

/// The union length of `[start, end)` intervals.
fn union_ns(mut iv: Vec<(u64, u64)>) -> u64 {
    iv.sort_unstable();
    let (mut total, mut cur): (u64, Option<(u64, u64)>) = (0, None);
    for (s, e) in iv {
        match cur {
            Some((cs, ce)) if s <= ce => cur = Some((cs, ce.max(e))),
            Some((cs, ce)) => {
                total += ce - cs;
                cur = Some((s, e));
            }
            None => cur = Some((s, e)),
        }
    }
    total + cur.map_or(0, |(s, e)| e - s)
}

/// The timeline of `stage`: GPU work grouped by the run (user scope named `stage`) its launch
/// sits in.
pub fn stage_timeline(
    events: &ProfileEvents,
    attribution: &Attribution,
    stage: &str,
) -> StageTimeline {
    let k = &events.kernels;
    let mut runs: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
    let mut in_stage = vec![false; k.len()];
    for (i, e) in k.iter().enumerate() {
        if !e.is_gpu_work() {
            continue;
        }
        let scope = attribution.kernel_owner[i].and_then(|o| attribution.op_scope[o]);
        if let Some(s) = scope.filter(|&s| &*events.ops[s].name == stage) {
            runs.entry(s).or_default().push(i);
            in_stage[i] = true;
        }
    }
    // Each event on the timeline from its charged start: a kernel that started early waited
    // until the work ahead of it ended (also work of the run before, across the boundary).
    let charged = &attribution.kernel_charged_ns;
    let from = |i: usize| k[i].end_ns() - charged[i];
    let mut spans: Vec<(u64, u64, u64, u64, u64)> = runs
        .values()
        .map(|idx| {
            let start = idx.iter().map(|&i| from(i)).min().unwrap_or(0);
            let end = idx.iter().map(|&i| k[i].end_ns()).max().unwrap_or(0);
            let work = idx.iter().map(|&i| charged[i]).sum();
            let early = idx.iter().map(|&i| k[i].duration_ns - charged[i]).sum();
            let busy = union_ns(idx.iter().map(|&i| (from(i), k[i].end_ns())).collect());
            (start, end, work, busy, early)
        })
        .collect();
    spans.sort_unstable();
    let n = spans.len() as f64;
    let mut t = StageTimeline {
        stage: stage.to_string(),
        runs: spans.len() as u64,
        ..Default::default()
    };
    if spans.is_empty() {
        return t;
    }
    for &(s, e, w, b, early) in &spans {
        t.span_ns += (e - s) as f64 / n;
        t.work_ns += w as f64 / n;
        t.busy_ns += b as f64 / n;
        t.early_start_ns += early as f64 / n;
    }
    let other: Vec<(u64, u64)> = k
        .iter()
        .enumerate()
        .filter(|(i, e)| e.is_gpu_work() && !in_stage[*i])
        .map(|(_, e)| (e.start_ns, e.end_ns()))
        .collect();
    let gaps: Vec<(u64, u64)> = spans
        .windows(2)
        .map(|w| (w[0].1, w[1].0.max(w[0].1)))
        .collect();
    if !gaps.is_empty() {
        let g = gaps.len() as f64;
        for &(gs, ge) in &gaps {
            t.gap_ns += (ge - gs) as f64 / g;
            let inside: Vec<(u64, u64)> = other
                .iter()
                .filter(|&&(s, e)| s < ge && e > gs)
                .map(|&(s, e)| (s.max(gs), e.min(ge)))
                .collect();
            t.gap_work_ns += union_ns(inside) as f64 / g;
        }
    }
    t
}

/// The timeline of `stage` from host time (a pass without GPU work): each run is the stage's
/// scope less the scopes of `stages` inside it (a prefill's vision), busy all along (span = work
/// = busy); the gap runs to the next scope.
pub fn host_stage_timeline(
    events: &ProfileEvents,
    attribution: &Attribution,
    stage: &str,
    stages: &[&str],
) -> StageTimeline {
    let ops = &events.ops;
    let is_scope = |i: usize, names: &[&str]| {
        ops[i].kind == HostKind::UserScope && names.contains(&&*ops[i].name)
    };
    let mut nested = vec![0u64; ops.len()];
    for i in (0..ops.len()).filter(|&i| is_scope(i, stages)) {
        if let Some(outer) = attribution.op_parent[i].and_then(|p| attribution.op_scope[p]) {
            nested[outer] += ops[i].duration_ns;
        }
    }
    let mut runs: Vec<(u64, u64, u64)> = (0..ops.len())
        .filter(|&i| is_scope(i, &[stage]))
        .map(|i| (ops[i].start_ns, ops[i].end_ns(), nested[i]))
        .collect();
    runs.sort_unstable();
    let mut t = StageTimeline {
        stage: stage.to_string(),
        runs: runs.len() as u64,
        ..Default::default()
    };
    if runs.is_empty() {
        return t;
    }
    let n = runs.len() as f64;
    t.span_ns = runs
        .iter()
        .map(|(s, e, inner)| (e - s).saturating_sub(*inner) as f64)
        .sum::<f64>()
        / n;
    (t.work_ns, t.busy_ns) = (t.span_ns, t.span_ns);
    let gaps: Vec<f64> = runs
        .windows(2)
        .map(|w| w[1].0.saturating_sub(w[0].1) as f64)
        .collect();
    if !gaps.is_empty() {
        t.gap_ns = gaps.iter().sum::<f64>() / gaps.len() as f64;
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::kineto_events::{charged_durations, DeviceKind, KernelRecord};
    use crate::measure::op_tables::tests::host;

    fn kernel(start: u64, dur: u64, corr: u64, stream: i64) -> KernelRecord {
        KernelRecord {
            name: "k".into(),
            kind: DeviceKind::Kernel,
            device_index: 0,
            stream,
            start_ns: start,
            duration_ns: dur,
            correlation_id: corr,
            op_correlation_id: 0,
        }
    }

    #[test]
    fn span_busy_idle_overlap_and_gaps_add_up_on_the_timeline() {
        // Two decode steps. Step 1: kernels [100,130) and [120,150) on two streams (overlap 10)
        // and [170,180) (idle 20 inside): span 80, work 70, busy 60. Gap to step 2 [180,300)
        // holds a sampling kernel [200,210) outside the steps. Step 2: [300,340): span 40.
        let ops = vec![
            host("decode_step", HostKind::UserScope, 0, 50, 1),
            host("cudaLaunchKernel", HostKind::Runtime, 10, 5, 11),
            host("cudaLaunchKernel", HostKind::Runtime, 20, 5, 12),
            host("cudaLaunchKernel", HostKind::Runtime, 30, 5, 13),
            host("cudaLaunchKernel", HostKind::Runtime, 60, 5, 14),
            host("decode_step", HostKind::UserScope, 100, 50, 2),
            host("cudaLaunchKernel", HostKind::Runtime, 110, 5, 15),
        ];
        let events = ProfileEvents {
            ops,
            kernels: vec![
                kernel(100, 30, 11, 7),
                kernel(120, 30, 12, 8),
                kernel(170, 10, 13, 7),
                kernel(200, 10, 14, 7),
                kernel(300, 40, 15, 7),
            ],
        };
        let a = Attribution::new(&events);
        let t = stage_timeline(&events, &a, "decode_step");
        assert_eq!(t.runs, 2);
        assert_eq!((t.span_ns, t.work_ns, t.busy_ns), (60.0, 55.0, 50.0));
        assert_eq!((t.idle_inside_ns(), t.overlap_ns()), (10.0, 5.0));
        assert_eq!((t.gap_ns, t.gap_work_ns), (120.0, 10.0));
        assert_eq!(stage_timeline(&events, &a, "prefill").runs, 0);
    }

    #[test]
    fn an_early_start_on_the_same_stream_is_charged_from_the_end_ahead_of_it() {
        // One step on stream 7: [100,130), then a kernel that started at 120 (programmatic
        // dependent launch) and ran to 150, then [150,160) nested inside nothing; and one on
        // stream 8 [125,135) beside them. Stream 7 is charged 30 + 20 + 10 = 60 (its busy
        // time), stream 8 its 10; the 10 ns the second kernel waited are early start, not work.
        let ops = vec![
            host("decode_step", HostKind::UserScope, 0, 50, 1),
            host("cudaLaunchKernel", HostKind::Runtime, 10, 5, 11),
            host("cudaLaunchKernelExC", HostKind::Runtime, 20, 5, 12),
            host("cudaLaunchKernelExC", HostKind::Runtime, 30, 5, 13),
            host("cudaLaunchKernel", HostKind::Runtime, 40, 5, 14),
        ];
        let kernels = vec![
            kernel(100, 30, 11, 7),
            kernel(120, 30, 12, 7),
            kernel(150, 10, 13, 7),
            kernel(125, 10, 14, 8),
        ];
        assert_eq!(charged_durations(&kernels), vec![30, 20, 10, 10]);
        let events = ProfileEvents { ops, kernels };
        let a = Attribution::new(&events);
        let t = stage_timeline(&events, &a, "decode_step");
        assert_eq!((t.span_ns, t.work_ns, t.busy_ns), (60.0, 70.0, 60.0));
        assert_eq!(
            (t.early_start_ns, t.overlap_ns(), t.idle_inside_ns()),
            (10.0, 10.0, 0.0)
        );
    }

    #[test]
    fn a_kernel_inside_the_one_ahead_of_it_is_charged_nothing() {
        // Stream 3: [0,100) and, wholly inside it, [10,40): the second adds no time of its own.
        let kernels = vec![
            kernel(0, 100, 1, 3),
            kernel(10, 30, 2, 3),
            kernel(100, 5, 3, 3),
        ];
        assert_eq!(charged_durations(&kernels), vec![100, 0, 5]);
        // The same stream number on another device is another stream; equal starts go in
        // launch order (correlation id), the later launch charged from the earlier one's end.
        let mut other = kernel(5, 10, 4, 3);
        other.device_index = 1;
        let tied = vec![kernel(0, 10, 9, 5), kernel(0, 4, 8, 5), other];
        assert_eq!(charged_durations(&tied), vec![6, 4, 10]);
    }
}
