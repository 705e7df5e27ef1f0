//! One trace analysed: the operator table (stage 1's code), the kernel table, regions, the GPU
//! time breakdown per device and per iteration, and CUDA-graph replays. This is what
//! `llmprof analyze trace --format json` prints for one file; `kernels[].name`, `.calls` and
//! `.total_us` are a kept interface. Times in microseconds. Pure.
use std::collections::HashMap;

use super::iterations::{iterations, Iteration};
use super::regions::{self, RegionFilter, RegionKernel, RegionStat};
use super::timeline::{self, us, Breakdown};
use crate::measure::kernel_names::short_name;
use crate::measure::kineto_events::{HostKind, ProfileEvents};
use crate::measure::kineto_json::ReadTrace;
use crate::measure::op_tables::{operator_table, Attribution};

/// Choices the user makes.
#[derive(Debug, Clone)]
pub struct Options {
    pub regions: RegionFilter,
    pub kernel_wait_threshold_ns: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            regions: RegionFilter::new(&[]).expect("no patterns"),
            kernel_wait_threshold_ns: timeline::KERNEL_WAIT_THRESHOLD_NS,
        }
    }
}

/// Where the trace came from and what it held.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Source {
    pub path: String,
    pub rank: Option<u64>,
    pub world_size: Option<u64>,
    pub devices: Vec<String>,
    pub bytes: u64,
    pub host_events: u64,
    pub device_events: u64,
    pub skipped_events: u64,
}

/// One distinct kernel (or copy, memset) over the whole trace.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct KernelStat {
    /// The full name, as in the trace.
    pub name: String,
    pub short_name: String,
    pub calls: u64,
    pub total_us: f64,
    pub mean_us: f64,
    pub min_us: f64,
    pub max_us: f64,
    /// total ÷ all GPU work's summed durations.
    pub share_of_gpu: f64,
    /// Calls replayed from CUDA graphs.
    pub graph_calls: u64,
    /// Of `total_us`, the time its calls spent started but waiting for the work ahead of them
    /// on their stream to end (programmatic dependent launch; 0 without). Absent in older
    /// analyses.
    #[serde(default)]
    pub early_start_us: f64,
}

/// One operator (all calls of one name and kind).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct OperatorStat {
    pub name: String,
    pub kind: HostKind,
    pub calls: u64,
    pub self_cpu_us: f64,
    pub total_cpu_us: f64,
    pub self_cuda_us: f64,
    pub total_cuda_us: f64,
}

/// CUDA-graph replays.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Graphs {
    pub launches: u64,
    /// GPU work replayed, and its summed durations.
    pub calls: u64,
    pub total_us: f64,
}

/// Names this JSON's layout (`llmprof compare` checks it when reading an analysis back).
pub const SCHEMA: &str = "llmprof.trace-analysis/1";

/// Everything computed for one trace.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TraceAnalysis {
    pub schema: String,
    pub source: Source,
    /// The region patterns used (empty: every annotation but ProfilerStep#N).
    pub region_patterns: Vec<String>,
    /// Summed durations of all GPU work.
    pub gpu_total_us: f64,
    /// Of `gpu_total_us`, what kernels spent waiting after an early start (the kernels'
    /// `early_start_us` summed). Absent in older analyses.
    #[serde(default)]
    pub early_start_us: f64,
    pub kernels: Vec<KernelStat>,
    pub operators: Vec<OperatorStat>,
    pub regions: Vec<RegionStat>,
    pub kernels_by_region: Vec<RegionKernel>,
    /// Per device over the whole trace.
    pub timeline: Vec<Breakdown>,
    /// Per ProfilerStep#N, when the trace has them.
    pub iterations: Vec<Iteration>,
    pub graphs: Graphs,
}

