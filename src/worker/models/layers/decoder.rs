//! A pre-norm decoder stack over the KV cache: embeddings, layers of (RMSNorm, attention,
//! RMSNorm, feed-forward), final RMSNorm, lm_head (its own weight or the tied embedding). The
//! family decides each layer's feed-forward (dense SwiGLU, MoE, ...).
use super::attention::{Attention, AttnShape, Rope};
use super::basic::{RmsNorm, SwiGlu};
use crate::checkpoint::tensors::WeightPath;
use crate::engine::kv_cache::{AttnMask, KvCache, KvDims};
use anyhow::{ensure, Result};
use llmprof::model::dense::RopeScaling;
use llmprof::optim::EngineOptim;
use tch::{Kind, Tensor};

/// A layer's feed-forward block, [..., H] → [..., H].
pub trait FeedForward: std::fmt::Debug {
    fn forward(&self, x: &Tensor) -> Result<Tensor>;
}

impl FeedForward for SwiGlu {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        SwiGlu::forward(self, x)
    }
}

/// The dimensions the stack needs, whatever the family's config calls them.
#[derive(Debug, Clone, PartialEq)]
pub struct DecoderDims {
    pub layers: i64,
    pub attn: AttnShape,
    pub rms_norm_eps: f64,
    pub rope_theta: f64,
    pub rope_scaling: Option<RopeScaling>,
    pub max_positions: i64,
    /// lm_head is the embedding matrix (no `lm_head.weight`).
    pub tie_word_embeddings: bool,
}

impl DecoderDims {
    pub fn kv(&self) -> KvDims {
        KvDims {
            layers: self.layers,
            kv_heads: self.attn.kv_heads,
            head_dim: self.attn.head_dim,
        }
    }
}

#[derive(Debug)]
pub struct DecoderLayer {
    input_ln: RmsNorm,
    attn: Attention,
    post_ln: RmsNorm,
    ffn: Box<dyn FeedForward>,
}

impl DecoderLayer {
    /// Pre-norm residual block on the residual stream `h` and its norm `normed` (this layer's
    /// input_ln of `h`); `attn` maps the normed input to the attention output, and `next_ln`
    /// (the next layer's input norm, or the final norm) normalises the output. Returns the new
    /// (h, normed). Each residual add is fused with the norm after it
    /// ([`RmsNorm::add_forward`]).
    fn forward(
        &self,
        (h, normed): (&Tensor, &Tensor),
        next_ln: &RmsNorm,
        attn: impl FnOnce(&Attention, &Tensor) -> Result<Tensor>,
    ) -> Result<(Tensor, Tensor)> {
        let (h, normed) = self.post_ln.add_forward(h, &attn(&self.attn, normed)?)?;
        let f = self.ffn.forward(&normed)?;
        next_ln.add_forward(&h, &f)
    }
}

/// An RMSNorm, fused or not as `o` says.
pub fn norm(vs: &WeightPath, eps: f64, o: &EngineOptim) -> Result<RmsNorm> {
    let mut n = RmsNorm::load(vs, eps)?;
    n.fused = o.fused_rms_norm;
    n.add_kernel = o.add_rms_norm_kernel;
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
    dims: DecoderDims,
    optim: EngineOptim,
}

