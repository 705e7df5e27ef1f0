//! Decoder self-attention: MHA or GQA (query heads share K/V in groups), optional q/k/v bias,
//! rotate-half RoPE over the full head dim (optionally with Llama 3's frequency scaling),
//! reading/writing the KV cache (docs/deepseek-ocr.md §2, docs/models.md).

mod core_attention;
mod rope;

use crate::checkpoint::tensors::WeightPath;
use crate::engine::kv_cache::{AttnMask, KvCache};
use crate::ffi::{kernels, kernels_gemv};
use crate::models::layers::basic::RmsNorm;
use crate::models::layers::block_input::BlockInput;
use anyhow::Result;
pub(crate) use core_attention::masked_softmax;
use core_attention::{core_attention, repeat_kv};
use llmprof::model::module_work::{CORE, O_PROJ, QKV, ROPE_KV};
use llmprof::region::RegionObserver;
pub use rope::{apply_rope, apply_rope_fma, Rope};
use tch::Tensor;

/// The attention's shape: query heads, K/V heads (GQA when fewer), head dim, q/k/v bias.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AttnShape {
    pub heads: i64,
    pub kv_heads: i64,
    pub head_dim: i64,
    pub qkv_bias: bool,
    /// An RMSNorm (this epsilon) over each head of q and of k before RoPE, weights `q_norm` and
    /// `k_norm` [head_dim] (Qwen3).
    pub qk_norm: Option<f64>,
    /// q/k/v stored as one `qkv_proj` [q+2kv, H] (Phi-3).
    pub packed_qkv: bool,
    /// The q/k norms' scale is `norm_offset + weight` (Gemma: 1).
    pub norm_offset: f64,
    /// Each query × this before the scores' 1/√head_dim (Gemma 3 27B: √(head_dim ÷
    /// query_pre_attn_scalar)); folded into q's norm weight, or its projection, at load.
    pub q_factor: f64,
}

impl AttnShape {
    /// Plain GQA attention: separate q/k/v weights (with biases when `qkv_bias`), no q/k norms.
    /// A family with more sets the other fields on top (`..AttnShape::gqa(...)`), so adding a
    /// field touches only the families that use it.
    pub fn gqa(heads: i64, kv_heads: i64, head_dim: i64, qkv_bias: bool) -> Self {
        AttnShape {
            heads,
            kv_heads,
            head_dim,
            qkv_bias,
            qk_norm: None,
            packed_qkv: false,
            norm_offset: 0.0,
            q_factor: 1.0,
        }
    }
}

/// What the q/k/v projections give before RoPE.
enum Projected {
    /// q [B,heads,T,hd], k and v [B,kv_heads,T,hd].
    Heads(Tensor, Tensor, Tensor),
    /// The fused projection without GQA, viewed [B,T,3,heads,hd] (RoPE on q and k together).
    Packed(Tensor),
}

/// The q/k/v projections: three weights or one concatenated [q+2kv, H] (biases alike).
#[derive(Debug)]
enum Qkv {
    Split {
        q: (Tensor, Option<Tensor>),
        k: (Tensor, Option<Tensor>),
        v: (Tensor, Option<Tensor>),
    },
    Fused(Tensor, Option<Tensor>),
}

#[derive(Debug)]
pub struct Attention {
    qkv: Qkv,
    /// Qwen3's per-head norms of q and k.
    qk_norm: Option<(RmsNorm, RmsNorm)>,
    o: Tensor,
    heads: i64,
    kv_heads: i64,
    head_dim: i64,
    sdpa: bool,
    /// Decode steps and prefills on a GPU with the fused projection (a static cache): RoPE and
    /// the K/V write in llmprof's kernel (`runtime.optim.rope_kv_kernel`).
    pub rope_kv_kernel: bool,
    /// Decode steps on a GPU (head_dim 64 or 128): attention over the written slots in
    /// llmprof's kernel (`runtime.optim.decode_attention_kernel`).
    pub decode_attention_kernel: bool,
    /// ... for windows of at least this many slots.
    pub decode_attention_min_window: i64,
    /// ... its split pass on tensor cores in bf16/fp16
    /// (`runtime.optim.decode_attention_tensor_cores`).
    pub decode_attention_tensor_cores: bool,
    /// Projections of one row (decode steps at batch 1) on a GPU in bf16/fp16 in
    /// llmprof's GEMV kernel (`runtime.optim.gemv_kernel`).
    pub gemv_kernel: bool,
}

