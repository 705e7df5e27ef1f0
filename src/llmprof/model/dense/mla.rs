//! Multi-head latent attention (DeepSeek-V2/V3) as config.json states it, and its analytic work.
//!
//! Per token, q comes from x directly (`q_proj`) or through a low-rank bottleneck (`q_a_proj`,
//! RMSNorm, `q_b_proj`); one shared latent of `kv_lora_rank` (RMSNorm'd) plus one RoPE key of
//! `qk_rope_head_dim` come from `kv_a_proj_with_mqa`, and the cache holds only those two
//! (the compressed KV cache). `kv_b_proj` expands the latent into each head's non-RoPE key and
//! its value. llmprof runs the absorbed form (DeepSeek's own decode, vLLM's and SGLang's): the
//! key expansion is folded into the query (q_nope · W_UK per head), attention runs over the
//! latents themselves (one shared K/V head of kv_lora_rank + rope dims), and the value
//! expansion W_UV is applied to each head's attention output. The analytic counts below are of
//! that form, the one that runs.
use crate::model::module_work::{LayerShape, ModuleWork};
use anyhow::{ensure, Result};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mla {
    /// The query's low-rank bottleneck (`q_a_proj` → `q_a_layernorm` → `q_b_proj`; DeepSeek-V3:
    /// 1536), or none (`q_proj`; DeepSeek-V2-Lite).
    pub q_lora_rank: Option<i64>,
    /// The latent each token caches (512).
    pub kv_lora_rank: i64,
    /// Each head's key/query dims without RoPE (128) and with it (64; shared by all heads' keys).
    pub qk_nope_head_dim: i64,
    pub qk_rope_head_dim: i64,
    pub v_head_dim: i64,
    /// The RoPE dims are stored as interleaved pairs (x0, x1), (x2, x3) ... (DeepSeek-V2 always;
    /// V3's `rope_interleave`, default true); llmprof regroups the projection rows once at load.
    pub rope_interleave: bool,
    /// YaRN context extension (`rope_scaling` of type yarn), if configured.
    #[serde(default)]
    pub yarn: Option<Yarn>,
}

/// YaRN RoPE scaling (transformers' `_compute_yarn_parameters`; DeepSeek's `yarn_get_mscale`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Yarn {
    pub factor: f64,
    pub original_max_position_embeddings: i64,
    pub beta_fast: f64,
    pub beta_slow: f64,
    /// 0: not given.
    pub mscale: f64,
    /// 0: not given.
    pub mscale_all_dim: f64,
}

fn get_mscale(scale: f64, m: f64) -> f64 {
    if scale <= 1.0 {
        1.0
    } else {
        0.1 * m * scale.ln() + 1.0
    }
}

impl Yarn {
    /// Reads a `rope_scaling` / `rope_parameters` object of type yarn (`type` or `rope_type`).
    pub fn from_hf(r: &serde_json::Value) -> Option<Yarn> {
        let kind = r
            .get("rope_type")
            .or_else(|| r.get("type"))
            .and_then(|t| t.as_str())?;
        if kind != "yarn" {
            return None;
        }
        let f = |k: &str, d: f64| r.get(k).and_then(|x| x.as_f64()).unwrap_or(d);
        Some(Yarn {
            factor: f("factor", 1.0),
            original_max_position_embeddings: r
                .get("original_max_position_embeddings")
                .and_then(|x| x.as_i64())
                .unwrap_or(4096),
            beta_fast: f("beta_fast", 32.0),
            beta_slow: f("beta_slow", 1.0),
            mscale: f("mscale", 0.0),
            mscale_all_dim: f("mscale_all_dim", 0.0),
        })
    }

    /// The factor on cos and sin: mscale over mscale_all_dim where both are given.
    pub fn attention_factor(&self) -> f64 {
        if self.mscale != 0.0 && self.mscale_all_dim != 0.0 {
            get_mscale(self.factor, self.mscale) / get_mscale(self.factor, self.mscale_all_dim)
        } else {
            get_mscale(self.factor, 1.0)
        }
    }

    /// The factor on the softmax scale (DeepSeek: mscale(factor, mscale_all_dim)²).
    pub fn softmax_factor(&self) -> f64 {
        if self.mscale_all_dim != 0.0 {
            get_mscale(self.factor, self.mscale_all_dim).powi(2)
        } else {
            1.0
        }
    }

