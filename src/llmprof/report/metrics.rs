//! metrics.json: versioned schema (docs/metrics-schema.md). Times in ms unless the name says
//! otherwise; a number that could not be derived is `null` with a note saying why.
use crate::measure::stats::Summary;
use crate::model::GraphStats;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const SCHEMA: &str = "llmprof.metrics/v2";

/// The banner every synthetic-weights report carries (the model states it; reports repeat it).
pub use crate::model::SYNTHETIC_NOTE;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunReport {
    pub schema: String,
    pub command: String,
    pub llmprof_version: String,
    pub synthetic_weights: bool,
    pub notes: Vec<String>,
    pub setup: Setup,
    /// Per stage (sam, clip, projector, vision, prefill = TTFT, decode, decode_step = TPOT, e2e),
    /// statistics over every timed request, in ms.
    pub stages: BTreeMap<String, StageStats>,
    /// Per stage, the largest coefficient of variation between repeats of one input (the CV in
    /// `stages` mixes inputs, whose crop grids and prompt lengths legitimately differ).
    pub cv_within_input: BTreeMap<String, f64>,
    pub throughput: Throughput,
    /// TTFT, TPOT, ITL and end-to-end latency under their standard definitions (docs/metrics-schema.md).
    pub serving: ServingMetrics,
    pub peaks: Option<PeaksInfo>,
    pub flops: Option<FlopsInfo>,
    pub utilisation: Utilisation,
    pub nvml: NvmlInfo,
    pub kineto: Option<KinetoInfo>,
    /// GPU time by stage and module, with the stages' timelines (the Kineto pass); absent in runs
    /// from before module attribution and without a Kineto pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modules: Option<super::metrics_modules::ModulesInfo>,
    /// A tensor-parallel run's ranks side by side (rank 0's metrics.json only; absent with one
    /// rank).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tensor_parallel: Option<super::metrics_ranks::RanksInfo>,
    pub memory: Option<MemoryInfo>,
    /// The fast-path switches of this run (`runtime.optim`, `model.optim`) and what the
    /// CUDA-graph path did.
    pub optim: OptimInfo,
    pub requests: Vec<RequestRecord>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OptimInfo {
    /// `runtime.optim`: the engine's and the shared decoder layers' switches, by name (runs
    /// recorded before the family switches moved to `model.optim` list those here too).
    pub switches: serde_json::Map<String, serde_json::Value>,
    /// `model.optim`: the switches of the model's family, by name (empty for a family without
    /// switches of its own, and in runs recorded before they moved there).
    #[serde(default)]
    pub model_switches: serde_json::Map<String, serde_json::Value>,
    /// Decode steps replayed from captured graphs; null when decode steps ran eagerly.
    pub graphs: Option<GraphStats>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Setup {
    pub model: String,
    pub device: String,
    pub dtype: String,
    pub gpu: Option<String>,
    /// The model's resolution mode; null for text-only models.
    pub mode: Option<String>,
    /// `runtime.batch_size`, as requested.
    pub batch_size: u32,
    /// The rows each timed batch ran (the smallest if they differ); null in runs from before it
    /// was recorded. Batches are filled to `batch_size` by cycling the inputs
    /// (dataset/batching.rs), so it differs only where a model ran fewer rows.
    #[serde(default)]
    pub effective_batch_size: Option<u32>,
    pub warmup: u32,
    pub repeats: u32,
    pub max_new_tokens: u32,
    pub ignore_eos: bool,
    pub inputs: usize,
    pub clock: String,
    pub load_ms: f64,
}

impl Setup {
    /// "8", or "8 requested, 2 ran" where the timed batches ran fewer rows than requested.
    pub fn batch_size_label(&self) -> String {
        self.effective_batch_size
            .and_then(|ran| batch_ran_label(self.batch_size.into(), ran.into()))
            .unwrap_or_else(|| self.batch_size.to_string())
    }
}

/// "8 requested, 2 ran" where a run's timed batches ran another number of rows than requested;
/// `None` where they ran as many (the report header and the sweep summary say it alike).
pub fn batch_ran_label(requested: u64, ran: u64) -> Option<String> {
    (ran != requested).then(|| format!("{requested} requested, {ran} ran"))
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StageStats {
    pub n: usize,
    pub mean_ms: f64,
    pub std_ms: Option<f64>,
    pub min_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub cv: Option<f64>,
}

impl From<&Summary> for StageStats {
    fn from(s: &Summary) -> Self {
        StageStats {
            n: s.n,
            mean_ms: s.mean,
            std_ms: s.std,
            min_ms: s.min,
            p50_ms: s.p50,
            p90_ms: s.p90,
            p99_ms: s.p99,
            max_ms: s.max,
            cv: s.cv,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Throughput {
    pub output_tokens_total: u64,
    /// Mean over requests of output tokens ÷ that request's e2e time.
    pub tokens_per_s_per_request_mean: Option<f64>,
    /// All output tokens ÷ all timed e2e time (batch rows counted separately).
    pub tokens_per_s_aggregate: Option<f64>,
    /// Decode tokens per second per batch row: 1000 ÷ mean TPOT (TPOT as in `serving`).
    pub decode_tokens_per_s: Option<f64>,
}

/// Serving metrics as vLLM's benchmark (`vllm/benchmarks/serve.py`), optimum-benchmark and
/// GenAI-Perf define them, over the timed requests (cold first repeats excluded); per batch row.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServingMetrics {
    /// Time to first token: request start → first token (prefill, input encoders included).
    pub ttft_ms: Option<StageStats>,
    /// Time per output token after the first, per request: (e2e − TTFT) ÷ (output tokens − 1).
    pub tpot_ms: Option<StageStats>,
    /// Inter-token latency: every gap between consecutive tokens of every request.
    pub itl_ms: Option<StageStats>,
    /// Request start → last token. Output tokens per second, per request and aggregate, are in
    /// `throughput`.
    pub e2e_ms: Option<StageStats>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PeaksInfo {
    pub gpu_name: String,
    pub precision: String,
    pub peak_tflops: f64,
    pub peak_bandwidth_gbs: f64,
    /// "derived from <GPU props> (<source>)" or "hardware.peak_tflops override".
    pub source: String,
    /// The clock `peak_tflops` is at: the rated (datasheet) clock of the run's precision.
    pub clock_mhz: Option<f64>,
    /// The same peak at the mean SM clock NVML saw in each stage window (prefill, decode).
    pub at_window_clock: BTreeMap<String, WindowPeak>,
}

/// The dense peak at the clock the GPU actually ran during one stage window.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WindowPeak {
    pub sm_clock_mhz: f64,
    pub peak_tflops: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlopsInfo {
    /// Mean per request, GFLOP.
    pub vision_gflop: f64,
    pub prefill_gflop: f64,
    pub decode_step_gflop_mean: f64,
    pub decode_step_bytes_mean: f64,
    pub e2e_gflop: f64,
    /// Kineto's summed per-op FLOPs of matmul-like ops ÷ the analytic matmul FLOPs of the same pass.
    pub kineto_matmul_ratio: Option<f64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Utilisation {
    /// Model FLOP utilisation per stage (0..1): analytic FLOPs ÷ (time × peak).
    pub mfu: BTreeMap<String, f64>,
    /// Memory-bandwidth utilisation of decode (0..1): bytes per step ÷ step time ÷ peak bandwidth.
    pub mbu_decode: Option<f64>,
    /// MFU per stage from the median stage time instead of the mean.
    pub mfu_p50: BTreeMap<String, f64>,
    /// MBU of decode from the median decode-step time.
    pub mbu_decode_p50: Option<f64>,
    /// MFU of prefill and of the decode step against the peak at the clock NVML saw in their
    /// windows (`peaks.at_window_clock`): how busy the GPU was at the speed it actually ran.
    pub mfu_at_window_clock: BTreeMap<String, f64>,
    /// The shortest time each stage with analytic work could take at the peaks (`peaks`), ms:
    /// its FLOPs ÷ peak FLOP/s; for `decode_step` the larger of that and its bytes ÷ peak DRAM
    /// bandwidth (the roofline's floor). Absent in runs recorded before it.
    #[serde(default)]
    pub floor_ms: BTreeMap<String, f64>,
    /// Why MFU/MBU are missing, when they are.
    pub unavailable: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NvmlInfo {
    pub available: bool,
    pub note: Option<String>,
    pub samples: usize,
    /// Averages per stage window (prefill, decode) and over all timed requests.
    pub windows: BTreeMap<String, NvmlWindow>,
    /// Prefill + decode energy of the timed requests (null when any window could not be measured).
    pub energy_j_total: Option<f64>,
    /// `energy_j_total` ÷ every output token.
    pub energy_j_per_output_token: Option<f64>,
    /// Decode energy ÷ the tokens decode produced (all but each row's first).
    pub energy_j_per_decode_token: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NvmlWindow {
    /// Summed duration of the windows (host clock, between the stream syncs that bracket them).
    pub seconds: f64,
    pub power_w: Option<f64>,
    pub sm_clock_mhz: Option<f64>,
    pub mem_clock_mhz: Option<f64>,
    pub gpu_util_pct: Option<f64>,
    pub mem_util_pct: Option<f64>,
    pub mem_used_gib: Option<f64>,
    pub temperature_c: Option<f64>,
    pub energy_j: Option<f64>,
    pub throttle_reasons: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KinetoInfo {
    pub profiled_e2e_ms: f64,
    pub timed_e2e_mean_ms: f64,
    /// (profiled − timed mean) ÷ timed mean.
    pub overhead_pct: f64,
    pub decode_steps_profiled: usize,
    pub events: usize,
    pub top_operators: Vec<TopRow>,
    pub top_kernels: Vec<TopRow>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopRow {
    pub name: String,
    pub stage: Option<String>,
    pub calls: u64,
    /// Kernels: summed duration. Operators: self CUDA time, or self CPU time when the operator
    /// launched no GPU work (see `self_cuda_ms` / `self_cpu_ms`).
    pub total_ms: f64,
    pub share_pct: Option<f64>,
    /// Operators only: GPU time charged directly to the operator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_cuda_ms: Option<f64>,
    /// Kernels only: the modules that ran it, most time first (docs/modules.md).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub modules: Vec<String>,
    /// Operators only: host time minus the operators nested in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_cpu_ms: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryInfo {
    pub peak_allocated_gib: f64,
    pub peak_reserved_gib: f64,
    /// Per region (sam, clip, projector, vision, prefill, decode, decode_step), over the timed
    /// requests; a parent region includes its children.
    pub stages: BTreeMap<String, MemoryPeak>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryPeak {
    pub peak_allocated_gib: f64,
    pub peak_reserved_gib: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestRecord {
    pub input: String,
    pub repeat: u32,
    pub batch_rows: usize,
    pub prompt_tokens: usize,
    pub output_tokens: usize,
    /// Input sequence length of each batch row (its prompt tokens, padding excluded).
    #[serde(default)]
    pub isl: Vec<usize>,
    /// Output sequence length of each batch row (tokens it generated).
    #[serde(default)]
    pub osl: Vec<usize>,
    pub image_tokens: usize,
    pub crop_grid: [u32; 2],
    /// Stage → ms for this request.
    pub stage_ms: BTreeMap<String, f64>,
    pub decode_steps: usize,
    pub ttft_ms: Option<f64>,
    /// (e2e − TTFT) ÷ (tokens per row − 1); null with fewer than 2 tokens.
    pub tpot_ms: Option<f64>,
    pub e2e_ms: Option<f64>,
    /// Output tokens of one row ÷ e2e.
    pub output_tokens_per_s: Option<f64>,
    /// Every inter-token gap of this request.
    pub itl_ms: Vec<f64>,
    /// Every decode step's forward time of this request (the samples of `stages.decode_step`);
    /// `llmprof compare` tests on them. Absent in files written before it was added.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub decode_step_ms: Vec<f64>,
    /// A first repeat much slower than the later repeats of its input: left out of the
    /// statistics (see `notes`).
    pub cold: bool,
    /// Host-clock windows of this request's stages (prefill, decode), on the clock of nvml.csv's
    /// `unix_ns`: the report shades them over the telemetry. Empty in files written before.
    #[serde(default)]
    pub windows: Vec<StageWindow>,
}

/// One stage window of a request, Unix epoch nanoseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StageWindow {
    pub stage: String,
    pub start_unix_ns: u64,
    pub end_unix_ns: u64,
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_batch_label_says_when_the_rows_differ() {
        assert_eq!(super::batch_ran_label(8, 8), None);
        assert_eq!(
            super::batch_ran_label(8, 2).as_deref(),
            Some("8 requested, 2 ran")
        );
    }
}
