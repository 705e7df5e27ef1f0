//! One typed struct per config group (conf/<group>/*.yaml): field names are the YAML keys.
use crate::model::{Arch, Family};
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

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DatasetSpec {
    pub name: String,
    pub root: String,
    /// A text file listing image paths (relative to `root`), one per line.
    pub subset_filelist: Option<String>,
    /// A variant under `datasets/<name>/<variant>/` (docs/datasets.md); null: the source data.
    /// The front end points `root` at the variant's data before the worker starts.
    #[serde(default)]
    pub variant: Option<String>,
    pub sampling: SamplingSpec,
    /// Largest page image decoded, width × height, checked from the header (default: PIL's
    /// DecompressionBombError size; absent in configs written before the key existed).
    #[serde(default = "crate::dataset::default_max_image_pixels")]
    pub max_image_pixels: u64,
    /// Largest decoded size of one page image in bytes (native buffer + its RGB copy).
    #[serde(default = "crate::dataset::default_max_image_bytes")]
    pub max_image_bytes: u64,
    // Text datasets (dataset=random_tokens, dataset=prompts); absent for image ones.
    // `random_tokens` means what vLLM's random dataset means: lengths drawn uniformly from
    // [len·(1 − range_ratio), len·(1 + range_ratio)] (floor, ceil), random token ids.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_len: Option<u32>,
    /// random_tokens: mean output length; prompts: cap per request (null: infer.max_new_tokens).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_len: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range_ratio: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_prompts: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// prompts: the JSONL file (one object with a `prompt` string per line), relative to root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SamplingSpec {
    pub num_epochs: u32,
    /// null: every image once per epoch.
    pub num_samples_per_epoch: Option<u32>,
    pub randomize: bool,
    pub seed: u64,
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ResolutionMode {
    Tiny,
    Small,
    Base,
    Large,
    Gundam,
}

impl ResolutionMode {
    /// The YAML spelling (`gundam`).
    pub fn name(self) -> &'static str {
        match self {
            ResolutionMode::Tiny => "tiny",
            ResolutionMode::Small => "small",
            ResolutionMode::Base => "base",
            ResolutionMode::Large => "large",
            ResolutionMode::Gundam => "gundam",
        }
    }
}

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
    /// Page-image preprocessing: document models only (absent for text-only families).
    pub preprocess: Option<PreprocessSpec>,
    /// Architecture (conf/model/<family>/arch/*.yaml).
    pub arch: Arch,
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
    arch: serde_json::Value,
}

impl TryFrom<RawModelSpec> for ModelSpec {
    type Error = String;