impl Decoder {
    /// `vs` is the root (names `model.embed_tokens…`, `model.layers.{i}…`, `lm_head.weight`);
    /// `ffn(vs_of_layer_mlp, i)` builds layer i's feed-forward.
    pub fn load(
        vs: &WeightPath,
        dims: &DecoderDims,
        optim: &EngineOptim,
        ffn: impl Fn(&WeightPath, i64) -> Result<Box<dyn FeedForward>>,
    ) -> Result<Self> {
        let m = vs.sub("model");
        if vs.device().is_cuda() {
            // Each kernel switch, where it takes effect (spec validation enforces the same
            // dependencies for configured runs; EngineOptim may also be built directly).
            for (switch, used) in [
                (
                    "runtime.optim.rope_kv_kernel",
                    optim.rope_kv_kernel && optim.fused_projections,
                ),
                (
                    "runtime.optim.swiglu_kernel",
                    optim.swiglu_kernel && optim.fused_projections,
                ),
                (
                    "runtime.optim.decode_attention_kernel",
                    optim.decode_attention_kernel,
                ),
                (
                    "runtime.optim.add_rms_norm_kernel",
                    optim.add_rms_norm_kernel && optim.fused_rms_norm,
                ),
            ] {
                crate::ffi::kernels::require(switch, used)?;
            }
        }
        let layers = (0..dims.layers)
            .map(|i| {
                let l = m.sub("layers").sub(i);
                let mut attn = Attention::load(
                    &l.sub("self_attn"),
                    dims.attn,
                    optim.fused_projections,
                    optim.sdpa,
                )?;
                attn.rope_kv_kernel = optim.rope_kv_kernel;
                attn.decode_attention_kernel = optim.decode_attention_kernel;
                attn.decode_attention_min_window = optim.decode_attention_min_window as i64;
                Ok(DecoderLayer {
                    input_ln: norm(&l.sub("input_layernorm"), dims.rms_norm_eps, optim)?,
                    attn,
                    post_ln: norm(&l.sub("post_attention_layernorm"), dims.rms_norm_eps, optim)?,
                    ffn: ffn(&l.sub("mlp"), i)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let embed = m.get("embed_tokens.weight")?;
        let lm_head = if dims.tie_word_embeddings {
            embed.shallow_clone()
        } else {
            vs.get("lm_head.weight")?
        };
        Ok(Decoder {
            embed,
            layers,
            norm: norm(&m.sub("norm"), dims.rms_norm_eps, optim)?,
            lm_head,
            rope: Rope::with_scaling(
                dims.attn.head_dim,
                dims.rope_theta,
                dims.rope_scaling.as_ref(),
                vs.device(),
            )?,
            max_positions: dims.max_positions,
            dims: dims.clone(),
            optim: *optim,
        })
    }

    /// The implementation choices this decoder was built with.
    pub fn optim(&self) -> &EngineOptim {
        &self.optim
    }

    pub fn dims(&self) -> &DecoderDims {
        &self.dims
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
        let out = self.run_layers(x, |a, x, i| a.forward(x, &cos_sin, cache, i, &mask))?;
        cache.advance(t)?;
        Ok(out)
    }

    /// Every layer over embeddings `x`, `attn(layer's attention, normed input, layer index)`
    /// giving each attention output → the final-normed hidden states.
    fn run_layers(
        &self,
        x: &Tensor,
        mut attn: impl FnMut(&Attention, &Tensor, usize) -> Result<Tensor>,
    ) -> Result<Tensor> {
        let Some(first) = self.layers.first() else {
            return self.norm.forward(x);
        };
        let mut h = x.shallow_clone();
        let mut normed = first.input_ln.forward(&h)?;
        for (i, layer) in self.layers.iter().enumerate() {
            let next_ln = self.layers.get(i + 1).map_or(&self.norm, |l| &l.input_ln);
            (h, normed) = layer.forward((&h, &normed), next_ln, |a, x| attn(a, x, i))?;
        }
        Ok(normed)
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
        let kernel = self
            .layers
            .first()
            .is_some_and(|l| l.attn.uses_decode_kernel(x.device(), window));
        let mask = if kernel {
            AttnMask::None // the kernel reads each row's padding and length itself
        } else {
            cache.device_step_additive_mask(window, x.kind())?
        };
        let out = self.run_layers(x, |a, x, i| {
            a.forward_device_step(x, &cos_sin, cache, i, &mask, window)
        })?;
        cache.advance_device_len()?;
        Ok(out)
    }

    /// hidden [..., H] → fp32 logits [..., vocab].
    pub fn logits(&self, hidden: &Tensor) -> Result<Tensor> {
        Ok(hidden
            .f_linear::<Tensor>(&self.lm_head, None)?
            .f_to_kind(Kind::Float)?)
    }
}
