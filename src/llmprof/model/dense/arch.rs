//! Architecture of a dense decoder LLM (Qwen2, Qwen3, Llama 3, ...) as the HF `config.json` states
//! it: GQA attention with RoPE (optionally Llama 3's `rope_scaling`), optional q/k/v bias, optional
//! per-head RMSNorm of q and k (Qwen3), RMSNorm,
//! SwiGLU MLP, tied or untied embeddings. YAML (`conf/model/dense_decoder/arch/*.yaml`) uses the
//! config.json key names, so a checkpoint's config.json can be read directly.
use anyhow::{bail, ensure, Context, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Llama 3's RoPE frequency scaling (`rope_scaling` with `rope_type: llama3`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RopeScaling {
    /// Only `llama3` is implemented.
    pub rope_type: String,
    pub factor: f64,
    pub low_freq_factor: f64,
    pub high_freq_factor: f64,
    pub original_max_position_embeddings: i64,
}

/// The fields a checkpoint's config.json must agree on with the chosen preset (they decide the
/// tensor shapes and the vocabulary): `model::checkpoint_config` compares them.
pub const CHECKPOINT_FIELDS: &[&str] = &[
    "vocab_size",
    "hidden_size",
    "intermediate_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "attention_bias",
    "qk_norm",
    "tie_word_embeddings",
    "moe",
    "mla",
];

/// Every dimension the dense decoder needs (HF config.json names).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DenseArch {
    pub vocab_size: i64,
    pub hidden_size: i64,
    /// SwiGLU width.
    pub intermediate_size: i64,
    pub num_hidden_layers: i64,
    pub num_attention_heads: i64,
    /// GQA: query heads share K/V in groups of num_attention_heads / num_key_value_heads.
    pub num_key_value_heads: i64,
    /// hidden_size / num_attention_heads unless config.json says otherwise.
    pub head_dim: i64,
    pub rms_norm_eps: f64,
    pub rope_theta: f64,
    pub rope_scaling: Option<RopeScaling>,
    pub max_position_embeddings: i64,
    /// Bias on q/k/v projections (Qwen2: true; o_proj never has one).
    pub attention_bias: bool,
    /// An RMSNorm over each head of q and of k before RoPE (`q_norm`, `k_norm`: Qwen3).
    #[serde(default)]
    pub qk_norm: bool,
    /// Sliding-window attention: a token of a sliding layer sees at most this many keys
    /// (itself included; Mistral's `sliding_window`, Qwen2/3's with `use_sliding_window`,
    /// Gemma 3's local layers). Which layers slide: [`DenseArch::sliding_layers`].
    #[serde(default)]
    pub sliding_window: Option<i64>,
    /// The first layer that slides when there is a window and no Gemma structure (Qwen2/3's
    /// `max_window_layers`; 0: every layer).
    #[serde(default)]
    pub first_sliding_layer: i64,
    /// A mixture of experts in place of the MLP (Mixtral, Qwen3-MoE); `intermediate_size` is
    /// then the width of the layers that keep a dense MLP.
    #[serde(default)]
    pub moe: Option<super::DenseMoe>,
    /// q/k/v stored as one `qkv_proj` and gate/up as one `gate_up_proj` (Phi-3).
    #[serde(default)]
    pub packed_projections: bool,
    /// The gated MLP's activation (GELU-tanh for Gemma).
    #[serde(default)]
    pub mlp_activation: super::gemma::MlpActivation,
    /// Gemma 3's structure: embeddings × √hidden, RMSNorm weights as offsets from 1, norms on
    /// the attention and MLP outputs, local layers with their own RoPE base.
    #[serde(default)]
    pub sandwich: Option<super::gemma::Sandwich>,
    /// Multi-head latent attention in place of GQA (DeepSeek-V2/V3); `head_dim` is then its
    /// RoPE dims (as transformers' config sets it).
    #[serde(default)]
    pub mla: Option<super::mla::Mla>,
    /// lm_head shares the embedding matrix (no `lm_head.weight` in the checkpoint).
    pub tie_word_embeddings: bool,
    pub bos_token_id: i64,
    /// The id that ends generation (the first one where config.json lists several).
    pub eos_token_id: i64,
}

