//! What Gemma 3's text decoder (`model_type: gemma3_text`) adds to the family's structure, read
//! from config.json: GELU(tanh)-gated MLPs, embeddings × √hidden, RMSNorm weights stored as an
//! offset from 1, norms on the attention and MLP outputs too ("sandwich"), and interleaved local
//! layers (sliding window, their own RoPE base) among the global ones, and the query scale
//! 1/√query_pre_attn_scalar (27B: 168, not its head_dim 128). What is not implemented is refused
//! by name: logit soft-capping, RoPE scaling of the global layers other than linear (the 4B to
//! 27B models' ×8).
use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

/// The gated MLP's activation on the gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MlpActivation {
    /// SiLU (SwiGLU: Llama, Qwen, Mistral, ...).
    #[default]
    Silu,
    /// GELU with the tanh approximation (GeGLU: Gemma's `gelu_pytorch_tanh`).
    GeluTanh,
}

/// Gemma 3's layer structure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sandwich {
    /// The RoPE base of the local (sliding-window) layers (`rope_local_base_freq`).
    pub local_rope_theta: f64,
    /// The layers with local attention (the others are global).
    pub local_layers: Vec<i64>,
    /// The global layers' linear RoPE scaling: positions ÷ this (Gemma 3 4B to 27B: 8).
    #[serde(default)]
    pub global_rope_factor: Option<f64>,
    /// Scores scale by 1/√this instead of 1/√head_dim (`query_pre_attn_scalar`; None: equal
    /// to head_dim, Gemma 3 1B to 12B).
    #[serde(default)]
    pub query_pre_attn_scalar: Option<f64>,
}

impl Sandwich {
    /// The factor on each query that turns 1/√head_dim into 1/√query_pre_attn_scalar.
    pub fn query_factor(&self, head_dim: i64) -> f64 {
        self.query_pre_attn_scalar
            .map_or(1.0, |s| (head_dim as f64 / s).sqrt())
    }
}

/// Gemma 3's extras from config.json `v`.
pub fn from_hf_config(v: &serde_json::Value, layers: i64, head_dim: i64) -> Result<Sandwich> {
    for key in ["attn_logit_softcapping", "final_logit_softcapping"] {
        if let Some(c) = v.get(key).filter(|c| !c.is_null()) {
            bail!("{key}={c}: logit soft-capping is not implemented");
        }
    }
    let query_pre_attn_scalar = v
        .get("query_pre_attn_scalar")
        .and_then(|s| s.as_f64())
        .filter(|&s| s != head_dim as f64);
    if let Some(s) = query_pre_attn_scalar.filter(|&s| s <= 0.0) {
        bail!("query_pre_attn_scalar={s} must be > 0");
    }
    let per_type = v
        .get("rope_parameters")
        .filter(|p| p.get("full_attention").is_some());
    // transformers 5: rope_parameters per layer type; released configs: rope_local_base_freq
    // and rope_scaling.
    let global = match per_type {
        Some(p) => Some(&p["full_attention"]),
        None => v.get("rope_scaling").filter(|s| !s.is_null()),
    };
    let global_rope_factor = match global
        .and_then(|g| g.get("rope_type"))
        .and_then(|t| t.as_str())
        .unwrap_or("default")
    {
        "default" => None,
        "linear" => Some(
            global
                .and_then(|g| g.get("factor"))
                .and_then(|f| f.as_f64())
                .filter(|f| *f > 0.0)
                .ok_or_else(|| anyhow::anyhow!("linear RoPE scaling needs a factor > 0"))?,
        ),
        other => bail!("RoPE scaling {other} of the global layers is not implemented (linear is)"),
    };
    let local_rope_theta = per_type
        .and_then(|p| p["sliding_attention"].get("rope_theta"))
        .or_else(|| v.get("rope_local_base_freq"))
        .and_then(|t| t.as_f64())
        .unwrap_or(10_000.0);
    let local_layers = match v.get("layer_types").and_then(|t| t.as_array()) {
        Some(types) => types
            .iter()
            .enumerate()
            .filter(|(_, t)| t.as_str() == Some("sliding_attention"))
            .map(|(i, _)| i as i64)
            .collect(),
        None => {
            let pattern = v
                .get("sliding_window_pattern")
                .and_then(|p| p.as_i64())
                .unwrap_or(6);
            (0..layers).filter(|i| (i + 1) % pattern != 0).collect()
        }
    };
    Ok(Sandwich {
        local_rope_theta,
        local_layers,
        global_rope_factor,
        query_pre_attn_scalar,
    })
}
