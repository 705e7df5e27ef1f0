//! One typed struct per config group (conf/<group>/*.yaml): field names are the YAML keys.
/// `dataset.*`: the dataset owns its config types.
pub use crate::dataset::{DatasetSpec, SamplingSpec};
use crate::model::{Arch, Family, FamilyOptim};
use crate::optim::EngineOptim;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct InferSpec {
    pub max_new_tokens: u32,
    /// Benchmark switch: generate exactly `max_new_tokens`, ignoring EOS.
    pub ignore_eos: bool,
    /// HF `no_repeat_ngram_size`; 0 disables.
    pub no_repeat_ngram_size: u32,
    /// Sliding window (tokens) for the n-gram ban; null = whole sequence (HF semantics).
    pub ngram_window: Option<u32>,
    pub prompt: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WeightsSource {
    /// Seeded random tensors with the official names and shapes.
    Synthetic,
    /// `model*.safetensors` under `model.path`.
    Files,
    /// The snapshot of `model.repo_id` at `model.revision` in the HF cache, downloaded before
    /// the worker starts (docs/weights.md); the front end then sets `model.path` to it.
    Hub,
}

impl WeightsSource {
    /// True when the worker reads safetensors from `model.path` (files, or a hub snapshot).
    pub fn reads_files(self) -> bool {
        self != WeightsSource::Synthetic
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DtypeChoice {
    Auto,
    Bf16,
    F32,
}

impl DtypeChoice {
    /// Bytes per element on a GPU (`auto` is bf16 there, as the worker picks it).
    pub fn gpu_bytes(self) -> u64 {
        match self {
            DtypeChoice::Auto | DtypeChoice::Bf16 => 2,
            DtypeChoice::F32 => 4,
        }
    }
}

/// `model.preprocess.mode`: the family's resolution modes (one type, the preprocessing's own).
pub use crate::model::deepseek_ocr::views::Mode as ResolutionMode;
/// `model.preprocess.*`: the document family's page preprocessing, owned by it.
pub use crate::model::deepseek_ocr::PreprocessSpec;

/// `model.*`. `arch` is typed by `family` as soon as the spec is built (see [`RawModelSpec`]).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(try_from = "RawModelSpec")]
pub struct ModelSpec {
    pub name: String,
    /// The model family, which picks the implementation and the schema of `arch`.
    pub family: Family,
    pub weights: WeightsSource,
    pub path: String,
    /// Hub repository of the checkpoint (`org/name`), for `model.weights=hub` and
    /// `llmprof models download <preset>`.
    pub repo_id: Option<String>,
    /// Branch, tag or commit of `repo_id` (null: main).
    pub revision: Option<String>,
    pub seed: u64,
    pub dtype: DtypeChoice,
    /// Model option used when no GPU is present.
    pub cpu_fallback: String,
    /// `model=hf` with synthetic weights: the config.json they are built for.
    pub config: Option<String>,
    /// Page-image preprocessing: document models only (absent for text-only families).
    pub preprocess: Option<PreprocessSpec>,
    /// Architecture (conf/model/<family>/arch/*.yaml).
    pub arch: Arch,
    /// The family's own fast-path switches (conf/model/<family>/optim/*.yaml, the preset named
    /// as the runtime preset).
    pub optim: FamilyOptim,
}

/// `model.*` as written in YAML, before `arch` is checked against the family's schema.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawModelSpec {
    name: String,
    family: Family,
    weights: WeightsSource,
    path: String,
    #[serde(default)]
    repo_id: Option<String>,
    #[serde(default)]
    revision: Option<String>,
    seed: u64,
    dtype: DtypeChoice,
    cpu_fallback: String,
    #[serde(default)]
    preprocess: Option<PreprocessSpec>,
    /// `model=hf`: the config.json of synthetic weights (docs/models.md).
    #[serde(default)]
    config: Option<String>,
    /// `model=hf`: the Hub repository (`org/name`), which `repo_id` takes.
    #[serde(default)]
    #[allow(dead_code)] // read through repo_id's interpolation
    repo: Option<String>,
    arch: serde_json::Value,
    #[serde(default)]
    optim: Option<serde_json::Value>,
}

impl TryFrom<RawModelSpec> for ModelSpec {
    type Error = String;

    fn try_from(raw: RawModelSpec) -> Result<Self, String> {
        if raw.family == Family::DeepseekOcr && raw.preprocess.is_none() {
            return Err("model.preprocess is missing: the deepseek_ocr family needs it (see conf/model/deepseek_ocr.yaml)".into());
        }
        Ok(ModelSpec {
            arch: raw.family.parse_arch(raw.arch)?,
            optim: raw.family.parse_optim(raw.optim)?,
            name: raw.name,
            family: raw.family,
            weights: raw.weights,
            path: raw.path,
            repo_id: raw.repo_id,
            revision: raw.revision,
            seed: raw.seed,
            dtype: raw.dtype,
            cpu_fallback: raw.cpu_fallback,
            config: raw.config,
            preprocess: raw.preprocess,
        })
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HardwareSpec {
    /// Dense peak TFLOP/s of the run's precision; null = derived from the detected GPU.
    pub peak_tflops: Option<f64>,
    /// Peak DRAM bandwidth in GB/s; null = derived from the detected GPU.
    pub peak_bandwidth_gbs: Option<f64>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RuntimeSpec {
    pub warmup: u32,
    pub repeats: u32,
    pub batch_size: u32,
    /// Ranks the model is split over (one worker process each, docs/design/tensor-parallel.md).
    #[serde(default = "one_rank")]
    pub tensor_parallel: u32,
    /// With tensor_parallel > 1: the longest a rank may go without a progress mark (start, model
    /// loaded, each request) before the run is stopped as hung (app/tp_launch.rs).
    #[serde(default = "rank_timeout_s")]
    pub tensor_parallel_timeout_s: u32,
    /// The engine's and the shared decoder layers' switches; the family's own are `model.optim`.
    pub optim: EngineOptim,
}

fn one_rank() -> u32 {
    1
}

fn rank_timeout_s() -> u32 {
    600
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PipelineSpec {
    pub torch_profiler: TorchProfilerSpec,
    pub static_analysis: EnableSpec,
    pub nsys: NsysSpec,
    pub ncu: NcuSpec,
    pub nvml: NvmlSpec,
    pub direct_inference: EnableSpec,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EnableSpec {
    pub enable: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Activity {
    Cpu,
    Cuda,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TorchProfilerSpec {
    pub enable: bool,
    pub activities: Vec<Activity>,
    pub record_shapes: bool,
    pub profile_memory: bool,
    pub with_stack: bool,
    pub with_flops: bool,
    pub max_decode_steps: u32,
    /// Profiled passes run and discarded before the recorded one, so that the profiler's
    /// one-time start-up (CUPTI, Kineto's buffers) is not charged to the recorded pass. Absent
    /// from runs recorded before the key existed: 0.
    #[serde(default)]
    pub warmup: u32,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NsysSpec {
    pub enable: bool,
    pub trace: Vec<String>,
    /// Record only inside the NVTX range `capture_range`.
    pub gating_nvtx: bool,
    pub capture_range: String,
    pub extra_args: Vec<String>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NcuSpec {
    pub enable: bool,
    /// NVTX range whose kernels are profiled (push/pop syntax `<name>/`).
    pub nvtx_include: Option<String>,
    pub kernel_regex: Option<String>,
    pub launch_skip: u32,
    pub launch_count: u32,
    /// Profile the K kernels with the most GPU time (from nsys, else stage 1's Kineto table).
    pub top_k: u32,
    /// Only kernels launched by these modules (module paths such as `layer.attention.core` or
    /// `lm_head`; a path selects the modules inside it too), from stage 1's module attribution.
    /// Empty: any kernel.
    #[serde(default)]
    pub modules: Vec<String>,
    pub sections: Vec<String>,
    /// `--set` (e.g. full); replaces `sections` when given.
    pub set: Option<String>,
    /// `--clock-control`: `base` (ncu's default: clocks locked to base while profiling) or `none`.
    pub clock_control: NcuClockControl,
    pub extra_args: Vec<String>,
    /// In a tensor-parallel run, the rank whose worker ncu profiles (the others run beside it
    /// unprofiled). Absent: 0.
    #[serde(default)]
    pub rank: u32,
}

/// `pipeline.ncu.clock_control`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NcuClockControl {
    Base,
    None,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NvmlSpec {
    pub enable: bool,
    pub interval_ms: u32,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct OutputSpec {
    /// Write the Kineto Chrome trace (trace.json).
    pub trace_json: bool,
    /// Draw roofline plots (SVG + PNG).
    pub plots: bool,
}