impl DenseArch {
    pub fn validate(&self) -> Result<()> {
        for (k, v) in [
            ("vocab_size", self.vocab_size),
            ("hidden_size", self.hidden_size),
            ("intermediate_size", self.intermediate_size),
            ("num_hidden_layers", self.num_hidden_layers),
            ("num_attention_heads", self.num_attention_heads),
            ("num_key_value_heads", self.num_key_value_heads),
            ("head_dim", self.head_dim),
            ("max_position_embeddings", self.max_position_embeddings),
        ] {
            ensure!(v > 0, "{k}={v} must be > 0");
        }
        ensure!(
            self.num_attention_heads % self.num_key_value_heads == 0,
            "num_attention_heads={} is not a multiple of num_key_value_heads={}",
            self.num_attention_heads,
            self.num_key_value_heads
        );
        ensure!(
            self.head_dim % 2 == 0,
            "head_dim={} must be even (RoPE)",
            self.head_dim
        );
        for (k, id) in [
            ("bos_token_id", self.bos_token_id),
            ("eos_token_id", self.eos_token_id),
        ] {
            ensure!(
                (0..self.vocab_size).contains(&id),
                "{k}={id} is outside the vocabulary [0, {})",
                self.vocab_size
            );
        }
        if let Some(m) = &self.moe {
            m.validate()?;
        }
        if let Some(m) = &self.mla {
            m.validate()?;
            ensure!(
                m.qk_rope_head_dim == self.head_dim,
                "with MLA head_dim={} must be its qk_rope_head_dim={}",
                self.head_dim,
                m.qk_rope_head_dim
            );
            ensure!(
                !self.attention_bias,
                "attention_bias=true with multi-head latent attention (biases on q_a_proj, kv_a_proj_with_mqa and o_proj) is not implemented"
            );
            ensure!(
                self.num_key_value_heads == self.num_attention_heads,
                "MLA has no K/V head groups: num_key_value_heads={} must equal num_attention_heads={}",
                self.num_key_value_heads,
                self.num_attention_heads
            );
        }
        if let Some(w) = self.sliding_window {
            ensure!(w > 0, "sliding_window={w} must be > 0");
        }
        if let Some(s) = &self.rope_scaling {
            ensure!(
                s.rope_type == "llama3",
                "rope_scaling.rope_type={} is not implemented (only llama3)",
                s.rope_type
            );
            ensure!(
                s.factor > 0.0 && s.high_freq_factor > s.low_freq_factor && s.low_freq_factor > 0.0,
                "rope_scaling needs factor > 0 and high_freq_factor > low_freq_factor > 0"
            );
            ensure!(
                s.original_max_position_embeddings > 0,
                "rope_scaling.original_max_position_embeddings must be > 0"
            );
        }
        Ok(())
    }

    /// Query heads per K/V head.
    pub fn group_size(&self) -> i64 {
        self.num_attention_heads / self.num_key_value_heads
    }

    /// The tiny CPU fallback of this architecture: the same structure (GQA ratio, q/k/v bias,
    /// tied head, RoPE scaling, token ids below 512) at dimensions a CPU runs in milliseconds.
    pub fn tiny(&self) -> DenseArch {
        let kv = if self.mla.is_some() { 4 } else { 2 };
        let heads = kv * self.group_size().min(4);
        let mla = self.mla.as_ref().map(super::mla::Mla::tiny);
        DenseArch {
            vocab_size: 512,
            hidden_size: heads * 16,
            intermediate_size: heads * 16 * 3,
            num_hidden_layers: 2,
            num_attention_heads: heads,
            num_key_value_heads: kv,
            head_dim: mla.as_ref().map_or(16, |m| m.qk_rope_head_dim),
            rms_norm_eps: self.rms_norm_eps,
            rope_theta: self.rope_theta,
            rope_scaling: self.rope_scaling.clone().map(|s| RopeScaling {
                original_max_position_embeddings: 64,
                ..s
            }),
            max_position_embeddings: 4096,
            attention_bias: self.attention_bias,
            qk_norm: self.qk_norm,
            sliding_window: self.sliding_window,
            first_sliding_layer: self.first_sliding_layer.min(2),
            moe: self.moe.as_ref().map(super::DenseMoe::tiny),
            packed_projections: self.packed_projections,
            mlp_activation: self.mlp_activation,
            sandwich: self.sandwich.clone().map(|s| super::gemma::Sandwich {
                local_layers: s.local_layers.into_iter().filter(|&i| i < 2).collect(),
                ..s
            }),
            mla,
            tie_word_embeddings: self.tie_word_embeddings,
            bos_token_id: 1,
            eos_token_id: 2,
        }
    }

