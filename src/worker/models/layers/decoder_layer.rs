//! One layer of the decoder stack (RMSNorm, self-attention, RMSNorm, feed-forward, with Gemma's
//! output norms where the model has them), how its attention and norms are built, and the
//! per-layer choices of a forward pass: the RoPE table (global or local) and the attention mask
//! (whole context or sliding window).
use super::attention::{Attention, Rope};
use super::basic::RmsNorm;
use super::decoder::{DecoderDims, FeedForward};
use super::mla::MlaAttention;
use super::self_attention::SelfAttention;
use crate::checkpoint::tensors::WeightPath;
use crate::engine::kv_cache::AttnMask;
use anyhow::Result;
use llmprof::model::module_work::{ATTENTION, ATTENTION_NORM};
use llmprof::optim::EngineOptim;
use llmprof::region::RegionObserver;
use tch::Tensor;

#[derive(Debug)]
pub struct DecoderLayer {
    pub(super) input_ln: RmsNorm,
    pub(super) attn: SelfAttention,
    pub(super) post_ln: RmsNorm,
    pub(super) ffn: Box<dyn FeedForward>,
    /// Gemma's norms of the attention and MLP outputs (before their residual adds).
    pub(super) out_norms: Option<(RmsNorm, RmsNorm)>,
    /// Attends with the local RoPE table (Gemma's sliding layers).
    pub(super) local: bool,
    /// Attends over the sliding window only.
    pub(super) sliding: bool,
}

impl DecoderLayer {
    /// Pre-norm residual block on the residual stream `h`: `pending` is the previous layer's
    /// feed-forward output, added to `h` in this layer's input norm ([`RmsNorm::add_forward`]
    /// fuses each residual add with the norm after it; the first layer has none). `attn` maps
    /// the normed input to the attention output. Returns the new residual stream and this
    /// layer's feed-forward output, for the next norm to add. Marks `attention` {`input_norm`,
    /// the attention's own} and the feed-forward's module {its norm, the block's own}.
    pub(super) fn forward(
        &self,
        (h, pending): (&Tensor, Option<&Tensor>),
        obs: &dyn RegionObserver,
        attn: impl FnOnce(&SelfAttention, &Tensor) -> Result<Tensor>,
        reduce: &dyn Fn(Tensor) -> Result<Tensor>,
    ) -> Result<(Tensor, Tensor)> {
        let a = {
            let _m = obs.enter_module(ATTENTION, None);
            let (h, normed) = {
                let _n = obs.enter_module(ATTENTION_NORM, None);
                match pending {
                    Some(f) => self.input_ln.add_forward(h, f)?,
                    None => (h.shallow_clone(), self.input_ln.forward(h)?),
                }
            };
            let a = attn(&self.attn, &normed)?;
            match &self.out_norms {
                Some((after_attn, _)) => (h, after_attn.forward(&a)?),
                None => (h, a),
            }
        };
        let (ffn_module, ffn_norm) = self.ffn.modules();
        let _m = obs.enter_module(ffn_module, None);
        let (h, normed) = {
            let _n = obs.enter_module(ffn_norm, None);
            self.post_ln.add_forward(&a.0, &a.1)?
        };
        // A tensor-parallel rank holds part of the MLP's width: its peers' parts sum in.
        let f = reduce(self.ffn.forward(&normed, obs)?)?;
        match &self.out_norms {
            Some((_, after_ffn)) => Ok((h, after_ffn.forward(&f)?)),
            None => Ok((h, f)),
        }
    }
}

/// Layer attention at `vs` (`model.layers.{i}.self_attn`): MLA where `dims` has it, else GQA
/// with the kernel switches of `optim`.
pub(super) fn load_attention(
    vs: &WeightPath,
    dims: &DecoderDims,
    optim: &EngineOptim,
) -> Result<SelfAttention> {
    if let Some(m) = &dims.mla {
        let a = MlaAttention::load(vs, m, dims.attn.heads, dims.rms_norm_eps)?;
        return Ok(SelfAttention::Mla(a));
    }
    let mut attn = Attention::load(vs, dims.attn, optim.fused_projections, optim.sdpa)?;
    attn.rope_kv_kernel = optim.rope_kv_kernel;
    attn.decode_attention_kernel = optim.decode_attention_kernel;
    attn.decode_attention_min_window = optim.decode_attention_min_window as i64;
    Ok(SelfAttention::Gqa(attn))
}

/// The RoPE of the global layers (all layers but Gemma's local ones): Gemma's linear scaling,
/// MLA's YaRN, or Llama 3's scaling where configured.
pub(super) fn global_rope(dims: &DecoderDims, device: tch::Device) -> Result<Rope> {
    let (d, theta) = (dims.attn.head_dim, dims.rope_theta);
    if let Some(f) = dims.sandwich.as_ref().and_then(|s| s.global_rope_factor) {
        return Rope::new(d, theta, device)?.slowed(f);
    }
    if let Some(y) = dims.mla.as_ref().and_then(|m| m.yarn.as_ref()) {
        return Rope::from_inv_freq(&y.inv_freq(d, theta), y.attention_factor(), device);
    }
    Rope::with_scaling(d, theta, dims.rope_scaling.as_ref(), device)
}

/// An RMSNorm, fused or not as `o` says.
pub fn norm(vs: &WeightPath, eps: f64, o: &EngineOptim) -> Result<RmsNorm> {
    norm_with_offset(vs, eps, o, 0.0)
}

/// [`norm`] of a weight stored as an offset: the scale is `offset + weight` (Gemma: 1).
pub fn norm_with_offset(
    vs: &WeightPath,
    eps: f64,
    o: &EngineOptim,
    offset: f64,
) -> Result<RmsNorm> {
    let mut n = RmsNorm::load(vs, eps)?.with_offset(offset)?;
    n.fused = o.fused_rms_norm;
    n.add_kernel = o.add_rms_norm_kernel;
    Ok(n)
}

/// The attention masks of a forward pass: over the whole context, and the sliding layers' where
/// their window cuts it.
pub(super) struct LayerMasks {
    pub(super) full: AttnMask,
    pub(super) sliding: Option<AttnMask>,
}

impl LayerMasks {
    pub(super) fn of(&self, layer: &DecoderLayer) -> &AttnMask {
        match (&self.sliding, layer.sliding) {
            (Some(m), true) => m,
            _ => &self.full,
        }
    }
}

/// The (cos, sin) RoPE tables of a forward pass: global, and local where layers have their own.
pub(super) struct RopeTables {
    pub(super) global: (Tensor, Tensor),
    pub(super) local: Option<(Tensor, Tensor)>,
}

impl RopeTables {
    pub(super) fn of(&self, layer: &DecoderLayer) -> &(Tensor, Tensor) {
        match (&self.local, layer.local) {
            (Some(local), true) => local,
            _ => &self.global,
        }
    }
}