    /// The inverse frequencies of `dim` RoPE dims at base `theta`: the interpolated
    /// (÷ factor) and extrapolated frequencies blended by a linear ramp between the correction
    /// dims of beta_fast and beta_slow (floored and ceiled, as transformers truncates).
    pub fn inv_freq(&self, dim: i64, theta: f64) -> Vec<f64> {
        let d = dim as f64;
        let original = self.original_max_position_embeddings as f64;
        let correction = |rotations: f64| {
            d * (original / (rotations * 2.0 * std::f64::consts::PI)).ln() / (2.0 * theta.ln())
        };
        let low = correction(self.beta_fast).floor().max(0.0);
        let mut high = correction(self.beta_slow).ceil().min(d - 1.0);
        if low == high {
            high += 0.001;
        }
        (0..dim / 2)
            .map(|i| {
                let extrapolated = 1.0 / theta.powf(2.0 * i as f64 / d);
                let ramp = ((i as f64 - low) / (high - low)).clamp(0.0, 1.0);
                let keep = 1.0 - ramp;
                extrapolated / self.factor * (1.0 - keep) + extrapolated * keep
            })
            .collect()
    }
}

impl Mla {
    /// The MLA config.json of a DeepSeek-V2/V3 describes.
    pub fn from_hf_config(v: &serde_json::Value, model_type: &str) -> Result<Mla> {
        let int = |k: &str| v.get(k).and_then(|x| x.as_i64());
        let need = |k: &str| {
            int(k).ok_or_else(|| anyhow::anyhow!("config.json has no integer `{k}` (MLA)"))
        };
        let yarn = [v.get("rope_parameters"), v.get("rope_scaling")]
            .into_iter()
            .flatten()
            .find_map(Yarn::from_hf);
        let mla = Mla {
            q_lora_rank: int("q_lora_rank"),
            kv_lora_rank: need("kv_lora_rank")?,
            qk_nope_head_dim: need("qk_nope_head_dim")?,
            qk_rope_head_dim: need("qk_rope_head_dim")?,
            v_head_dim: need("v_head_dim")?,
            rope_interleave: model_type == "deepseek_v2"
                || v.get("rope_interleave")
                    .and_then(|x| x.as_bool())
                    .unwrap_or(true),
            yarn,
        };
        mla.validate()?;
        Ok(mla)
    }

    pub fn validate(&self) -> Result<()> {
        for (k, v) in [
            ("kv_lora_rank", self.kv_lora_rank),
            ("qk_nope_head_dim", self.qk_nope_head_dim),
            ("qk_rope_head_dim", self.qk_rope_head_dim),
            ("v_head_dim", self.v_head_dim),
            ("q_lora_rank", self.q_lora_rank.unwrap_or(1)),
        ] {
            ensure!(v > 0, "mla.{k}={v} must be > 0");
        }
        ensure!(
            self.qk_rope_head_dim % 2 == 0,
            "mla.qk_rope_head_dim={} must be even (RoPE)",
            self.qk_rope_head_dim
        );
        if let Some(y) = &self.yarn {
            ensure!(
                y.factor > 0.0 && y.original_max_position_embeddings > 0,
                "yarn rope_scaling needs factor > 0 and original_max_position_embeddings > 0"
            );
        }
        Ok(())
    }

    /// The same structure at tiny dimensions.
    pub fn tiny(&self) -> Mla {
        Mla {
            q_lora_rank: self.q_lora_rank.map(|_| 24),
            kv_lora_rank: 32,
            qk_nope_head_dim: 16,
            qk_rope_head_dim: 8,
            v_head_dim: 16,
            yarn: self.yarn.clone().map(|y| Yarn {
                original_max_position_embeddings: 64,
                ..y
            }),
            ..self.clone()
        }
    }

    /// Each head's query/key width (non-RoPE + RoPE dims).
    pub fn qk_head_dim(&self) -> i64 {
        self.qk_nope_head_dim + self.qk_rope_head_dim
    }

    /// The width each cached key has (latent + RoPE key); its first kv_lora_rank dims are the
    /// value.
    pub fn latent_width(&self) -> i64 {
        self.kv_lora_rank + self.qk_rope_head_dim
    }

    /// The softmax scale: 1/√(qk head dim), × YaRN's factor.
    pub fn softmax_scale(&self) -> f64 {
        let base = (self.qk_head_dim() as f64).powf(-0.5);
        base * self.yarn.as_ref().map_or(1.0, Yarn::softmax_factor)
    }