    /// Reads an HF `config.json` (model_type qwen2, qwen3 or llama).
    pub fn from_hf_config_json(path: &Path) -> Result<Self> {
        let v = crate::model::config_json::read(path)?;
        Self::from_hf_config(&v).with_context(|| format!("reading {}", path.display()))
    }

    /// [`DenseArch::from_hf_config_json`] from the parsed JSON.
    pub fn from_hf_config(v: &serde_json::Value) -> Result<Self> {
        let int = |k: &str| -> Result<i64> {
            v.get(k)
                .and_then(|x| x.as_i64())
                .with_context(|| format!("config.json has no integer `{k}`"))
        };
        let float = |k: &str, d: f64| v.get(k).and_then(|x| x.as_f64()).unwrap_or(d);
        let model_type = v.get("model_type").and_then(|x| x.as_str()).unwrap_or("");
        if !super::HF_MODEL_TYPES.contains(&model_type) {
            bail!(
                "model_type `{model_type}` is not a dense decoder llmprof implements ({})",
                super::HF_MODEL_TYPES.join(", ")
            );
        }
        let heads = int("num_attention_heads")?;
        let window = super::window::from_hf_config(v, model_type, int("num_hidden_layers")?);
        let hidden = int("hidden_size")?;
        let first_id = |k: &str| -> Result<i64> {
            match v.get(k) {
                Some(serde_json::Value::Array(a)) => a.first().and_then(|x| x.as_i64()),
                Some(x) => x.as_i64(),
                None => None,
            }
            .with_context(|| format!("config.json has no `{k}`"))
        };
        // transformers < 5 writes `rope_theta` at the top and Llama 3's scaling as `rope_scaling`;
        // transformers 5 writes `rope_parameters` (also under the `rope_scaling` name) holding
        // `rope_type`, `rope_theta` and the scaling fields. Both are read.
        // Per layer type (Gemma 3 in transformers 5): the global layers' parameters.
        let rope = [v.get("rope_parameters"), v.get("rope_scaling")]
            .into_iter()
            .flatten()
            .find(|x| x.is_object())
            .map(|r| r.get("full_attention").unwrap_or(r));
        // RoPE on part of each head (partial_rotary_factor < 1) is not implemented.
        let partial = [Some(v), rope]
            .into_iter()
            .flatten()
            .find_map(|x| x.get("partial_rotary_factor").and_then(|f| f.as_f64()));
        if let Some(p) = partial.filter(|p| *p != 1.0) {
            bail!("partial_rotary_factor={p}: RoPE on part of each head is not implemented (only 1.0)");
        }
        let rope_theta = v
            .get("rope_theta")
            .and_then(|x| x.as_f64())
            .or_else(|| {
                rope.and_then(|r| r.get("rope_theta"))
                    .and_then(|x| x.as_f64())
            })
            .unwrap_or(10000.0);
        // Gemma 3's global scaling is its own (gemma::from_hf_config), DeepSeek's YaRN MLA's.
        let deepseek = matches!(model_type, "deepseek_v2" | "deepseek_v3");
        let rope_scaling = match rope.filter(|_| model_type != "gemma3_text" && !deepseek) {
            Some(r)
                if r.get("rope_type")
                    .or_else(|| r.get("type"))
                    .and_then(|t| t.as_str())
                    .unwrap_or("default")
                    != "default" =>
            {
                let kind = r
                    .get("rope_type")
                    .or_else(|| r.get("type"))
                    .and_then(|t| t.as_str())
                    .unwrap_or("");
                if kind != "llama3" {
                    bail!("rope_scaling.rope_type={kind} is not implemented (only llama3)");
                }
                let mut fields = r.as_object().cloned().unwrap_or_default();
                fields.remove("rope_theta");
                fields.remove("type");
                fields.insert("rope_type".into(), kind.into());
                fields.remove("partial_rotary_factor");
                Some(
                    serde_json::from_value::<RopeScaling>(serde_json::Value::Object(fields))
                        .context("rope_scaling")?,
                )
            }
            _ => None,
        };
        let arch = DenseArch {
            vocab_size: int("vocab_size")?,
            hidden_size: hidden,
            intermediate_size: int("intermediate_size")?,
            num_hidden_layers: int("num_hidden_layers")?,
            num_attention_heads: heads,
            num_key_value_heads: v
                .get("num_key_value_heads")
                .and_then(|x| x.as_i64())
                .unwrap_or(heads),
            head_dim: match deepseek {
                true => int("qk_rope_head_dim")?,
                false => v
                    .get("head_dim")
                    .and_then(|x| x.as_i64())
                    .unwrap_or(hidden / heads),
            },
            rms_norm_eps: float("rms_norm_eps", 1e-6),
            rope_theta,
            rope_scaling,
            max_position_embeddings: int("max_position_embeddings")?,
            attention_bias: v
                .get("attention_bias")
                .and_then(|x| x.as_bool())
                .unwrap_or(model_type == "qwen2"),
            qk_norm: matches!(model_type, "qwen3" | "qwen3_moe" | "gemma3_text"),
            sliding_window: window.map(|w| w.0),
            first_sliding_layer: window.map_or(0, |w| w.1),
            moe: super::DenseMoe::from_hf_config(v, model_type),
            packed_projections: model_type == "phi3",
            mlp_activation: match model_type {
                "gemma3_text" => super::gemma::MlpActivation::GeluTanh,
                _ => super::gemma::MlpActivation::Silu,
            },
            sandwich: match model_type {
                "gemma3_text" => Some(super::gemma::from_hf_config(
                    v,
                    int("num_hidden_layers")?,
                    v.get("head_dim")
                        .and_then(|x| x.as_i64())
                        .unwrap_or(hidden / heads),
                )?),
                _ => None,
            },
            mla: deepseek
                .then(|| super::mla::Mla::from_hf_config(v, model_type))
                .transpose()?,
            tie_word_embeddings: v
                .get("tie_word_embeddings")
                .and_then(|x| x.as_bool())
                .unwrap_or(false),
            bos_token_id: first_id("bos_token_id")?,
            eos_token_id: first_id("eos_token_id")?,
        };
        arch.validate()?;
        Ok(arch)
    }
}

