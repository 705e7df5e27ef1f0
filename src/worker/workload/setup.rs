//! From the typed spec to a ready workload: device and dtype (CPU fallback to the tiny model,
//! announced), the model (synthetic or safetensors), the tokenizer and the preprocessing
//! parameters. No timing here.
use crate::models::deepseek_ocr::graph_decode::{DecodeSession, StepPath};
use crate::models::deepseek_ocr::hf_tokenizer::HfTokenizer;
use crate::models::deepseek_ocr::optim::ModelOptim;
use crate::models::deepseek_ocr::preprocess::{Mode, PreprocessConfig};
use crate::models::deepseek_ocr::tokenizer::{ByteTokenizer, SpecialIds, TokenIds};
use crate::models::deepseek_ocr::{ArchConfig, DeepseekOcr, Part, Weights};
use anyhow::{bail, Context, Result};
use llmprof::spec::{DtypeChoice, ResolutionMode, RunSpec, WeightsSource};
use tch::{Device, Kind};

pub struct Workload {
    pub model: DeepseekOcr,
    pub arch: ArchConfig,
    /// The model option actually run (the CPU fallback may replace the configured one).
    pub model_name: String,
    pub device: Device,
    pub kind: Kind,
    pub preprocess: PreprocessConfig,
    pub tokenizer: Box<dyn TokenIds>,
    pub synthetic: bool,
    pub notes: Vec<String>,
    pub load_ms: f64,
    /// Decode steps: eager or captured graphs, with the KV caches kept across requests.
    pub decode: std::cell::RefCell<DecodeSession>,
}

/// The decoder implementation choices of `runtime.optim`.
pub fn model_optim(spec: &RunSpec) -> ModelOptim {
    let o = &spec.runtime.optim;
    ModelOptim {
        fused_projections: o.fused_projections,
        grouped_moe: o.grouped_moe,
        sdpa: o.sdpa,
        static_kv_cache: o.static_kv_cache,
        fused_rms_norm: o.fused_rms_norm,
    }
}

/// The decode step path of `runtime.optim`.
pub fn step_path(spec: &RunSpec) -> StepPath {
    let o = &spec.runtime.optim;
    if o.cuda_graph {
        StepPath::Graph {
            kv_bucket: o.graph_kv_bucket as i64,
        }
    } else {
        StepPath::Eager
    }
}

pub fn device_from_spec(spec: &RunSpec) -> Result<Device> {
    let cuda = tch::Cuda::is_available();
    Ok(match spec.device.as_str() {
        "auto" => {
            if cuda {
                Device::Cuda(0)
            } else {
                Device::Cpu
            }
        }
        "cpu" => Device::Cpu,
        d => {
            let idx: usize = d
                .strip_prefix("cuda:")
                .map(|n| n.parse())
                .transpose()?
                .unwrap_or(0);
            if !cuda {
                bail!("device={d} was requested but no CUDA GPU is visible to libtorch\n  fix: run on a GPU machine, or use device=auto / device=cpu (CPU runs use the tiny model)");
            }
            let n = tch::Cuda::device_count() as usize;
            if idx >= n {
                bail!(
                    "device={d}: only {n} CUDA device(s) are visible (valid: cuda:0..cuda:{})",
                    n.saturating_sub(1)
                );
            }
            Device::Cuda(idx)
        }
    })
}

pub fn preprocess_config(spec: &RunSpec) -> PreprocessConfig {
    let p = &spec.model.preprocess;
    let mode = match p.mode {
        ResolutionMode::Tiny => Mode::Tiny,
        ResolutionMode::Small => Mode::Small,
        ResolutionMode::Base => Mode::Base,
        ResolutionMode::Large => Mode::Large,
        ResolutionMode::Gundam => Mode::Gundam,
    };
    let mut cfg = PreprocessConfig::from_mode(mode);
    if let Some(b) = p.base_size {
        cfg.base_size = b;
    }
    if let Some(s) = p.image_size {
        cfg.image_size = s;
    }
    if let Some(c) = p.crop_mode {
        cfg.crop_mode = c;
    }
    cfg.min_crops = p.min_crops;
    cfg.max_crops = p.max_crops;
    cfg
}

/// A byte-level tokenizer using the architecture's special ids: used when no tokenizer.json is
/// available (prompt token counts then differ slightly from the real BPE; reported as a note).
fn fallback_tokenizer(arch: &ArchConfig) -> ByteTokenizer {
    ByteTokenizer::with_special(SpecialIds {
        bos: arch.tokens.bos_token_id,
        eos: arch.tokens.eos_token_id,
        pad: arch.tokens.pad_token_id,
        image: arch.tokens.image_token_id,
    })
}