    fn try_from(raw: RawModelSpec) -> Result<Self, String> {
        if raw.family == Family::DeepseekOcr && raw.preprocess.is_none() {
            return Err("model.preprocess is missing: the deepseek_ocr family needs it (see conf/model/deepseek_ocr.yaml)".into());
        }
        Ok(ModelSpec {
            arch: raw.family.parse_arch(raw.arch)?,
            name: raw.name,
            family: raw.family,
            weights: raw.weights,
            path: raw.path,
            repo_id: raw.repo_id,
            revision: raw.revision,
            seed: raw.seed,
            dtype: raw.dtype,
            cpu_fallback: raw.cpu_fallback,
            preprocess: raw.preprocess,
        })
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PreprocessSpec {
    pub mode: ResolutionMode,
    pub base_size: Option<u32>,
    pub image_size: Option<u32>,
    pub crop_mode: Option<bool>,
    pub min_crops: u32,
    pub max_crops: u32,
}

impl PreprocessSpec {
    /// The view sizes and tiling this preprocessing uses: the mode's, with the keys that are set
    /// overriding them.
    pub fn resolve(&self) -> crate::model::deepseek_ocr::views::PreprocessConfig {
        use crate::model::deepseek_ocr::views::{Mode, PreprocessConfig};
        let mode = match self.mode {
            ResolutionMode::Tiny => Mode::Tiny,
            ResolutionMode::Small => Mode::Small,
            ResolutionMode::Base => Mode::Base,
            ResolutionMode::Large => Mode::Large,
            ResolutionMode::Gundam => Mode::Gundam,
        };
        let mut cfg = PreprocessConfig::from_mode(mode);
        if let Some(b) = self.base_size {
            cfg.base_size = b;
        }
        if let Some(s) = self.image_size {
            cfg.image_size = s;
        }
        if let Some(c) = self.crop_mode {
            cfg.crop_mode = c;
        }
        cfg.min_crops = self.min_crops;
        cfg.max_crops = self.max_crops;
        cfg
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
    pub optim: OptimSpec,
}

/// Fast-path switches (`runtime.optim.*`); each is reported in metrics.json. `runtime=eager`
/// turns them all off.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct OptimSpec {
    /// Capture one decode step per batch size and KV window as a CUDA graph and replay it.
    pub cuda_graph: bool,
    /// KV slots per captured window: attention reads whole windows, one graph per window.
    pub graph_kv_bucket: u32,
    /// One matmul for q/k/v and one for gate/up.
    pub fused_projections: bool,
    /// Routed experts as grouped GEMMs (torch._grouped_mm) instead of a per-expert loop.
    pub grouped_moe: bool,
    /// libtorch's fused SDPA kernels instead of explicit matmul + softmax.
    pub sdpa: bool,
    /// Preallocated KV cache instead of concatenation per step.
    pub static_kv_cache: bool,
    /// One-kernel RMSNorm instead of HF's eight elementwise ops.
    pub fused_rms_norm: bool,
    /// Tokens stay on the GPU between steps; EOS checked every `eos_check_interval` steps.
    pub sync_free_decode: bool,
    pub eos_check_interval: u32,
    /// The vision views of every row of a batch (and every crop of a page) go through SAM and
    /// CLIP together, grouped by size, at most `vision_max_views` views per call; off: one page
    /// at a time (its crops batched, its global view alone). Absent from runs recorded before
    /// the switch existed: read as off.
    #[serde(default)]
    pub batched_vision: bool,
    #[serde(default)]
    pub vision_max_views: u32,
    /// SAM's decomposed relative-position bias folded into q·k as extra channels (fused
    /// attention, no mask) instead of a materialised [B, heads, N, N] bias. Absent: off.
    #[serde(default)]
    pub sam_fused_rel_pos: bool,
    /// SAM's windowed blocks project on the whole grid and split into windows and heads with one
    /// copy each way instead of partition/unpartition copies. Absent: off.
    #[serde(default)]
    pub sam_fused_windows: bool,
    /// On a CUDA device, SAM's folded-bias attention packs q′/k′/v and merges windows with
    /// llmprof's own CUDA kernels instead of pad, partition and concatenation copies (needs
    /// `sam_fused_rel_pos`; no effect on the CPU). Absent: off.
    #[serde(default)]
    pub sam_cuda_kernels: bool,
    /// With `sam_cuda_kernels`, SAM's relative-position products as one GEMM of q with both
    /// axes' resized tables (each relative offset once) and one llmprof kernel gathering them
    /// into q′, instead of two batched GEMMs over copies of q per window row and column and
    /// strided copies into q′. Absent: off.
    #[serde(default)]
    pub sam_rel_pos_gemm: bool,
    /// With `sam_cuda_kernels`, SAM's windowed blocks run the attention's output projection on
    /// the windows and the add + LayerNorm kernel (`add_layer_norm_kernel`) reads each token's
    /// row where its window put it, instead of a merge copy back to the grid before the
    /// projection. Without the add + LayerNorm kernel it has no effect (the windows are merged
    /// before the projection, as with the switch off). Absent: off.
    #[serde(default)]
    pub sam_proj_in_windows: bool,
    /// Page pixels go to the GPU as uint8 from pinned memory and are normalised there, instead
    /// of normalised to fp32 on the CPU and copied from pageable memory (4x the bytes). Absent:
    /// off.
    #[serde(default)]
    pub vision_uint8_upload: bool,
    /// With `vision_uint8_upload` on a CUDA device, for batches whose pages have the same views, a
    /// vision call copies its page-locked uint8 views to the GPU itself (inside its CUDA graph
    /// where there is one, each replay pointing the captured copies at its pages), instead of
    /// every view being copied first and a call's views concatenated after (as batches of
    /// mixed tile grids still do). Absent: off.
    #[serde(default)]
    pub vision_graph_uploads: bool,
    /// On a CUDA device with `grouped_moe`, MoE routing (the router logits in one CUDA kernel,
    /// then softmax, top-k, the stable sort of token slots by expert and the group ends in
    /// another, or three over many blocks for a prefill) by llmprof's kernels, instead of about a
    /// dozen libtorch kernels. Absent: off.
    #[serde(default)]
    pub moe_routing_kernel: bool,
    /// SAM's patch embedding (16×16 convolution, stride 16, 3 input channels) as one GEMM over
    /// unfolded patches, on tensor cores. Absent: off.
    #[serde(default)]
    pub sam_patch_gemm: bool,
    /// On a CUDA device, each vision stage (SAM, the encoder after it, the projector) is
    /// captured as a CUDA graph per input shape on first use and replayed after, so the vision
    /// pass costs a few launches instead of thousands. Absent: off.
    #[serde(default)]
    pub vision_cuda_graph: bool,
    /// With `vision_cuda_graph`: the most pages a prefill may hold for its vision stages to
    /// replay graphs; larger batches launch op by op (their launches are amortised, and graphs
    /// at batch 32 slowed the decode steps after them, reports/performance-history.md). 0: every
    /// batch. Absent: 0.
    #[serde(default)]
    pub vision_cuda_graph_max_pages: u64,
    /// With `vision_cuda_graph` on a CUDA device, when the views of a prefill make several vision
    /// calls (views of one size per call), the whole vision pass is one CUDA graph whose capture
    /// runs every second call (SAM, the encoder, the projector) on a second stream, so the calls
    /// overlap in its replays. The vision sub-stages then get no times of their own and Kineto
    /// attributes their kernels to the vision stage. Where vision runs op by op it has no
    /// effect (eager work on a second stream slows later graph replays). Absent: off.
    #[serde(default)]
    pub vision_streams: bool,
    /// On a CUDA device with a static KV cache and grouped MoE in bf16, the text decoder's
    /// prefill into a KV cache used before (as graph decode reuses them) is captured as a CUDA
    /// graph per prompt shape, left padding and KV cache after its first, eager run and replayed
    /// after (its kernels then run without the GPU's gaps between separately
    /// launched kernels). Absent: off.
    #[serde(default)]
    pub prefill_cuda_graph: bool,
    /// With `prefill_cuda_graph`: the most rows a prefill may have to be captured (0: any).
    /// Absent: 0.
    #[serde(default)]
    pub prefill_cuda_graph_max_batch: u64,
    /// On a CUDA device with `fused_projections`, the RoPE on q and k and the K/V cache write of
    /// each decode step and prefill in llmprof's one CUDA kernel per layer, instead of six to
    /// eight libtorch kernels (RoPE ops, the cache writes and the copies of their strided
    /// inputs). Absent: off.
    #[serde(default)]
    pub rope_kv_kernel: bool,
    /// On a CUDA device with `moe_routing_kernel`, the MoE combine (the weighted sum of each
    /// token's expert outputs read from the expert-sorted rows, plus the shared experts) in
    /// llmprof's one CUDA kernel per layer, instead of the unsort copy, casts, multiply, sum and
    /// add. Absent: off.
    #[serde(default)]
    pub moe_combine_kernel: bool,
    /// On a CUDA device with `fused_projections`, SwiGLU's activation (silu of the gate half
    /// times the up half of the fused projection's output) in llmprof's one CUDA kernel,
    /// instead of silu and a multiply over strided halves. Absent: off.
    #[serde(default)]
    pub swiglu_kernel: bool,
    /// On a CUDA device with `fused_rms_norm`, each residual add and the RMSNorm after it in
    /// llmprof's one CUDA kernel, instead of an add and the norm. Absent: off.
    #[serde(default)]
    pub add_rms_norm_kernel: bool,
    /// On a CUDA device, each residual add and the LayerNorm after it in the vision encoders'
    /// blocks (SAM, CLIP) in llmprof's one CUDA kernel, instead of an add and the norm. Row
    /// widths the kernel does not take fall back to the two ops. Absent: off.
    #[serde(default)]
    pub add_layer_norm_kernel: bool,
    /// On a CUDA device, CLIP's quickGELU (x·sigmoid(1.702·x)) in llmprof's one CUDA kernel,
    /// instead of a multiply by the scalar, a sigmoid and a multiply. Absent: off.
    #[serde(default)]
    pub quick_gelu_kernel: bool,
    /// On a Hopper GPU (compute capability 9.0) with bf16 weights, the first Linear of SAM's MLP
    /// and its erf-form GELU (erf within 1.5e-7) in one CUTLASS GEMM whose epilogue adds the
    /// bias and applies GELU to the fp32 accumulator, instead of the GEMM and a separate GELU
    /// pass over the 3,072-wide activations. Elsewhere (other GPUs, fp32, a build without the CUTLASS
    /// headers) the two ops run as with the switch off. Absent: off.
    #[serde(default)]
    pub sam_gelu_epilogue: bool,
    /// On a Hopper GPU (compute capability 9.0) with bf16 weights, the first Linear of CLIP's
    /// MLP and its quickGELU in one CUTLASS GEMM whose epilogue adds the bias and applies
    /// quickGELU to the fp32 accumulator, instead of the GEMM and a quickGELU pass over the
    /// 4,096-wide activations. Elsewhere the two ops run as with the switch off. Absent: off.
    #[serde(default)]
    pub clip_gelu_epilogue: bool,
    /// With `sam_proj_in_windows` (and so `sam_cuda_kernels`), in bf16 on a GPU: SAM's windowed
    /// attention in one llmprof kernel that reads q, k and v from the qkv Linear's output and
    /// folds the decomposed relative-position bias into q·k inside the kernel (96 wide, no q′/k′
    /// in memory), instead of packing q′/k′ for cuDNN's attention (which runs them 128 wide).
    /// fp32, other head sizes and windows other than 14×14 (SAM's) and 4×4 keep the folded path.
    /// Absent: off.
    #[serde(default)]
    pub sam_window_attention_kernel: bool,
    /// With `sam_cuda_kernels`, in bf16 on a Hopper GPU (compute capability 9.0) and a build
    /// with the CUTLASS headers: SAM's global attention in one flash-attention kernel (CUTLASS's
    /// Hopper FMHA) that reads q, k and v from the qkv Linear's output and adds the decomposed
    /// relative-position bias to each score inside it (q·k 64 wide), instead of packing q′/k′
    /// for cuDNN's attention (192 wide). Grids of 32, 40, 64 and 80 tokens a side (SAM at 512,
    /// 640, 1024 and 1280 pixels); others, fp32 and other GPUs keep the folded path. Absent: off.
    #[serde(default)]
    pub sam_global_attention_kernel: bool,
    /// With `sam_cuda_kernels`, in bf16 on a Hopper GPU and a build with the CUTLASS headers:
    /// SAM's windowed attention (14×14 windows) in one flash-attention kernel (CUTLASS's Hopper
    /// FMHA) that reads the windows by TMA from the qkv Linear's output on the grid, adds the
    /// decomposed bias to each score and writes its output back on the grid: no pack, no q′/k′,
    /// no windowed copy. Ahead of `sam_window_attention_kernel` where both are on. fp32, other
    /// windows and other GPUs keep the other paths. Absent: off.
    #[serde(default)]
    pub sam_window_fmha_kernel: bool,
    /// On a CUDA device, the fixed-shape (graph) decode step attends over each row's written
    /// KV slots only, in llmprof's split-over-slots kernel (head_dim 64 or 128), instead of
    /// SDPA over the whole KV window with a mask. No effect on eager decode steps. Absent: off.
    #[serde(default)]
    pub decode_attention_kernel: bool,
    /// With `decode_attention_kernel`: the smallest KV window (graph_kv_bucket multiples) whose
    /// decode steps use the kernel; shorter windows keep SDPA (the kernel's first version was
    /// slower than SDPA at windows of 1024 slots; since session 9 it is not,
    /// reports/performance-history.md). 0: every window.
    /// Absent: 0.
    #[serde(default)]
    pub decode_attention_min_window: u64,
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
    pub sections: Vec<String>,
    /// `--set` (e.g. full); replaces `sections` when given.
    pub set: Option<String>,
    /// `--clock-control`: `base` (ncu's default: clocks locked to base while profiling) or `none`.
    pub clock_control: NcuClockControl,
    pub extra_args: Vec<String>,
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