    /// Weights of one layer's attention by part, for `hidden` and `heads` (norm weights apart).
    pub fn weights(&self, hidden: i64, heads: i64) -> MlaWeights {
        let (h, n) = (hidden as f64, heads as f64);
        let q_out = n * self.qk_head_dim() as f64;
        let r = self.kv_lora_rank as f64;
        MlaWeights {
            q: match self.q_lora_rank {
                Some(qr) => h * qr as f64 + qr as f64 * q_out,
                None => h * q_out,
            },
            kv_a: h * self.latent_width() as f64,
            kv_b: r * n * (self.qk_nope_head_dim + self.v_head_dim) as f64,
            o: n * self.v_head_dim as f64 * h,
            norms: r + self.q_lora_rank.unwrap_or(0) as f64,
        }
    }

    /// Matmul FLOPs of one token's attention outside the core, as llmprof runs it: q (through
    /// the bottleneck where there is one), kv_a, the key expansion folded into the query
    /// (2·heads·nope·latent), the value expansion of the heads' outputs (2·heads·latent·v) and
    /// o_proj.
    pub fn projection_flops(&self, hidden: i64, heads: i64) -> f64 {
        let w = self.weights(hidden, heads);
        2.0 * (w.q + w.kv_a + w.kv_b + w.o)
    }

    /// Core FLOPs of one query token per key it sees: scores over the latent + RoPE dims and the
    /// weighted sum of the latents, for every head.
    pub fn core_flops_per_key(&self, heads: i64) -> f64 {
        2.0 * heads as f64 * (self.latent_width() + self.kv_lora_rank) as f64
    }
}

/// Parameters of one layer's MLA by part.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MlaWeights {
    /// q_proj, or q_a_proj + q_b_proj.
    pub q: f64,
    pub kv_a: f64,
    /// kv_b_proj: the key (W_UK) and value (W_UV) expansions.
    pub kv_b: f64,
    pub o: f64,
    /// kv_a_layernorm and q_a_layernorm.
    pub norms: f64,
}

impl MlaWeights {
    /// All matmul weights (norms apart).
    pub fn matmul(&self) -> f64 {
        self.q + self.kv_a + self.kv_b + self.o
    }
}

impl Mla {
    /// One layer's attention modules in a decode step of `s.rows` rows over `s.context` keys
    /// (`s.hidden` wide, `heads` heads), as llmprof runs MLA: `qkv` (the query and the latent
    /// projections with their norms), `rope_kv` (RoPE, the latent written), `core` (the key
    /// expansion folded into the query, attention over the latents, the value expansion: the
    /// kv_b weights and the cache read) and `o_proj`.
    pub fn layer_work(&self, s: &LayerShape, heads: i64, layer: u32) -> Vec<ModuleWork> {
        let (h, t, b) = (s.hidden, s.rows, s.dtype_bytes);
        let n = heads as f64;
        let w = self.weights(s.hidden as i64, heads);
        let (r, latent) = (self.kv_lora_rank as f64, self.latent_width() as f64);
        let (q_out, rope) = (n * self.qk_head_dim() as f64, self.qk_rope_head_dim as f64);
        let v_out = n * self.v_head_dim as f64;
        let work = |module: &str, flops: f64, weights: f64, act: f64, kv: f64| ModuleWork {
            module: module.to_string(),
            index: Some(layer),
            flops,
            weight_bytes: weights * b,
            activation_bytes: act * b,
            kv_bytes: kv,
        };
        vec![
            work("layer.attention.input_norm", 0.0, h, 3.0 * t * h, 0.0),
            work(
                "layer.attention.qkv",
                2.0 * t * (w.q + w.kv_a),
                w.q + w.kv_a + w.norms,
                t * (h + q_out + latent),
                0.0,
            ),
            work(
                "layer.attention.rope_kv",
                0.0,
                0.0,
                t * 2.0 * (n + 1.0) * rope,
                t * latent * b,
            ),
            work(
                "layer.attention.core",
                t * (2.0 * w.kv_b + self.core_flops_per_key(heads) * s.context),
                w.kv_b,
                t * (q_out + n * (latent + r) + v_out),
                t * s.context * latent * b,
            ),
            work(
                "layer.attention.o_proj",
                2.0 * t * w.o,
                w.o,
                t * (v_out + h),
                0.0,
            ),
        ]
    }
}
