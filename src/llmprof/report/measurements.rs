//! What a stage-1 run measured, as plain data: the input of the report builder
//! ([`super::stage1::build`]). The worker fills it; nothing here needs libtorch, so the builder
//! is unit-tested on hand-made measurements.
use crate::measure::gpu::GpuProps;
use crate::measure::memory::RegionPeak;
use crate::measure::nvml::NvmlTrace;
use crate::measure::op_tables::{KernelRow, OperatorRow};
use crate::model::{BatchWork, GraphStats, ModelInfo, RequestInfo};
use std::collections::BTreeMap;

/// Everything stage 1 measured.
#[derive(Debug, Clone)]
pub struct Stage1Measurements {
    pub model: ModelInfo,
    /// Timer used for region times (`CudaEvents`, `Host`).
    pub clock: String,
    /// Inputs (pages) the run read.
    pub inputs: usize,
    /// One entry per timed request (a batch run once), in run order.
    pub requests: Vec<TimedRequest>,
    pub nvml: Option<NvmlTrace>,
    pub kineto: Option<KinetoSummary>,
    pub memory: Option<MemorySummary>,
    /// The GPU's properties, or why there are none (no GPU, no NVML).
    pub gpu: Result<GpuProps, String>,
    pub graphs: Option<GraphStats>,
}

/// One timed request: a batch of inputs run once.
#[derive(Debug, Clone, PartialEq)]
pub struct TimedRequest {
    /// Index of the batch among the run's batches (repeats of one batch share it).
    pub batch_index: usize,
    pub repeat: u32,
    /// The batch's rows.
    pub rows: Vec<RequestInfo>,
    /// Region → ms for this request (nested regions counted in their parents too).
    pub region_ms: BTreeMap<String, f64>,
    /// Each decode step's forward time, ms.
    pub step_ms: Vec<f64>,
    /// When each token was emitted, ms from the request's start: the end of prefill (first
    /// token), then the end of each decode step. Serving metrics (TTFT, TPOT, ITL) come from it.
    pub token_ms: Vec<f64>,
    pub output_tokens: usize,
    /// Tokens each row generated (its OSL), in row order.
    pub row_output_tokens: Vec<usize>,
    pub decode_steps: usize,
    /// Host unix-ns windows of the prefill and decode regions (for NVML alignment).
    pub windows: Vec<(String, u64, u64)>,
    /// The model's analytic work for this batch and its decode steps.
    pub work: BatchWork,
}

/// What the separate Kineto pass saw.
#[derive(Debug, Clone, PartialEq)]
pub struct KinetoSummary {
    pub prefill_ms: f64,
    pub decode_ms: f64,
    pub decode_steps: usize,
    pub events: usize,
    pub operators: Vec<OperatorRow>,
    pub kernels: Vec<KernelRow>,
    /// Sum of Kineto's per-op FLOP counts (ops it knows a formula for: mm, addmm, bmm, conv…).
    pub kineto_flops: u64,
    /// The model's analytic FLOPs of the same pass (its batch and decode steps).
    pub analytic_flops: f64,
}

/// Caching-allocator peaks: at the end of the run and per region of the timed requests.
#[derive(Debug, Clone, PartialEq)]
pub struct MemorySummary {
    /// The allocator's own peak counters at the end of the run.
    pub counters: RegionPeak,
    /// Over every reading taken at region boundaries.
    pub overall: RegionPeak,
    pub regions: BTreeMap<String, RegionPeak>,
}
