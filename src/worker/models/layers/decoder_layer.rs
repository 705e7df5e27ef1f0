//! One layer of the decoder stack (RMSNorm, self-attention, RMSNorm, feed-forward, with Gemma's
//! output norms where the model has them), how its attention and norms are built, and the
//! per-layer choices of a forward pass: the RoPE table (global or local) and the attention mask
//! (whole context or sliding window).
use super::attention::AttnShape;
use super::attention::{Attention, Rope};
use super::basic::{GateUpOut, RmsNorm, SwiGlu};
use super::block_input::BlockInput;
use super::mla::MlaAttention;
use super::self_attention::SelfAttention;
use crate::checkpoint::tensors::WeightPath;
use crate::engine::kv_cache::AttnMask;
use crate::engine::kv_cache::KvDims;
use crate::ffi::kernels_gemv::GemvAct;
use anyhow::Result;
use llmprof::model::dense::{Mla, RopeScaling};
use llmprof::model::module_work::{ATTENTION, ATTENTION_NORM, GATE_UP, MLP, MLP_NORM, QKV};
use llmprof::optim::EngineOptim;
use llmprof::region::{Module, RegionObserver};
use tch::Tensor;

/// A layer's feed-forward block, [..., H] → [..., H].
pub trait FeedForward: std::fmt::Debug {
    /// Runs the block, marking its inner modules on `obs`.
    fn forward(&self, x: &Tensor, obs: &dyn RegionObserver) -> Result<Tensor>;

    /// The module the block is (its norm before it is `.1`): the shared MLP's by default.
    fn modules(&self) -> (Module, Module) {
        (MLP, MLP_NORM)
    }

    /// The weight of the block's first projection where a folded add + RMSNorm may run it
    /// ([`FeedForward::forward_projected`] then takes its output), with the module to mark it
    /// as and what the GEMV applies to it (SwiGLU: its output is the activation); None (the
    /// default) where the block projects its input itself.
    fn first_projection(&self) -> Option<(&Tensor, Module, GemvAct)> {
        None
    }

    /// Whether a step of `tokens` runs a MoE's shared experts as experts of its grouped GEMMs
    /// (so the analytic work puts theirs in the experts' modules); false but for such a MoE.
    fn shared_experts_as_slots(&self, _tokens: i64) -> bool {
        false
    }

    /// The block from its first projection's output (see [`FeedForward::first_projection`]).
    fn forward_projected(&self, _projected: Tensor, _obs: &dyn RegionObserver) -> Result<Tensor> {
        anyhow::bail!("this feed-forward block projects its input itself")
    }
}

impl FeedForward for SwiGlu {
    fn forward(&self, x: &Tensor, obs: &dyn RegionObserver) -> Result<Tensor> {
        self.forward_marked(x, obs)
    }

    fn first_projection(&self) -> Option<(&Tensor, Module, GemvAct)> {
        self.fused_gate_up().map(|w| (w, GATE_UP, self.gemv_act()))
    }

    fn forward_projected(&self, projected: Tensor, obs: &dyn RegionObserver) -> Result<Tensor> {
        let gu = match self.gemv_act() {
            GemvAct::SwiGlu => GateUpOut::Activated(projected),
            GemvAct::None => GateUpOut::Fused(projected),
        };
        self.act_down_marked(gu, obs)
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
    /// Gemma 3's structure ([`Sandwich`]); `None` for the plain pre-norm stack.
    pub sandwich: Option<Sandwich>,
    /// Multi-head latent attention in place of `attn`'s GQA (DeepSeek-V2/V3; `attn.head_dim`
    /// is then its RoPE dims).
    pub mla: Option<Mla>,
    /// Sliding-window attention: the window (keys a query sees, itself included) and the
    /// layers that slide.
    pub sliding: Option<(i64, Vec<i64>)>,
}

/// Gemma 3's decoder structure: embeddings × `embed_scale`, RMSNorm weights stored as offsets
/// from 1, a norm on each attention and MLP output before its residual add, and local layers
/// with their own RoPE base.
#[derive(Debug, Clone, PartialEq)]
pub struct Sandwich {
    pub embed_scale: f64,
    pub local_rope_theta: f64,
    pub local_layers: Vec<i64>,
    /// The global layers' linear RoPE scaling (positions ÷ this).
    pub global_rope_factor: Option<f64>,
}

impl DecoderDims {
    /// What an RMSNorm's stored weight is an offset from (Gemma: 1).
    pub(super) fn norm_offset(&self) -> f64 {
        if self.sandwich.is_some() {
            1.0
        } else {
            0.0
        }
    }