impl Attention {
    /// `vs` points at `model.layers.{i}.self_attn`. `fused` concatenates q/k/v; `sdpa` picks
    /// libtorch's fused attention over the explicit matmul + softmax.
    pub fn load(vs: &WeightPath, shape: AttnShape, fused: bool, sdpa: bool) -> Result<Self> {
        let proj = |n: &str| -> Result<(Tensor, Option<Tensor>)> {
            let w = vs.take(&format!("{n}.weight"))?;
            let b = if shape.qkv_bias {
                Some(vs.take(&format!("{n}.bias"))?)
            } else {
                None
            };
            Ok((w, b))
        };
        let (q, k, v) = match shape.packed_qkv {
            true => {
                let w = vs.take("qkv_proj.weight")?;
                let (q, kv) = (
                    shape.heads * shape.head_dim,
                    shape.kv_heads * shape.head_dim,
                );
                let part = |at: i64, n: i64| -> Result<(Tensor, Option<Tensor>)> {
                    Ok((w.f_narrow(0, at, n)?.f_contiguous()?, None))
                };
                (part(0, q)?, part(q, kv)?, part(q + kv, kv)?)
            }
            false => (proj("q_proj")?, proj("k_proj")?, proj("v_proj")?),
        };
        // The query factor rides on q's norm (after it the scale is set) or on its projection.
        let q = match (shape.q_factor, shape.qk_norm) {
            (f, None) if f != 1.0 => (
                q.0.f_mul_scalar(f)?,
                q.1.map(|b| b.f_mul_scalar(f)).transpose()?,
            ),
            _ => q,
        };
        let qkv = if fused {
            let w = Tensor::f_cat(&[&q.0, &k.0, &v.0], 0)?;
            let b = match (q.1, k.1, v.1) {
                (Some(a), Some(b), Some(c)) => Some(Tensor::f_cat(&[a, b, c], 0)?),
                _ => None,
            };
            Qkv::Fused(w, b)
        } else {
            Qkv::Split { q, k, v }
        };
        let qk_norm = match shape.qk_norm {
            Some(eps) => Some((
                RmsNorm::load(&vs.sub("q_norm"), eps)?
                    .with_offset(shape.norm_offset)?
                    .scaled(shape.q_factor)?,
                RmsNorm::load(&vs.sub("k_norm"), eps)?.with_offset(shape.norm_offset)?,
            )),
            None => None,
        };
        Ok(Attention {
            qkv,
            qk_norm,
            o: vs.take("o_proj.weight")?,
            heads: shape.heads,
            kv_heads: shape.kv_heads,
            head_dim: shape.head_dim,
            sdpa,
            rope_kv_kernel: false,
            decode_attention_kernel: false,
            decode_attention_min_window: 0,
            decode_attention_tensor_cores: false,
            gemv_kernel: false,
        })
    }

    /// The q/k/v projections of x [B,T,H], with the per-head q/k norms where the model has
    /// them, before RoPE.
    fn qkv(&self, x: &Tensor) -> Result<Projected> {
        let p = self.project(x)?;
        Ok(match (&self.qk_norm, p) {
            (Some((qn, kn)), Projected::Heads(q, k, v)) => {
                Projected::Heads(qn.forward(&q)?, kn.forward(&k)?, v)
            }
            (_, p) => p,
        })
    }