pub fn build(spec: &RunSpec) -> Result<Workload> {
    let device = device_from_spec(spec)?;
    let mut notes = Vec::new();
    let mut arch: ArchConfig = serde_json::from_value(spec.model.arch.clone())
        .context("model.arch does not match the DeepSeek-OCR architecture schema")?;
    let mut model_name = spec.model.name.clone();
    if device == Device::Cpu && spec.model.name != spec.model.cpu_fallback {
        let note = format!(
            "no CUDA GPU: running the CPU fallback model '{}' instead of '{}' (timings are for the tiny architecture)",
            spec.model.cpu_fallback, spec.model.name
        );
        tracing::warn!("{note}");
        notes.push(note);
        if spec.model.cpu_fallback != "deepseek_ocr_tiny" {
            bail!("model.cpu_fallback={} is not supported: only deepseek_ocr_tiny has a built-in architecture", spec.model.cpu_fallback);
        }
        arch = ArchConfig::tiny();
        model_name = spec.model.cpu_fallback.clone();
    }
    arch.validate()?;
    let kind = match (spec.model.dtype, device) {
        (DtypeChoice::Auto, Device::Cpu) | (DtypeChoice::F32, _) => Kind::Float,
        (DtypeChoice::Auto, _) | (DtypeChoice::Bf16, _) => Kind::BFloat16,
    };
    let started = std::time::Instant::now();
    let optim = model_optim(spec);
    let (model, synthetic) = match spec.model.weights {
        WeightsSource::Synthetic => {
            notes.push(llmprof::report::SYNTHETIC_NOTE.to_string());
            tracing::warn!("{}", llmprof::report::SYNTHETIC_NOTE);
            (
                DeepseekOcr::load_with(
                    Weights::synthetic(&arch, &Part::ALL, spec.model.seed as i64, device, kind)?,
                    &arch,
                    &optim,
                )?,
                true,
            )
        }
        WeightsSource::Files => {
            let path = &super::inputs::base_dir(&spec.model.path).join(&spec.model.path);
            if !path.exists() {
                bail!(
                    "model.weights=files but {} does not exist\n  fix: run models/bootstrap.sh to link a DeepSeek-OCR snapshot, set model.path=<folder>, or use model.weights=synthetic",
                    path.display()
                );
            }
            (
                DeepseekOcr::load_with(
                    Weights::load(path, &arch, &Part::ALL, device, kind)?,
                    &arch,
                    &optim,
                )?,
                false,
            )
        }
    };
    if device != Device::Cpu {
        tch::Cuda::synchronize(device_index(device));
    }
    let load_ms = started.elapsed().as_secs_f64() * 1e3;
    tracing::info!(load_ms, model = %model_name, ?device, ?kind, "model ready");
    let tokenizer = tokenizer_for(spec, &arch, &model_name, &mut notes)?;
    let o = &spec.runtime.optim;
    if o.grouped_moe && device != Device::Cpu && kind != Kind::BFloat16 {
        if o.cuda_graph
            && spec.runtime.batch_size as i64 > crate::models::deepseek_ocr::moe::GATHER_MAX_TOKENS
        {
            bail!(
                "model.dtype=f32 on a GPU with runtime.optim.cuda_graph=true supports runtime.batch_size <= {}: torch._grouped_mm has CUDA kernels for bf16 only, and the per-expert loop that replaces it above that batch reads expert counts on the host, which a graph cannot capture\n  fix: model.dtype=bf16, runtime.batch_size<={}, or runtime.optim.cuda_graph=false",
                crate::models::deepseek_ocr::moe::GATHER_MAX_TOKENS,
                crate::models::deepseek_ocr::moe::GATHER_MAX_TOKENS
            );
        }
        notes.push("runtime.optim.grouped_moe: torch._grouped_mm has CUDA kernels for bf16 only, so this fp32 run evaluates experts with gathered weights (<= 4 tokens) or the per-expert loop".to_string());
    }
    let decode = DecodeSession::new(&model, step_path(spec))?;
    if spec.runtime.optim.cuda_graph && !decode.captures_graphs() {
        notes.push("runtime.optim.cuda_graph=true without a GPU: the fixed-shape decode step runs eagerly (no graph capture)".to_string());
    }
    if spec.runtime.optim.sync_free_decode && spec.infer.no_repeat_ngram_size > 0 {
        notes.push(format!(
            "runtime.optim.sync_free_decode has no effect while infer.no_repeat_ngram_size={} (n-gram blocking reads every token on the host); set it to 0 for sync-free decode",
            spec.infer.no_repeat_ngram_size
        ));
    }
    Ok(Workload {
        model,
        arch,
        model_name,
        device,
        kind,
        preprocess: preprocess_config(spec),
        tokenizer,
        synthetic,
        notes,
        load_ms,
        decode: std::cell::RefCell::new(decode),
    })
}

/// The real tokenizer when the model folder (or bootstrap's assembled one) has tokenizer.json and
/// the architecture is the real one; otherwise the byte fallback, with a note.
fn tokenizer_for(
    spec: &RunSpec,
    arch: &ArchConfig,
    model_name: &str,
    notes: &mut Vec<String>,
) -> Result<Box<dyn TokenIds>> {
    if model_name == "deepseek_ocr_tiny" {
        return Ok(Box::new(ByteTokenizer::tiny()));
    }
    let model_dir = super::inputs::base_dir(&spec.model.path).join(&spec.model.path);
    match HfTokenizer::locate(&model_dir) {
        Some(path) => {
            let t = HfTokenizer::from_file(&path)?;
            let sp = t.special();
            if sp.image != arch.tokens.image_token_id || sp.bos != arch.tokens.bos_token_id {
                anyhow::bail!(
                    "{} does not match the architecture: <image>={} BOS={} but model.arch.tokens says {} and {}",
                    path.display(), sp.image, sp.bos, arch.tokens.image_token_id, arch.tokens.bos_token_id
                );
            }
            tracing::info!(path = %path.display(), "tokenizer");
            Ok(Box::new(t))
        }
        None => {
            notes.push(format!(
                "no tokenizer.json under {} (run models/bootstrap.sh): the prompt text is encoded byte by byte (image-token counts are exact; text-token counts differ slightly from the real BPE)",
                model_dir.display()
            ));
            Ok(Box::new(fallback_tokenizer(arch)))
        }
    }
}

pub fn device_index(d: Device) -> i64 {
    match d {
        Device::Cuda(i) => i as i64,
        _ => 0,
    }
}
