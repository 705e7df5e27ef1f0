//! DeepSeek-OCR behind llmprof's model interface (`llmprof::model::Model`): built from the spec
//! (CPU fallback to the tiny architecture, synthetic or checkpoint weights, tokenizer, decode
//! session), pages turned into requests, generation, analytic work and the page reading.
use super::decode::generate::generate_with;
use super::hf_tokenizer;
use super::preprocess::{preprocess, PreparedImage};
use super::text::moe::GATHER_MAX_TOKENS;
use super::{DeepseekOcr, Part, PromptRow, Weights};
use crate::engine::device;
use crate::engine::graph_decode::DecodeSession;
use crate::models::layers::hf_tokenizer::HfTokenizer;
use anyhow::{bail, Context, Result};
use llmprof::dataset::{load_rgb_limited, ImageLimits, InputItem};
use llmprof::dtype::Dtype;
use llmprof::model::deepseek_ocr::output::read_page;
use llmprof::model::deepseek_ocr::prompt::{build_prompt_ids, image_token_count};
use llmprof::model::deepseek_ocr::static_report::{render_markdown, static_report, StaticInputs};
use llmprof::model::deepseek_ocr::tokenizer::{
    byte_fallback, tiny_byte_tokenizer, SpecialIds, TokenIds, TINY_SPECIAL,
};
use llmprof::model::deepseek_ocr::views::PreprocessConfig;
use llmprof::model::deepseek_ocr::{analytic, analytic_bytes, ArchConfig, REGIONS};
use llmprof::model::{
    Arch, BatchWork, Family, GenerateConfig, GenerateOutput, GraphStats, ImageInfo, Model,
    ModelInfo, PageReading, RequestInfo, StaticAnalysis,
};
use llmprof::region::{RegionObserver, RegionTree};
use llmprof::spec::{ResolutionMode, RunSpec, WeightsSource};
use std::cell::RefCell;
use std::path::Path;
use tch::Device;

/// The built-in architecture of a tiny model option (the CPU fallbacks), if `name` is one.
fn tiny_arch(name: &str) -> Option<ArchConfig> {
    match name {
        "deepseek_ocr_tiny" => Some(ArchConfig::tiny()),
        "deepseek_ocr2_tiny" => Some(ArchConfig::tiny_ocr2()),
        _ => None,
    }
}

/// One page ready for the model: its views and prompt ids.
pub struct OcrRequest {
    pub item: InputItem,
    pub image: PreparedImage,
    pub prompt_ids: Vec<i64>,
    pub image_tokens: usize,
}

pub struct DeepseekOcrModel {
    /// Decode steps: eager or captured graphs, with the KV caches kept across requests. Declared
    /// first, so dropped before the model, as DenseModel's (whose graphs hold collectives).
    decode: RefCell<DecodeSession>,
    pub model: DeepseekOcr,
    pub arch: ArchConfig,
    pub preprocess: PreprocessConfig,
    mode: ResolutionMode,
    tokenizer: Box<dyn TokenIds>,
    /// BOS, EOS, pad and `<image>` as the tokenizer numbers them.
    special: SpecialIds,
    info: ModelInfo,
    /// Limits on the page images this model decodes (`dataset.max_image_*`).
    image_limits: ImageLimits,
}

pub use crate::engine::graph_decode::step_path;

/// The switches of `spec`: `runtime.optim` and this family's `model.optim`.
pub fn switches(spec: &RunSpec) -> Result<super::Switches> {
    match spec.model.optim {
        llmprof::model::FamilyOptim::DeepseekOcr(own) => Ok(super::Switches {
            engine: spec.runtime.optim,
            own,
        }),
        _ => bail!("model.optim is not the deepseek_ocr family's (model.family=deepseek_ocr)"),
    }
}

/// The resolved preprocessing of `model.preprocess`.
pub fn preprocess_config(spec: &RunSpec) -> Result<PreprocessConfig> {
    let p = spec.model.preprocess.as_ref().context(
        "model.preprocess is missing: DeepSeek-OCR needs it (conf/model/deepseek_ocr.yaml)",
    )?;
    Ok(p.resolve())
}