    /// The q/k/v projections of x [B,T,H].
    fn project(&self, x: &Tensor) -> Result<Projected> {
        let (b, t, _) = x.size3()?;
        let (nh, nkv, hd) = (self.heads, self.kv_heads, self.head_dim);
        let heads = |y: Tensor, n: i64| -> Result<Tensor> {
            Ok(y.f_view([b, t, n, hd])?.f_transpose(1, 2)?) // (b, n, t, hd)
        };
        let lin = |p: &(Tensor, Option<Tensor>)| self.linear(x, &p.0, p.1.as_ref());
        Ok(match &self.qkv {
            Qkv::Split { q, k, v } => Projected::Heads(
                heads(lin(q)?, nh)?,
                heads(lin(k)?, nkv)?,
                heads(lin(v)?, nkv)?,
            ),
            // Heads apart where GQA or the q/k norms need them.
            Qkv::Fused(w, bias) if nkv != nh || self.qk_norm.is_some() => {
                let y = self.linear(x, w, bias.as_ref())?;
                let parts = y.f_split_with_sizes([nh * hd, nkv * hd, nkv * hd], -1)?;
                Projected::Heads(
                    heads(parts[0].shallow_clone(), nh)?,
                    heads(parts[1].shallow_clone(), nkv)?,
                    heads(parts[2].shallow_clone(), nkv)?,
                )
            }
            Qkv::Fused(w, bias) => Projected::Packed(
                self.linear(x, w, bias.as_ref())?
                    .f_view([b, t, 3, nh, hd])?,
            ),
        })
    }

    /// RoPE on q and k of the projections → q [B,heads,T,hd], k and v [B,kv_heads,T,hd].
    fn rope(&self, p: Projected, cos_sin: &(Tensor, Tensor)) -> Result<(Tensor, Tensor, Tensor)> {
        match p {
            Projected::Heads(q, k, v) => Ok((
                apply_rope(&q, &cos_sin.0, &cos_sin.1)?,
                apply_rope(&k, &cos_sin.0, &cos_sin.1)?,
                v,
            )),
            Projected::Packed(y) => {
                // RoPE on q and k together: half the kernels of two separate calls.
                let (cos, sin) = (&cos_sin.0, &cos_sin.1); // (b, 1, t, hd)
                let cos = cos.f_transpose(1, 2)?.f_unsqueeze(2)?; // (b, t, 1, 1, hd)
                let sin = sin.f_transpose(1, 2)?.f_unsqueeze(2)?;
                let qk = apply_rope_fma(&y.f_narrow(2, 0, 2)?, &cos, &sin)?; // (b, t, 2, nh, hd)
                let part = |src: &Tensor, i: i64| -> Result<Tensor> {
                    Ok(src.f_select(2, i)?.f_transpose(1, 2)?) // (b, nh, t, hd)
                };
                Ok((part(&qk, 0)?, part(&qk, 1)?, part(&y, 2)?))
            }
        }
    }

    /// softmax(q·kᵀ/√d + mask)·v → the heads' outputs [B,T,heads·hd], before o_proj; q
    /// [B,heads,T,hd], k/v [B,kv_heads,L,hd]. GQA: one query token per row folds each group's
    /// heads onto the query axis (q [B,kv_heads,group,hd], no K/V copy); longer queries on a GPU
    /// under a causal mask or none go to libtorch's fused attention with its GQA form (each K/V
    /// head read for its group: cuDNN's kernel), else repeat K/V per group (two copies of K and
    /// V a layer: 0.71 of a Llama-3.1-8B prefill's 1.70 ms of attention, reports/
    /// performance-history.md, round 3 session 32).
    fn attend_heads(&self, q: &Tensor, k: &Tensor, v: &Tensor, mask: &AttnMask) -> Result<Tensor> {
        let (b, _, t, _) = q.size4()?;
        let g = self.heads / self.kv_heads;
        if g > 1 && t == 1 {
            let qg = q.f_reshape([b, self.kv_heads, g, self.head_dim])?;
            return self.one_token_heads(&self.core((&qg, k, v), mask, false)?); // (b, nkv, g, hd)
        }
        let fused_gqa = g > 1
            && self.sdpa
            && q.device().is_cuda()
            && matches!(mask, AttnMask::None | AttnMask::Causal);
        let o = if fused_gqa || g == 1 {
            self.core((q, k, v), mask, fused_gqa)?
        } else {
            self.core((q, &repeat_kv(k, g)?, &repeat_kv(v, g)?), mask, false)?
        }; // (b, nh, t, hd)
        Ok(o.f_transpose(1, 2)?
            .f_reshape([b, t, self.heads * self.head_dim])?)
    }

    /// One query token per row: the heads' outputs (any [B, .., .., hd] layout whose memory order
    /// is head-major, as [B, heads, 1, hd] or GQA's [B, kv_heads, group, hd]) → [B,1,heads·hd].
    fn one_token_heads(&self, o: &Tensor) -> Result<Tensor> {
        let b = o.size4()?.0;
        Ok(o.f_reshape([b, 1, self.heads * self.head_dim])?)
    }