/// Analyses a trace read from `path`.
pub fn analyse(read: &ReadTrace, path: &str, options: &Options) -> TraceAnalysis {
    let events = &read.events;
    let attribution = Attribution::new(events);
    let of = regions::assign(events, &attribution, &options.regions);
    let gpu_total: u64 = events
        .kernels
        .iter()
        .filter(|k| k.is_gpu_work())
        .map(|k| k.duration_ns)
        .sum();
    let charged = &attribution.kernel_charged_ns;
    let early_start: u64 = events
        .kernels
        .iter()
        .zip(charged)
        .filter(|(k, _)| k.is_gpu_work())
        .map(|(k, c)| k.duration_ns - c)
        .sum();
    let (region_stats, kernels_by_region) = regions::tables(events, &of, gpu_total);
    let mut launches_seen: Vec<usize> = of.graph_launch.iter().flatten().copied().collect();
    launches_seen.sort_unstable();
    launches_seen.dedup();
    let graph_work = events
        .kernels
        .iter()
        .zip(&of.graph_launch)
        .filter(|(_, l)| l.is_some());
    let graphs = Graphs {
        launches: launches_seen.len() as u64,
        calls: graph_work.clone().count() as u64,
        total_us: us(graph_work.map(|(k, _)| k.duration_ns).sum()),
    };
    TraceAnalysis {
        schema: SCHEMA.to_string(),
        source: Source {
            path: path.to_string(),
            rank: read.header.rank,
            world_size: read.header.world_size,
            devices: read.header.devices.clone(),
            bytes: read.bytes,
            host_events: events.ops.len() as u64,
            device_events: events.kernels.len() as u64,
            skipped_events: read.skipped,
        },
        region_patterns: options.regions.given.clone(),
        gpu_total_us: us(gpu_total),
        early_start_us: us(early_start),
        kernels: kernel_stats(events, &of.graph_launch, charged, gpu_total),
        operators: operator_table(events, &attribution)
            .into_iter()
            .map(|r| OperatorStat {
                name: r.name,
                kind: r.kind,
                calls: r.calls,
                self_cpu_us: us(r.self_cpu_ns),
                total_cpu_us: us(r.total_cpu_ns),
                self_cuda_us: us(r.self_cuda_ns),
                total_cuda_us: us(r.total_cuda_ns),
            })
            .collect(),
        regions: region_stats,
        kernels_by_region,
        timeline: timeline::per_device(
            events,
            &attribution.launches,
            options.kernel_wait_threshold_ns,
        ),
        iterations: iterations(events, &attribution, options.kernel_wait_threshold_ns),
        graphs,
    }
}

/// One row per distinct name of GPU work, by total time.
fn kernel_stats(
    events: &ProfileEvents,
    graph_launch: &[Option<usize>],
    charged: &[u64],
    gpu_total: u64,
) -> Vec<KernelStat> {
    // (calls, total, min, max, graph calls, early start) per name.
    let mut by_name: HashMap<&str, (u64, u64, u64, u64, u64, u64)> = HashMap::new();
    for ((k, launch), c) in events.kernels.iter().zip(graph_launch).zip(charged) {
        if !k.is_gpu_work() {
            continue;
        }
        let e = by_name.entry(&k.name).or_insert((0, 0, u64::MAX, 0, 0, 0));
        e.0 += 1;
        e.1 += k.duration_ns;
        e.2 = e.2.min(k.duration_ns);
        e.3 = e.3.max(k.duration_ns);
        e.4 += u64::from(launch.is_some());
        e.5 += k.duration_ns - c;
    }
    let mut rows: Vec<KernelStat> = by_name
        .into_iter()
        .map(
            |(name, (calls, total, min, max, graph_calls, early))| KernelStat {
                name: name.to_string(),
                short_name: short_name(name),
                calls,
                total_us: us(total),
                mean_us: us(total) / calls as f64,
                min_us: us(min),
                max_us: us(max),
                share_of_gpu: if gpu_total == 0 {
                    0.0
                } else {
                    total as f64 / gpu_total as f64
                },
                graph_calls,
                early_start_us: us(early),
            },
        )
        .collect();
    rows.sort_by(|a, b| b.total_us.total_cmp(&a.total_us).then(a.name.cmp(&b.name)));
    rows
}