impl DeepseekOcrModel {
    /// Builds the model `spec` describes on its device; without a GPU, the tiny CPU fallback.
    pub fn build(spec: &RunSpec) -> Result<Self> {
        let device = device::device_from_spec(spec)?;
        let mut notes = Vec::new();
        let Arch::DeepseekOcr(configured) = &spec.model.arch else {
            bail!("model.arch is not a DeepSeek-OCR architecture");
        };
        let mut arch = configured.clone();
        let mut name = spec.model.name.clone();
        let mut views = preprocess_config(spec)?;
        if device == Device::Cpu && spec.model.name != spec.model.cpu_fallback {
            let Some(tiny) = tiny_arch(&spec.model.cpu_fallback) else {
                bail!("model.cpu_fallback={} is not supported: only deepseek_ocr_tiny and deepseek_ocr2_tiny have built-in architectures\n  fix: model.cpu_fallback=deepseek_ocr2_tiny for DeepSeek-OCR-2, deepseek_ocr_tiny for DeepSeek-OCR", spec.model.cpu_fallback);
            };
            views = views.scaled(configured.sam.image_size as u32, tiny.sam.image_size as u32);
            let note = format!(
                "no CUDA GPU: running the CPU fallback model '{}' instead of '{}' on views scaled to it ({} px global, {} px tiles; timings are for the tiny architecture)",
                spec.model.cpu_fallback, spec.model.name, views.base_size, views.image_size
            );
            tracing::warn!("{note}");
            notes.push(note);
            arch = tiny;
            name = spec.model.cpu_fallback.clone();
        }
        let dtype = device::dtype_for(spec.model.dtype, device);
        let kind = device::kind(dtype);
        let started = std::time::Instant::now();
        let optim = switches(spec)?;
        let synthetic = spec.model.weights == WeightsSource::Synthetic;
        let weights = if synthetic {
            notes.push(llmprof::model::SYNTHETIC_NOTE.to_string());
            tracing::warn!("{}", llmprof::model::SYNTHETIC_NOTE);
            Weights::synthetic(&arch, &Part::ALL, spec.model.seed as i64, device, kind)?
        } else {
            let path = Path::new(&spec.model.path);
            if !path.exists() {
                bail!(
                    "model.weights=files but {} does not exist\n  fix: run models/bootstrap.sh to link a DeepSeek-OCR snapshot, set model.path=<folder>, or use model.weights=synthetic",
                    path.display()
                );
            }
            Weights::load(path, &arch, &Part::ALL, device, kind)?
        };
        let mut model = DeepseekOcr::load_with(weights, &arch, &optim)?;
        model.set_vision_batch(
            optim
                .own
                .batched_vision
                .then_some(optim.own.vision_max_views as usize),
        );
        if let Device::Cuda(i) = device {
            tch::Cuda::synchronize(i as i64);
        }
        let load_ms = started.elapsed().as_secs_f64() * 1e3;
        tracing::info!(load_ms, model = %name, ?device, %dtype, "model ready");
        let (tokenizer, special) = tokenizer_for(spec, &arch, &name, &mut notes)?;
        notes.extend(switch_notes(spec, device, dtype)?);
        let decode = DecodeSession::new(&model, step_path(spec))?;
        notes.extend(crate::engine::graph_decode::decode_notes(spec, &decode));
        Ok(DeepseekOcrModel {
            model,
            arch,
            preprocess: views,
            mode: spec
                .model
                .preprocess
                .as_ref()
                .map(|p| p.mode)
                .context("model.preprocess is missing")?,
            tokenizer,
            special,
            image_limits: ImageLimits::from_spec(&spec.dataset),
            info: ModelInfo {
                name,
                family: Family::DeepseekOcr,
                device: format!("{device:?}"),
                cuda_device: device::cuda_index(device),
                dtype,
                synthetic,
                notes,
                load_ms,
            },
            decode: RefCell::new(decode),
        })
    }
}

/// Notes (and the one impossible combination) of the switches on this device.
fn switch_notes(spec: &RunSpec, device: Device, dtype: Dtype) -> Result<Vec<String>> {
    let o = switches(spec)?;
    let mut notes = Vec::new();
    if o.own.grouped_moe && device != Device::Cpu && dtype != Dtype::Bf16 {
        if o.engine.cuda_graph && spec.runtime.batch_size as i64 > GATHER_MAX_TOKENS {
            bail!(
                "model.dtype=f32 on a GPU with runtime.optim.cuda_graph=true supports runtime.batch_size <= {GATHER_MAX_TOKENS}: torch._grouped_mm has CUDA kernels for bf16 only, and the per-expert loop that replaces it above that batch reads expert counts on the host, which a graph cannot capture\n  fix: model.dtype=bf16, runtime.batch_size<={GATHER_MAX_TOKENS}, or runtime.optim.cuda_graph=false"
            );
        }
        notes.push("model.optim.grouped_moe: torch._grouped_mm has CUDA kernels for bf16 only, so this fp32 run evaluates experts with gathered weights (<= 4 tokens) or the per-expert loop".to_string());
    }
    Ok(notes)
}