    fn o_proj(&self, o: &Tensor) -> Result<Tensor> {
        self.linear(o, &self.o, None)
    }

    /// `x·wᵀ (+ bias)`, in llmprof's GEMV kernel where it is on and takes the call.
    fn linear(&self, x: &Tensor, w: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
        Ok(kernels_gemv::linear_or_torch(x, w, bias, self.gemv_kernel)?)
    }

    /// [`Attention::attend_heads`] as the module `core`, then o_proj as `o_proj` → [B,T,H].
    fn attend_marked(
        &self,
        (q, k, v): (&Tensor, &Tensor, &Tensor),
        mask: &AttnMask,
        obs: &dyn RegionObserver,
    ) -> Result<Tensor> {
        let o = {
            let _m = obs.enter_module(CORE, None);
            self.attend_heads(q, k, v, mask)?
        };
        let _m = obs.enter_module(O_PROJ, None);
        self.o_proj(&o)
    }

    /// softmax(q·kᵀ/√d + mask)·v with matching head counts (`gqa`: k and v hold one head per
    /// group of q's, in libtorch's fused attention).
    fn core(&self, qkv: (&Tensor, &Tensor, &Tensor), mask: &AttnMask, gqa: bool) -> Result<Tensor> {
        let scale = 1.0 / (self.head_dim as f64).sqrt();
        core_attention(qkv, mask, (self.sdpa, gqa), scale)
    }

    /// x [B,T,H] → [B,T,H] with no cache: every token attends within `x` as `mask` allows (an
    /// encoder's pass).
    pub fn forward_uncached(
        &self,
        x: &Tensor,
        cos_sin: &(Tensor, Tensor),
        mask: &AttnMask,
    ) -> Result<Tensor> {
        let (q, k, v) = self.rope(self.qkv(x)?, cos_sin)?;
        self.o_proj(&self.attend_heads(&q, &k, &v, mask)?)
    }

    /// x [B,T,H] → [B,T,H]; writes this call's K/V into `cache` for `layer`. On a GPU with the
    /// fused projection and a static cache, RoPE and the K/V write run as llmprof's kernel
    /// (`runtime.optim.rope_kv_kernel`), as in the decode step. Marks the modules `qkv`,
    /// `rope_kv`, `core` and `o_proj`.
    pub fn forward(
        &self,
        x: &Tensor,
        cos_sin: &(Tensor, Tensor),
        (cache, layer): (&mut KvCache, usize),
        mask: &AttnMask,
        obs: &dyn RegionObserver,
    ) -> Result<Tensor> {
        let (b, t, _) = x.size3()?;
        let projection = self
            .rope_kv_projection(x.device())
            .filter(|_| b * t <= kernels::ROPE_KV_MAX_TOKENS);
        if let Some(w) = projection {
            if let Some(buffers) = cache.static_buffers_for(layer, t)? {
                let q = self.project_rope_kv(BlockInput::Normed(x), w, cos_sin, buffers, obs)?;
                let (k_all, v_all) = cache.window(layer, cache.len() + t)?;
                return self.attend_marked((&q, &k_all, &v_all), mask, obs);
            }
        }
        let p = {
            let _m = obs.enter_module(QKV, None);
            self.qkv(x)?
        };
        let (q, k_all, v_all) = {
            let _m = obs.enter_module(ROPE_KV, None);
            let (q, k, v) = self.rope(p, cos_sin)?;
            let (k_all, v_all) = cache.append(layer, &k, &v)?; // (b, nh, l, hd)
            (q, k_all, v_all)
        };
        self.attend_marked((&q, &k_all, &v_all), mask, obs)
    }

