//! DeepSeek-V2-style decoder (docs/deepseek-ocr.md §2): embeddings, pre-norm layers (dense first, MoE after),
//! final RMSNorm, untied lm_head. Runs over the static KV cache.

use crate::models::deepseek_ocr::checkpoint::weights::WeightPath;
use crate::models::deepseek_ocr::layers::{RmsNorm, SwiGlu};
use crate::models::deepseek_ocr::optim::ModelOptim;
use crate::models::deepseek_ocr::text::attention::{Attention, Rope};
use crate::models::deepseek_ocr::text::kv_cache::{AttnMask, KvCache};
use crate::models::deepseek_ocr::text::moe::{Moe, MoeDispatch};
use anyhow::{ensure, Result};
use llmprof::model::deepseek_ocr::arch::DecoderConfig;
use tch::{Kind, Tensor};

#[derive(Debug)]
pub enum Ffn {
    Dense(SwiGlu),
    Moe(Moe),
}

#[derive(Debug)]
pub struct DecoderLayer {
    input_ln: RmsNorm,
    attn: Attention,
    post_ln: RmsNorm,
    ffn: Ffn,
}

impl DecoderLayer {
    pub fn load(vs: &WeightPath, cfg: &DecoderConfig, index: i64, o: &ModelOptim) -> Result<Self> {
        let fused = o.fused_projections;
        let ffn = if index < cfg.first_k_dense_replace {
            Ffn::Dense(SwiGlu::load(&vs.sub("mlp"), fused)?)
        } else {
            let mut moe = Moe::load(&vs.sub("mlp"), cfg, fused)?;
            if o.grouped_moe {
                moe.dispatch = MoeDispatch::Grouped;
            }
            Ffn::Moe(moe)
        };
        Ok(DecoderLayer {
            input_ln: norm(&vs.sub("input_layernorm"), cfg, o)?,
            attn: Attention::load(&vs.sub("self_attn"), cfg, fused, o.sdpa)?,
            post_ln: norm(&vs.sub("post_attention_layernorm"), cfg, o)?,
            ffn,
        })
    }

    /// Pre-norm residual block; `attn` maps the normed input to the attention output.
    fn forward(
        &self,
        h: &Tensor,
        attn: impl FnOnce(&Attention, &Tensor) -> Result<Tensor>,
    ) -> Result<Tensor> {
        let h = h.f_add(&attn(&self.attn, &self.input_ln.forward(h)?)?)?;
        let normed = self.post_ln.forward(&h)?;
        let f = match &self.ffn {
            Ffn::Dense(mlp) => mlp.forward(&normed)?,
            Ffn::Moe(moe) => moe.forward(&normed)?,
        };
        Ok(h.f_add(&f)?)
    }
}

/// An RMSNorm of the decoder, fused or not as `o` says.
fn norm(vs: &WeightPath, cfg: &DecoderConfig, o: &ModelOptim) -> Result<RmsNorm> {
    let mut n = RmsNorm::load(vs, cfg.rms_norm_eps)?;
    n.fused = o.fused_rms_norm;
    Ok(n)
}

#[derive(Debug)]
pub struct Decoder {
    embed: Tensor,
    layers: Vec<DecoderLayer>,
    norm: RmsNorm,
    lm_head: Tensor,
    rope: Rope,
    max_positions: i64,
    optim: ModelOptim,
}

impl Decoder {
    /// `vs` is the root (names `model.embed_tokens…`, `lm_head.weight`).
    pub fn load(vs: &WeightPath, cfg: &DecoderConfig, optim: &ModelOptim) -> Result<Self> {
        let m = vs.sub("model");
        let layers = (0..cfg.num_hidden_layers)
            .map(|i| DecoderLayer::load(&m.sub("layers").sub(i), cfg, i, optim))
            .collect::<Result<Vec<_>>>()?;
        Ok(Decoder {
            embed: m.get("embed_tokens.weight")?,
            layers,
            norm: norm(&m.sub("norm"), cfg, optim)?,
            lm_head: vs.get("lm_head.weight")?,
            rope: Rope::new(cfg.head_dim, cfg.rope_theta, vs.device())?,
            max_positions: cfg.max_position_embeddings,
            optim: *optim,
        })
    }

    /// The implementation choices this decoder was built with.
    pub fn optim(&self) -> &ModelOptim {
        &self.optim
    }

    /// ids [B,T] (int64) → embeddings [B,T,H] (no scaling).
    pub fn embed(&self, ids: &Tensor) -> Result<Tensor> {
        Ok(Tensor::f_embedding(&self.embed, ids, -1, false, false)?)
    }

    /// Runs all layers over embeddings x [B,T,H] at the cache's next slots, advances the cache,
    /// and returns the final-normed hidden states [B,T,H].
    pub fn forward(&self, x: &Tensor, cache: &mut KvCache) -> Result<Tensor> {
        let (b, t, _) = x.size3()?;
        ensure!(
            b == cache.batch(),
            "batch {b} != KV cache batch {}",
            cache.batch()
        );
        ensure!(
            cache.len() + t <= self.max_positions,
            "sequence of {} tokens exceeds max_position_embeddings {}",
            cache.len() + t,
            self.max_positions
        );
        let positions = cache.positions(t)?; // (b, t)
        let cos_sin = self.rope.cos_sin(&positions, x.kind())?;
        let mask = cache.attention_mask(t)?;
        let mut h = x.shallow_clone();
        for (i, layer) in self.layers.iter().enumerate() {
            h = layer.forward(&h, |a, x| a.forward(x, &cos_sin, cache, i, &mask))?;
        }
        cache.advance(t)?;
        self.norm.forward(&h)
    }

    /// One token per row, x [B,1,H], at the cache's device-side slot counter, attending over
    /// the first `window` slots; advances only the device-side counter. Every shape is fixed
    /// by (B, window) and nothing syncs with the host, so a CUDA graph can capture this once
    /// and replay it for every step whose slot is below `window`.
    pub fn forward_device_step(&self, x: &Tensor, cache: &KvCache, window: i64) -> Result<Tensor> {
        let (b, t, _) = x.size3()?;
        ensure!(
            t == 1 && b == cache.batch(),
            "device step takes one token per row for batch {}",
            cache.batch()
        );
        ensure!(
            window <= self.max_positions,
            "decode window {window} exceeds max_position_embeddings {}",
            self.max_positions
        );
        cache.check_device_step(window)?;
        let positions = cache.device_step_positions()?; // (b, 1)
        let cos_sin = self.rope.cos_sin(&positions, x.kind())?;
        let mask = AttnMask::Explicit(cache.device_step_mask(window)?);
        let mut h = x.shallow_clone();
        for (i, layer) in self.layers.iter().enumerate() {
            h = layer.forward(&h, |a, x| {
                a.forward_device_step(x, &cos_sin, cache, i, &mask, window)
            })?;
        }
        cache.advance_device_len()?;
        self.norm.forward(&h)
    }

    /// hidden [..., H] → fp32 logits [..., vocab].
    pub fn logits(&self, hidden: &Tensor) -> Result<Tensor> {
        Ok(hidden
            .f_linear::<Tensor>(&self.lm_head, None)?
            .f_to_kind(Kind::Float)?)
    }
}