/// The real tokenizer when the model folder (or bootstrap's assembled one) has tokenizer.json and
/// the architecture is the real one; otherwise the byte fallback, with a note. With its special ids.
fn tokenizer_for(
    spec: &RunSpec,
    arch: &ArchConfig,
    model_name: &str,
    notes: &mut Vec<String>,
) -> Result<(Box<dyn TokenIds>, SpecialIds)> {
    if tiny_arch(model_name).is_some() {
        return Ok((Box::new(tiny_byte_tokenizer()), TINY_SPECIAL));
    }
    let model_dir = Path::new(&spec.model.path);
    match hf_tokenizer::locate(model_dir) {
        Some(path) => {
            let t = HfTokenizer::from_file(&path)?;
            let sp = hf_tokenizer::special_ids(&t)?;
            if sp.image != arch.tokens.image_token_id || sp.bos != arch.tokens.bos_token_id {
                bail!(
                    "{} does not match the architecture: <image>={} BOS={} but model.arch.tokens says {} and {}",
                    path.display(), sp.image, sp.bos, arch.tokens.image_token_id, arch.tokens.bos_token_id
                );
            }
            tracing::info!(path = %path.display(), "tokenizer");
            Ok((Box::new(t), sp))
        }
        None => {
            notes.push(format!(
                "no tokenizer.json under {} (run models/bootstrap.sh): the prompt text is encoded byte by byte (image-token counts are exact; text-token counts differ slightly from the real BPE)",
                model_dir.display()
            ));
            let special = SpecialIds {
                bos: arch.tokens.bos_token_id,
                eos: arch.tokens.eos_token_id,
                pad: arch.tokens.pad_token_id,
                image: arch.tokens.image_token_id,
            };
            Ok((Box::new(byte_fallback(special)), special))
        }
    }
}

impl Model for DeepseekOcrModel {
    type Request = OcrRequest;

    fn info(&self) -> &ModelInfo {
        &self.info
    }

    fn regions(&self) -> RegionTree {
        REGIONS
    }

    fn prepare(&self, item: &InputItem, prompt: &str) -> Result<OcrRequest> {
        if item.text.is_some() {
            bail!("{} reads page images, but {} is a text request: use an image dataset (dataset=samples, folder, omnidocbench), or a text model (model=qwen2_5_7b, llama3_1_8b, ...) for dataset=random_tokens and dataset=prompts", self.info.name, item.name);
        }
        let img = load_rgb_limited(&item.path, &self.image_limits)?;
        let mut image = preprocess(&img, &self.preprocess)
            .with_context(|| format!("preprocessing {}", item.path.display()))?;
        self.model
            .ready_pixels(&mut image)
            .with_context(|| format!("readying the pixels of {}", item.path.display()))?;
        let image_tokens =
            image_token_count(self.arch.token_layout(), &self.preprocess, image.grid);
        let prompt_ids = build_prompt_ids(
            self.tokenizer.as_ref(),
            self.special,
            prompt,
            &[image_tokens],
        )?;
        Ok(OcrRequest {
            item: item.clone(),
            image,
            prompt_ids,
            image_tokens,
        })
    }

    fn describe(&self, r: &OcrRequest) -> RequestInfo {
        RequestInfo {
            name: r.item.name.clone(),
            path: r.item.path.display().to_string(),
            bytes: r.item.bytes,
            prompt_tokens: r.prompt_ids.len(),
            image: Some(ImageInfo {
                width: r.image.original_size.0,
                height: r.image.original_size.1,
                mode: self.mode.name().to_string(),
                crop_grid: [r.image.grid.cols, r.image.grid.rows],
                image_tokens: r.image_tokens,
            }),
            output_len: None,
        }
    }

    fn ngram_exempt_ids(&self) -> &[i64] {
        &self.arch.tokens.ngram_exempt_token_ids
    }