    /// The fused projection of x [B,T,H] (module `qkv`; already done where `x` is the projection's
    /// output), then RoPE and the K/V write in llmprof's kernel (`rope_kv`) into
    /// `(k_cache, v_cache, slot)` at slots slot … slot + T − 1 → q [B, heads, T, hd]. The eager
    /// formula it replaces: addcmul (one FMA) without GQA, else mul + add.
    fn project_rope_kv(
        &self,
        x: BlockInput,
        (w, bias): (&Tensor, Option<&Tensor>),
        cos_sin: &(Tensor, Tensor),
        (k_cache, v_cache, slot): (&Tensor, &Tensor, &Tensor),
        obs: &dyn RegionObserver,
    ) -> Result<Tensor> {
        let y = match x {
            BlockInput::Projected(y) => y.shallow_clone(),
            BlockInput::Normed(x) => {
                let _m = obs.enter_module(QKV, None);
                self.linear(x, w, bias)? // (b, t, (nh + 2 nkv)·hd)
            }
        };
        let _m = obs.enter_module(ROPE_KV, None);
        Ok(kernels::rope_kv(
            &y,
            (&cos_sin.0, &cos_sin.1),
            slot,
            (self.heads, self.kv_heads),
            self.heads == self.kv_heads,
            k_cache,
            v_cache,
        )?)
    }

    /// The fused q/k/v weight and bias a call on `device` projects with before RoPE and the K/V
    /// write in llmprof's kernel (`rope_kv_kernel`; the kernel takes the projection as it comes,
    /// not with q/k norms between): in a decode step, the projection a folded add + RMSNorm may
    /// run ([`BlockInput::Projected`]); None where the call projects otherwise.
    pub fn rope_kv_projection(&self, device: tch::Device) -> Option<(&Tensor, Option<&Tensor>)> {
        match (
            self.rope_kv_kernel && self.qk_norm.is_none() && device.is_cuda(),
            &self.qkv,
        ) {
            (true, Qkv::Fused(w, bias)) => Some((w, bias.as_ref())),
            _ => None,
        }
    }

    /// Whether decode steps on `device` over `window` KV slots attend through llmprof's kernel
    /// (then they need no mask).
    pub fn uses_decode_kernel(&self, device: tch::Device, window: i64) -> bool {
        self.decode_attention_kernel
            && window >= self.decode_attention_min_window
            && window <= kernels::DECODE_ATTENTION_MAX_WINDOW
            && device.is_cuda()
            && matches!(self.head_dim, 64 | 128)
    }

    /// One token per row [B,1,H] at the cache's device-side slot, attending over the first
    /// `window` slots under `mask` (from [`KvCache::device_step_mask`]), or, given no mask, over
    /// the written slots only through llmprof's kernel. Capturable. Marks the modules as
    /// [`Attention::forward`] does.
    pub fn forward_device_step(
        &self,
        x: BlockInput,
        cos_sin: &(Tensor, Tensor),
        (cache, layer): (&KvCache, usize),
        (mask, window): (&AttnMask, i64),
        obs: &dyn RegionObserver,
    ) -> Result<Tensor> {
        let (q, k_all, v_all) = match self.rope_kv_projection(x.device()) {
            Some(w) => {
                let buffers = cache.device_step_buffers(layer);
                let q = self.project_rope_kv(x, w, cos_sin, buffers, obs)?;
                let (k_all, v_all) = cache.window(layer, window)?;
                (q, k_all, v_all)
            }
            None => {
                let x = x.normed()?;
                let p = {
                    let _m = obs.enter_module(QKV, None);
                    self.qkv(x)?
                };
                let _m = obs.enter_module(ROPE_KV, None);
                let (q, k, v) = self.rope(p, cos_sin)?;
                let (k_all, v_all) = cache.append_at_device_len(layer, &k, &v, window)?;
                (q, k_all, v_all)
            }
        };
        // The decoder passes no mask where the step may attend through the kernel (a sliding
        // layer past its window gets its own mask, which the kernel does not apply).
        if matches!(mask, AttnMask::None) && self.uses_decode_kernel(x.device(), window) {
            let o = {
                let _m = obs.enter_module(CORE, None);
                let (k_cache, v_cache, len) = cache.device_step_buffers(layer);
                let o = kernels::decode_attention(
                    &q.f_contiguous()?,
                    (k_cache, v_cache),
                    (cache.device_pad(), len),
                    window,
                    self.decode_attention_tensor_cores,
                )?; // (b, nh, 1, hd)
                self.one_token_heads(&o)?
            };
            let _m = obs.enter_module(O_PROJ, None);
            return self.o_proj(&o);
        }
        self.attend_marked((&q, &k_all, &v_all), mask, obs)
    }
}

#[cfg(test)]
mod gpu_tests;