/// Sliding-window attention (model/dense/window.rs reads it from config.json).
impl DenseArch {
    /// Whether layer `layer`'s attention slides over the last `sliding_window` keys.
    pub fn slides(&self, layer: i64) -> bool {
        match (&self.sliding_window, &self.sandwich) {
            (None, _) => false,
            (Some(_), Some(s)) => s.local_layers.contains(&layer),
            (Some(_), None) => (self.first_sliding_layer..self.num_hidden_layers).contains(&layer),
        }
    }

    /// The layers that slide ([`DenseArch::slides`]).
    pub fn sliding_layers(&self) -> Vec<i64> {
        (0..self.num_hidden_layers)
            .filter(|&l| self.slides(l))
            .collect()
    }

    /// Keys a query at context length `context` (itself included) attends to in `layer`.
    pub fn keys_seen(&self, layer: i64, context: f64) -> f64 {
        match self.sliding_window {
            Some(w) if self.slides(layer) => context.min(w as f64),
            _ => context,
        }
    }

    /// Σ over all layers of the keys a decode step's query sees at `context`.
    pub fn keys_seen_all_layers(&self, context: f64) -> f64 {
        (0..self.num_hidden_layers)
            .map(|l| self.keys_seen(l, context))
            .sum()
    }

    /// Σ over all layers and the `s` tokens of a fresh prefill of the keys each sees
    /// (s(s+1)/2 per full layer; per sliding layer W(W+1)/2 + (s − W)·W once s passes W).
    pub fn prefill_keys_all_layers(&self, s: f64) -> f64 {
        let full = s * (s + 1.0) / 2.0;
        (0..self.num_hidden_layers)
            .map(|l| match self.sliding_window {
                Some(w) if self.slides(l) => super::window::prefill_keys_sliding(s, w as f64),
                _ => full,
            })
            .sum()
    }
}