    fn generate(
        &self,
        batch: &[&OcrRequest],
        cfg: &GenerateConfig,
        obs: &dyn RegionObserver,
    ) -> Result<GenerateOutput> {
        let rows: Vec<PromptRow> = batch
            .iter()
            .map(|r| PromptRow {
                ids: &r.prompt_ids,
                image: Some(&r.image),
            })
            .collect();
        generate_with(&mut self.decode.borrow_mut(), &self.model, &rows, cfg, obs)
    }

    fn work(&self, batch: &[&OcrRequest], decode_steps: usize) -> BatchWork {
        let rows = batch.len();
        let vision: f64 = batch
            .iter()
            .map(|r| analytic::encoder_flops(&self.arch, &self.preprocess, r.image.grid).total())
            .sum();
        let prompt = batch.iter().map(|r| r.prompt_ids.len()).max().unwrap_or(0);
        let prefill =
            vision + rows as f64 * analytic::prefill_flops(&self.arch, prompt as i64, 1).total();
        let context = |s: usize| (prompt + s + 1) as i64;
        BatchWork {
            region_flops: [("vision".into(), vision), ("prefill".into(), prefill)].into(),
            step_flops: (0..decode_steps)
                .map(|s| rows as f64 * analytic::decode_step_flops(&self.arch, context(s)).total())
                .collect(),
            step_bytes: (0..decode_steps)
                .map(|s| {
                    analytic_bytes::decode_step_bytes(
                        &self.arch,
                        context(s),
                        rows as i64,
                        self.info.dtype.bytes(),
                    )
                    .total()
                })
                .collect(),
        }
    }

    fn decode_step_modules(
        &self,
        batch: &[&OcrRequest],
        decode_steps: usize,
    ) -> Vec<llmprof::model::module_work::ModuleWork> {
        let prompt = batch.iter().map(|r| r.prompt_ids.len()).max().unwrap_or(0);
        let context = (prompt + decode_steps.saturating_sub(1) / 2 + 1) as i64;
        let rows = batch.len() as i64;
        let shared_as_experts = self
            .model
            .decoder()
            .is_ok_and(|d| d.shared_experts_as_slots(rows));
        llmprof::model::deepseek_ocr::analytic_modules::decode_step_work(
            &self.arch,
            context,
            rows,
            self.info.dtype.bytes(),
            shared_as_experts,
        )
    }

    fn static_analysis(
        &self,
        r: &OcrRequest,
        batch: usize,
        max_new_tokens: usize,
    ) -> Result<StaticAnalysis> {
        let prompt_len = r.prompt_ids.len() as i64;
        let inputs = StaticInputs {
            preprocess: self.preprocess.clone(),
            grid: r.image.grid,
            prompt_len,
            logits_positions: 1,
            decode_context_len: prompt_len + max_new_tokens as i64,
            batch: batch as i64,
            dtype_bytes: self.info.dtype.bytes(),
        };
        let report = static_report(&self.arch, &inputs)?;
        Ok(StaticAnalysis {
            json: serde_json::to_value(&report)?,
            markdown: render_markdown(&report),
        })
    }

    fn graph_stats(&self) -> Option<GraphStats> {
        let vision = self.model.vision_graph_stats();
        let mut stats = self
            .decode
            .borrow()
            .run_graph_stats(self.model.prefill_graph_stats(), vision.is_some())?;
        if let Some(v) = vision {
            stats.vision_graphs_captured = v.captured;
            stats.vision_capture_ms_total = v.capture_ms_total;
            stats.vision_replays = v.replays;
        }
        Some(stats)
    }

    fn assumptions(&self) -> Vec<String> {
        vec![
            "Analytic counts follow docs/deepseek-ocr.md §7 and are computed from the run's architecture, crop grids, prompt lengths and the context length of every decode step.".into(),
            "Prefill computes logits for the last prompt position only (lm_head counted once per row).".into(),
            "Decode bytes per step = non-expert weights + the expected number of distinct routed experts for the batch (E·(1−((E−k)/E)^B), uniform routing) + KV cache read and written; activations are not counted.".into(),
        ]
    }

    fn decode_text(&self, tokens: &[i64]) -> String {
        self.tokenizer.decode_lossy(tokens)
    }

    fn read_page(
        &self,
        text: &str,
        width: u32,
        height: u32,
        image_link: &dyn Fn(usize) -> String,
    ) -> Option<PageReading> {
        Some(read_page(text, width, height, image_link))
    }
}
