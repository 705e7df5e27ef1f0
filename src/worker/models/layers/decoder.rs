//! A pre-norm decoder stack over the KV cache: embeddings, layers of (RMSNorm, attention,
//! RMSNorm, feed-forward), final RMSNorm, lm_head (its own weight or the tied embedding). The
//! family decides each layer's feed-forward (dense SwiGLU, MoE, ...).
mod ends;

use super::attention::Rope;
use super::basic::RmsNorm;
use super::block_input::BlockInput;
use super::decoder_layer::{global_rope, load_attention, LayerMasks, RopeTables};
pub use super::decoder_layer::{
    norm, norm_with_offset, DecoderDims, DecoderLayer, FeedForward, Sandwich,
};
use super::self_attention::SelfAttention;
use crate::checkpoint::tensors::WeightPath;
use crate::engine::collectives::Collectives;
use crate::engine::kv_cache::{AttnMask, KvCache};
use anyhow::{ensure, Result};
use llmprof::model::module_work::{EMBED, FINAL_NORM, LAYER};
use llmprof::optim::EngineOptim;
use llmprof::region::RegionObserver;
use llmprof::region::COMMUNICATION;
use std::sync::Arc;
use tch::Tensor;

#[derive(Debug)]
pub struct Decoder {
    embed: Tensor,
    layers: Vec<DecoderLayer>,
    norm: RmsNorm,
    lm_head: Tensor,
    rope: Rope,
    /// The local layers' RoPE (Gemma's sliding layers).
    rope_local: Option<Rope>,
    /// Gemma's embedding scale, rounded to the embedding's dtype.
    embed_scale: Option<f64>,
    max_positions: i64,
    /// Zeros [1,1,H] on a CUDA device with `runtime.optim.gemv_add_rms_norm`: the residual delta
    /// the first layer's input norm folds in at a one-row step, so its norm runs inside its
    /// q/k/v GEMV as every later layer's does (libtorch's RMSNorm kernel took 6.6 µs a step for
    /// Llama-3.1-8B, H200, reports/performance-history.md round 3 session 36).
    zero_row: Option<Tensor>,
    dims: DecoderDims,
    optim: EngineOptim,
    /// Tensor parallelism: the peers, and the first vocabulary row of this rank's embedding
    /// and lm_head slices.
    tp: Option<(Arc<dyn Collectives>, i64)>,
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
                ("runtime.optim.gemv_kernel", optim.gemv_kernel),
            ] {
                crate::ffi::kernels::require(switch, used)?;
            }
        }
        let layers = (0..dims.layers)
            .map(|i| {
                let l = m.sub("layers").sub(i);
                let attn = load_attention(&l.sub("self_attn"), dims, optim)?;
                let n = |name: &str| {
                    norm_with_offset(&l.sub(name), dims.rms_norm_eps, optim, dims.norm_offset())
                };
                // Gemma names the norm before the MLP pre_feedforward_layernorm, and its
                // post_attention_layernorm is the norm of the attention's output.
                let (post_ln, out_norms) = match &dims.sandwich {
                    Some(_) => (
                        n("pre_feedforward_layernorm")?,
                        Some((
                            n("post_attention_layernorm")?,
                            n("post_feedforward_layernorm")?,
                        )),
                    ),
                    None => (n("post_attention_layernorm")?, None),
                };
                Ok(DecoderLayer {
                    input_ln: n("input_layernorm")?,
                    attn,
                    post_ln,
                    ffn: ffn(&l.sub("mlp"), i)?,
                    out_norms,
                    local: dims
                        .sandwich
                        .as_ref()
                        .is_some_and(|s| s.local_layers.contains(&i)),
                    sliding: dims.sliding.as_ref().is_some_and(|s| s.1.contains(&i)),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let embed = m.get("embed_tokens.weight")?;
        let lm_head = if dims.tie_word_embeddings {
            embed.shallow_clone()
        } else {
            vs.get("lm_head.weight")?
        };
        // × √hidden in the weights' dtype, as Gemma rounds it: once, not every forward.
        let embed_scale = dims
            .sandwich
            .as_ref()
            .map(|s| {
                Tensor::from(s.embed_scale)
                    .f_to_kind(embed.kind())?
                    .f_double_value(&[])
            })
            .transpose()?;
        let zero_row = (optim.gemv_add_rms_norm && vs.device().is_cuda())
            .then(|| Tensor::f_zeros([1, 1, embed.size()[1]], (embed.kind(), vs.device())))
            .transpose()?;
        Ok(Decoder {
            embed,
            layers,
            norm: norm_with_offset(&m.sub("norm"), dims.rms_norm_eps, optim, dims.norm_offset())?,
            embed_scale,
            lm_head,
            rope: global_rope(dims, vs.device())?,
            rope_local: dims
                .sandwich
                .as_ref()
                .map(|s| Rope::new(dims.attn.head_dim, s.local_rope_theta, vs.device()))
                .transpose()?,
            max_positions: dims.max_positions,
            zero_row,
            dims: dims.clone(),
            optim: *optim,
            tp: None,
        })
    }

    /// This decoder as one tensor-parallel rank of `comm`'s world, built from its slices
    /// (models::dense::shard); its vocabulary rows start at `vocab_offset`.
    pub fn with_tensor_parallel(self, comm: Arc<dyn Collectives>, vocab_offset: i64) -> Self {
        Decoder {
            tp: Some((comm, vocab_offset)),
            ..self
        }
    }

    /// `t` summed over the tensor-parallel ranks (as it is without them), marked as the module
    /// `communication` inside the module open at the call.
    fn reduce(&self, t: Tensor, obs: &dyn RegionObserver) -> Result<Tensor> {
        match &self.tp {
            Some((comm, _)) => {
                let _c = obs.enter_module(COMMUNICATION, None);
                comm.all_reduce_sum(&t)
            }
            None => Ok(t),
        }
    }

    /// The sliding window, where some layer slides.
    fn sliding_window(&self) -> Option<i64> {
        self.dims
            .sliding
            .as_ref()
            .filter(|s| !s.1.is_empty())
            .map(|s| s.0)
    }

    /// Whether a step of `tokens` runs some layer's MoE shared experts as experts of its grouped
    /// GEMMs ([`FeedForward::shared_experts_as_slots`]).
    pub fn shared_experts_as_slots(&self, tokens: i64) -> bool {
        self.layers
            .iter()
            .any(|l| l.ffn.shared_experts_as_slots(tokens))
    }

    /// The implementation choices this decoder was built with.
    pub fn optim(&self) -> &EngineOptim {
        &self.optim
    }

    pub fn dims(&self) -> &DecoderDims {
        &self.dims
    }

    /// Runs all layers over embeddings x [B,T,H] at the cache's next slots, advances the cache,
    /// and returns the final-normed hidden states [B,T,H].
    pub fn forward(
        &self,
        x: &Tensor,
        cache: &mut KvCache,
        obs: &dyn RegionObserver,
    ) -> Result<Tensor> {
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
        let (cos_sin, mask) = {
            // Positions, RoPE tables and the mask: the embedding's work.
            let _m = obs.enter_module(EMBED, None);
            let positions = cache.positions(t)?; // (b, t)
            let window = self.sliding_window();
            let masks = LayerMasks {
                full: cache.attention_mask(t)?,
                sliding: window
                    .filter(|&w| cache.len() + t > w)
                    .map(|w| cache.attention_mask_within(t, Some(w)))
                    .transpose()?,
            };
            (self.rope_tables(&positions, None, x.kind())?, masks)
        };
        let out = self.run_layers(
            x,
            obs,
            (
                |a, x: BlockInput, i| {
                    let layer = &self.layers[i];
                    a.forward(
                        x.normed()?,
                        cos_sin.of(layer),
                        (&mut *cache, i),
                        mask.of(layer),
                        obs,
                    )
                },
                false,
            ),
        )?;
        cache.advance(t)?;
        Ok(out)
    }

    /// Every layer over embeddings `x`, `attn(layer's attention, its input, layer index)` giving
    /// each attention output → the final-normed hidden states. The input is the normed one, or,
    /// with `fold` (one-row device steps) where a norm folds into the attention's q/k/v GEMV,
    /// that projection's output ([`BlockInput`], `DecoderLayer::forward`). Marks each `layer`
    /// with its index, and `final_norm` (with the last layer's residual add).
    fn run_layers(
        &self,
        x: &Tensor,
        obs: &dyn RegionObserver,
        (mut attn, fold): (
            impl FnMut(&SelfAttention, BlockInput, usize) -> Result<Tensor>,
            bool,
        ),
    ) -> Result<Tensor> {
        let mut h = x.shallow_clone();
        let mut pending: Option<Tensor> = None;
        for (i, layer) in self.layers.iter().enumerate() {
            let _l = obs.enter_module(LAYER, Some(i as u32));
            // A tensor-parallel rank holds some heads: the attention outputs of all sum in.
            let (next_h, f) = layer.forward(
                (
                    &h,
                    pending.as_ref(),
                    self.zero_row.as_ref().filter(|_| fold),
                ),
                obs,
                (|a, x| self.reduce(attn(a, x, i)?, obs), fold),
                &|t| self.reduce(t, obs),
            )?;
            (h, pending) = (next_h, Some(f));
        }
        let _m = obs.enter_module(FINAL_NORM, None);
        match pending {
            Some(f) => Ok(self.norm.add_forward(&h, &f)?.1),
            None => self.norm.forward(&h),
        }
    }

    /// One token per row, x [B,1,H], at the cache's device-side slot counter, attending over
    /// the first `window` slots; advances only the device-side counter. Every shape is fixed
    /// by (B, window) and nothing syncs with the host, so a CUDA graph can capture this once
    /// and replay it for every step whose slot is below `window`.
    pub fn forward_device_step(
        &self,
        x: &Tensor,
        (cache, window): (&KvCache, i64),
        obs: &dyn RegionObserver,
    ) -> Result<Tensor> {
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
        let (cos_sin, mask) = {
            let _m = obs.enter_module(EMBED, None);
            // (b, 1), each below the window: the step's slot is (check_device_step)
            let positions = cache.device_step_positions()?;
            let cos_sin = self.rope_tables(&positions, Some(window), x.kind())?;
            let kernel = self
                .layers
                .first()
                .is_some_and(|l| l.attn.uses_decode_kernel(x.device(), window));
            let full = if kernel {
                AttnMask::None // the kernel reads each row's padding and length itself
            } else {
                cache.device_step_additive_mask(window, x.kind(), None)?
            };
            // Sliding layers whose window the step's slots pass attend under their own mask
            // (and so not through the kernel).
            let sliding = self
                .sliding_window()
                .filter(|&w| window > w)
                .map(|w| cache.device_step_additive_mask(window, x.kind(), Some(w)))
                .transpose()?;
            (cos_sin, LayerMasks { full, sliding })
        };
        // One-row steps fold each residual add + RMSNorm into the projection after it where the
        // switch and the kernel allow (DecoderLayer::forward).
        let out = self.run_layers(
            x,
            obs,
            (
                |a, x, i| {
                    let layer = &self.layers[i];
                    a.forward_device_step(
                        x,
                        cos_sin.of(layer),
                        (cache, i),
                        (mask.of(layer), window),
                        obs,
                    )
                },
                true,
            ),
        )?;
        cache.advance_device_len()?;
        Ok(out)
    }

    /// One decode step: tokens [B] (int64, on the device) → fp32 logits [B, vocab], writing
    /// the step's K/V into `cache` and advancing it.
    pub fn step_logits(
        &self,
        tokens: &Tensor,
        cache: &mut KvCache,
        obs: &dyn RegionObserver,
    ) -> Result<Tensor> {
        let emb = self.embed(&tokens.f_view([-1, 1])?, obs)?; // (b, 1, H)
        let hidden = self.forward(&emb, cache, obs)?;
        self.logits(&hidden.f_squeeze_dim(1)?, obs)
    }

    /// [`Decoder::step_logits`] as the fixed-shape step at the cache's device-side counter over
    /// `window` slots ([`Decoder::forward_device_step`]): capturable.
    pub fn device_step_logits(
        &self,
        tokens: &Tensor,
        (cache, window): (&KvCache, i64),
        obs: &dyn RegionObserver,
    ) -> Result<Tensor> {
        let emb = self.embed(&tokens.f_view([-1, 1])?, obs)?; // (b, 1, H)
        let hidden = self.forward_device_step(&emb, (cache, window), obs)?;
        self.logits(&hidden.f_squeeze_dim(1)?, obs)
    }
}