    pub fn kv(&self) -> KvDims {
        match &self.mla {
            // One latent + RoPE key per token, read as keys and (its first columns) as values.
            Some(m) => KvDims {
                layers: self.layers,
                kv_heads: 1,
                head_dim: m.latent_width(),
                v_head_dim: 0,
            },
            None => KvDims {
                layers: self.layers,
                kv_heads: self.attn.kv_heads,
                head_dim: self.attn.head_dim,
                v_head_dim: self.attn.head_dim,
            },
        }
    }
}

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
    /// `fold`: the blocks may take their first projection's output ([`BlockInput::Projected`]):
    /// where a norm folds into it ([`RmsNorm::folds_into`]: one-row decode steps), the residual
    /// add, the norm and that projection run as one kernel, marked as the projection's module
    /// (the norm's module then has no kernel). `zero_delta`: the delta the input norm folds in
    /// where nothing is pending (the first layer: zeros, x + 0 = x), or None to keep its own
    /// kernel there.
    pub(super) fn forward(
        &self,
        (h, pending, zero_delta): (&Tensor, Option<&Tensor>, Option<&Tensor>),
        obs: &dyn RegionObserver,
        (attn, fold): (
            impl FnOnce(&SelfAttention, BlockInput) -> Result<Tensor>,
            bool,
        ),
        reduce: &dyn Fn(Tensor) -> Result<Tensor>,
    ) -> Result<(Tensor, Tensor)> {
        let a = {
            let _m = obs.enter_module(ATTENTION, None);
            let qkv = fold
                .then(|| self.attn.rope_kv_projection(h.device()))
                .flatten()
                .zip(pending.or(zero_delta))
                .filter(|((w, b), f)| self.input_ln.folds_into((h, *f), w, *b));
            let (h, a) = match qkv {
                Some(((w, b), f)) => {
                    let (h, y) = {
                        let _q = obs.enter_module(QKV, None);
                        self.input_ln
                            .add_forward_linear((h, f), w, b, GemvAct::None)?
                    };
                    (h, attn(&self.attn, BlockInput::Projected(&y))?)
                }
                None => {
                    let (h, normed) = {
                        let _n = obs.enter_module(ATTENTION_NORM, None);
                        match pending {
                            Some(f) => self.input_ln.add_forward(h, f)?,
                            None => (h.shallow_clone(), self.input_ln.forward(h)?),
                        }
                    };
                    (h, attn(&self.attn, BlockInput::Normed(&normed))?)
                }
            };
            match &self.out_norms {
                Some((after_attn, _)) => (h, after_attn.forward(&a)?),
                None => (h, a),
            }
        };
        let (ffn_module, ffn_norm) = self.ffn.modules();
        let _m = obs.enter_module(ffn_module, None);
        let first = fold
            .then(|| self.ffn.first_projection())
            .flatten()
            .filter(|(w, _, _)| self.post_ln.folds_into((&a.0, &a.1), w, None));
        let (h, f) = match first {
            Some((w, module, act)) => {
                let (h, y) = {
                    let _p = obs.enter_module(module, None);
                    self.post_ln
                        .add_forward_linear((&a.0, &a.1), w, None, act)?
                };
                (h, self.ffn.forward_projected(y, obs)?)
            }
            None => {
                let (h, normed) = {
                    let _n = obs.enter_module(ffn_norm, None);
                    self.post_ln.add_forward(&a.0, &a.1)?
                };
                (h, self.ffn.forward(&normed, obs)?)
            }
        };
        // A tensor-parallel rank holds part of the MLP's width: its peers' parts sum in.
        let f = reduce(f)?;
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
        // transformers builds MLA's latent norms with eps 1e-6, whatever rms_norm_eps says.
        let a = MlaAttention::load(vs, m, dims.attn.heads, 1e-6)?;
        return Ok(SelfAttention::Mla(a));
    }
    let mut attn = Attention::load(vs, dims.attn, optim.fused_projections, optim.sdpa)?;
    attn.rope_kv_kernel = optim.rope_kv_kernel;
    attn.decode_attention_kernel = optim.decode_attention_kernel;
    attn.decode_attention_min_window = optim.decode_attention_min_window as i64;
    attn.decode_attention_tensor_cores = optim.decode_attention_tensor_cores;
    attn.gemv_kernel = optim.gemv_kernel;
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
    n.gemv_fold = o.gemv_add_rms_norm;
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
