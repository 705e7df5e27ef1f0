//! The interface every model implements (the implementations live in the worker crate, beside
//! libtorch) and the plain types a model reports through. The workload loops, measurement and
//! reports are written against these and never name a model.
use super::family::Family;
use super::generate::{GenerateConfig, GenerateOutput};
use crate::dataset::InputItem;
use crate::dtype::Dtype;
use crate::region::{RegionObserver, RegionTree};
use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What a model built with seeded random weights says of itself (and every report repeats).
pub const SYNTHETIC_NOTE: &str = "synthetic weights: timings valid, text meaningless";

/// A model as built for a run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ModelInfo {
    /// The model option actually run (a CPU fallback may replace the configured one).
    pub name: String,
    pub family: Family,
    /// Where it runs, for reports (`Cpu`, `Cuda(0)`).
    pub device: String,
    /// The CUDA device index, when it runs on a GPU.
    pub cuda_device: Option<usize>,
    pub dtype: Dtype,
    /// Seeded random weights (timings valid, outputs meaningless).
    pub synthetic: bool,
    /// What a reader must know about this build (fallbacks, switches without effect, ...).
    pub notes: Vec<String>,
    /// Time to build the model and load its weights.
    pub load_ms: f64,
}

/// What reports record about one prepared request (inputs.yaml, metrics.json `requests`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestInfo {
    /// File stem of the input, naming per-input outputs.
    pub name: String,
    pub path: String,
    pub bytes: u64,
    pub prompt_tokens: usize,
    /// Present for requests with an image.
    pub image: Option<ImageInfo>,
    /// The most tokens this request may generate when its dataset sets it (random_tokens'
    /// output lengths); `None`: `infer.max_new_tokens`.
    pub output_len: Option<usize>,
}

/// How an input image became tokens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImageInfo {
    pub width: u32,
    pub height: u32,
    /// The model's resolution mode.
    pub mode: String,
    /// Tiles as [columns, rows]; [1, 1] without tiles.
    pub crop_grid: [u32; 2],
    pub image_tokens: usize,
}

/// Analytic work of one batch (FLOP = 2 × multiply-accumulate), from the model's architecture
/// and the batch's actual shapes. A parent region's FLOPs include its children's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BatchWork {
    /// FLOPs per region over the whole batch (`prefill` includes any input encoder).
    pub region_flops: BTreeMap<String, f64>,
    /// FLOPs of each decode step over the batch, at that step's context length.
    pub step_flops: Vec<f64>,
    /// Bytes each decode step must move (weights it reads, KV cache read and written).
    pub step_bytes: Vec<f64>,
}

/// The model's static per-module analysis (`static_compute.json` and `.md`).
#[derive(Debug, Clone)]
pub struct StaticAnalysis {
    pub json: serde_json::Value,
    pub markdown: String,
}

/// What the CUDA-graph decode path and vision graphs did over the whole run (warm-up and Kineto
/// pass included).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GraphStats {
    pub graphs_captured: usize,
    pub capture_ms_total: f64,
    pub replays: u64,
    /// Fixed-shape steps run eagerly: the first step of each (batch, KV window), or every step
    /// without a GPU.
    pub eager_steps: u64,
    /// KV windows (slots attended) captured, per batch size.
    pub windows: BTreeMap<i64, Vec<i64>>,
    /// Vision stages captured as graphs, one per stage and input shape
    /// (`model.optim.vision_cuda_graph`); 0 in runs recorded before the switch existed.
    #[serde(default)]
    pub vision_graphs_captured: usize,
    #[serde(default)]
    pub vision_capture_ms_total: f64,
    /// Vision stage calls served by replaying a captured graph.
    #[serde(default)]
    pub vision_replays: u64,
    /// Decoder prefills captured as graphs, one per prompt shape, left padding and KV cache
    /// (`runtime.optim.prefill_cuda_graph`); 0 in runs recorded before the switch existed.
    #[serde(default)]
    pub prefill_graphs_captured: usize,
    /// Prefills served by replaying a captured graph.
    #[serde(default)]
    pub prefill_replays: u64,
}

/// A document model's reading of its output for one page: markdown and layout elements with
/// boxes in pixels of the original page.
#[derive(Debug, Clone, PartialEq)]
pub struct PageReading {
    /// Markdown; image elements are links made by the caller's `image_link(k)`.
    pub markdown: String,
    /// Boxes of the linked image elements, in link order, in pixels.
    pub image_boxes_px: Vec<[f64; 4]>,
    pub elements: Vec<LayoutElement>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct LayoutElement {
    pub label: String,
    pub text: String,
    pub boxes_px: Vec<[f64; 4]>,
}

/// A built model the workload can drive. `Request` is what the model prepares from one input
/// (preprocessed pixels, prompt ids, ...).
pub trait Model {
    type Request;

    fn info(&self) -> &ModelInfo;

    /// The regions this model marks (see [`crate::region`]).
    fn regions(&self) -> RegionTree;

    /// Turns one dataset input and the prompt into a request.
    fn prepare(&self, item: &InputItem, prompt: &str) -> Result<Self::Request>;

    fn describe(&self, request: &Self::Request) -> RequestInfo;

    /// Token ids the windowed no-repeat-n-gram rule never bans.
    fn ngram_exempt_ids(&self) -> &[i64];

    /// Generates for a batch, marking its regions through `obs`.
    fn generate(
        &self,
        batch: &[&Self::Request],
        cfg: &GenerateConfig,
        obs: &dyn RegionObserver,
    ) -> Result<GenerateOutput>;

    /// Analytic FLOPs and bytes of `batch` run for `decode_steps` steps.
    fn work(&self, batch: &[&Self::Request], decode_steps: usize) -> BatchWork;

    /// The analytic work of each module (model/module_work.rs) in one decode step of `batch`,
    /// at the mean context of `decode_steps` steps after its prompts.
    fn decode_step_modules(
        &self,
        batch: &[&Self::Request],
        decode_steps: usize,
    ) -> Vec<crate::model::module_work::ModuleWork>;

    /// Per-module parameters, FLOPs and bytes for `request` at batch `batch`, decoding up to
    /// `max_new_tokens`.
    fn static_analysis(
        &self,
        request: &Self::Request,
        batch: usize,
        max_new_tokens: usize,
    ) -> Result<StaticAnalysis>;

    /// What the CUDA graphs (decode steps, vision stages) did so far; `None` when nothing is
    /// captured (eager steps and vision, or no GPU).
    fn graph_stats(&self) -> Option<GraphStats>;

    /// Model-specific lines of assumptions.md (how its FLOPs and bytes are counted).
    fn assumptions(&self) -> Vec<String>;

    /// Generated ids → text; ids the tokenizer lacks appear as `<id:N>`.
    fn decode_text(&self, tokens: &[i64]) -> String;

    /// A document model's reading of `text` for a `width`×`height` page; `None` for models whose
    /// output has no layout grammar (text models: the optional OCR features are simply absent).
    fn read_page(
        &self,
        _text: &str,
        _width: u32,
        _height: u32,
        _image_link: &dyn Fn(usize) -> String,
    ) -> Option<PageReading> {
        None
    }
}
