//! Decoder self-attention: MHA or GQA (query heads share K/V in groups), optional q/k/v bias,
//! rotate-half RoPE over the full head dim (optionally with Llama 3's frequency scaling),
//! reading/writing the KV cache (docs/deepseek-ocr.md §2, docs/models.md).

use crate::checkpoint::tensors::WeightPath;
use crate::engine::kv_cache::{AttnMask, KvCache};
use crate::ffi::kernels;
use anyhow::Result;
use llmprof::model::dense::RopeScaling;
use tch::{Kind, Tensor};

/// RoPE tables, NeoX "rotate-half" convention: inv_freq_i = θ^(−2i/d), i < d/2, duplicated over
/// both halves. No MLA even/odd regroup (docs/deepseek-ocr.md §2, §9.1).
#[derive(Debug)]
pub struct Rope {
    inv_freq: Tensor,
}

impl Rope {
    pub fn new(head_dim: i64, theta: f64, device: tch::Device) -> Result<Self> {
        let i = Tensor::f_arange_start_step(0, head_dim, 2, (Kind::Float, device))?; // (d/2)
        let inv_freq = i
            .f_div_scalar(head_dim as f64)?
            .f_mul_scalar(-theta.ln())?
            .f_exp()?;
        Ok(Rope { inv_freq })
    }

    /// [`Rope::new`] with `scaling` applied to the frequencies (HF
    /// `_compute_llama3_parameters`): wavelengths above original/low_freq_factor are divided by
    /// `factor`, those below original/high_freq_factor kept, and the band between interpolated.
    pub fn with_scaling(
        head_dim: i64,
        theta: f64,
        scaling: Option<&RopeScaling>,
        device: tch::Device,
    ) -> Result<Self> {
        let rope = Self::new(head_dim, theta, device)?;
        let Some(s) = scaling else {
            return Ok(rope);
        };
        let old = s.original_max_position_embeddings as f64;
        let low_wavelen = old / s.low_freq_factor;
        let high_wavelen = old / s.high_freq_factor;
        let inv = &rope.inv_freq;
        let wavelen = inv
            .f_reciprocal()?
            .f_mul_scalar(2.0 * std::f64::consts::PI)?;
        let scaled = inv.f_div_scalar(s.factor)?;
        let llama = scaled.f_where_self(&wavelen.f_gt(low_wavelen)?, inv)?;
        let smooth = wavelen
            .f_reciprocal()?
            .f_mul_scalar(old)?
            .f_sub_scalar(s.low_freq_factor)?
            .f_div_scalar(s.high_freq_factor - s.low_freq_factor)?;
        // (1 − smooth)·llama/factor + smooth·llama
        let smoothed = smooth
            .f_neg()?
            .f_add_scalar(1.0)?
            .f_mul(&llama.f_div_scalar(s.factor)?)?
            .f_add(&smooth.f_mul(&llama)?)?;
        let medium = wavelen
            .f_lt(high_wavelen)?
            .f_logical_not()?
            .f_logical_and(&wavelen.f_gt(low_wavelen)?.f_logical_not()?)?;
        Ok(Rope {
            inv_freq: smoothed.f_where_self(&medium, &llama)?,
        })
    }

    /// positions [B,T] (int) → (cos, sin) [B,1,T,d], computed in fp32 and cast to `kind`.
    pub fn cos_sin(&self, positions: &Tensor, kind: Kind) -> Result<(Tensor, Tensor)> {
        let freqs = positions
            .f_to_kind(Kind::Float)?
            .f_unsqueeze(-1)?
            .f_mul(&self.inv_freq)?; // (b, t, d/2)
        let emb = Tensor::f_cat(&[&freqs, &freqs], -1)?.f_unsqueeze(1)?; // (b, 1, t, d)
        Ok((emb.f_cos()?.f_to_kind(kind)?, emb.f_sin()?.f_to_kind(kind)?))
    }
}

/// x·cos + rotate_half(x)·sin with rotate_half([x1, x2]) = [−x2, x1].
pub fn apply_rope(x: &Tensor, cos: &Tensor, sin: &Tensor) -> Result<Tensor> {
    Ok(x.f_mul(cos)?.f_add(&rotate_half(x)?.f_mul(sin)?)?)
}

/// [`apply_rope`] with one fused multiply-add (`addcmul`) for the second term.
pub fn apply_rope_fma(x: &Tensor, cos: &Tensor, sin: &Tensor) -> Result<Tensor> {
    Ok(x.f_mul(cos)?.f_addcmul_(&rotate_half(x)?, sin)?)
}

/// rotate_half([x1, x2]) = [−x2, x1] over the last dim.
fn rotate_half(x: &Tensor) -> Result<Tensor> {
    let d = x.size()[x.dim() - 1];
    Ok(Tensor::f_cat(
        &[
            x.f_narrow(-1, d / 2, d / 2)?.f_neg()?,
            x.f_narrow(-1, 0, d / 2)?,
        ],
        -1,
    )?)
}

/// The attention's shape: query heads, K/V heads (GQA when fewer), head dim, q/k/v bias.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttnShape {
    pub heads: i64,
    pub kv_heads: i64,
    pub head_dim: i64,
    pub qkv_bias: bool,
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
}

impl Attention {
    /// `vs` points at `model.layers.{i}.self_attn`. `fused` concatenates q/k/v; `sdpa` picks
    /// libtorch's fused attention over the explicit matmul + softmax.
    pub fn load(vs: &WeightPath, shape: AttnShape, fused: bool, sdpa: bool) -> Result<Self> {
        let proj = |n: &str| -> Result<(Tensor, Option<Tensor>)> {
            let w = vs.get(&format!("{n}.weight"))?;
            let b = if shape.qkv_bias {
                Some(vs.get(&format!("{n}.bias"))?)
            } else {
                None
            };
            Ok((w, b))
        };
        let (q, k, v) = (proj("q_proj")?, proj("k_proj")?, proj("v_proj")?);
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
        Ok(Attention {
            qkv,
            o: vs.get("o_proj.weight")?,
            heads: shape.heads,
            kv_heads: shape.kv_heads,
            head_dim: shape.head_dim,
            sdpa,
            rope_kv_kernel: false,
            decode_attention_kernel: false,
            decode_attention_min_window: 0,
        })
    }

    /// x [B,T,H] → q [B,heads,T,hd], k and v [B,kv_heads,T,hd] (RoPE on q and k).
    fn project(&self, x: &Tensor, cos_sin: &(Tensor, Tensor)) -> Result<(Tensor, Tensor, Tensor)> {
        let (b, t, _) = x.size3()?;
        let (nh, nkv, hd) = (self.heads, self.kv_heads, self.head_dim);
        let heads = |y: Tensor, n: i64| -> Result<Tensor> {
            Ok(y.f_view([b, t, n, hd])?.f_transpose(1, 2)?) // (b, n, t, hd)
        };
        let lin = |p: &(Tensor, Option<Tensor>)| x.f_linear(&p.0, p.1.as_ref());
        let (q, k, v) = match &self.qkv {
            Qkv::Split { q, k, v } => (
                heads(lin(q)?, nh)?,
                heads(lin(k)?, nkv)?,
                heads(lin(v)?, nkv)?,
            ),
            Qkv::Fused(w, bias) if nkv != nh => {
                let y = x.f_linear(w, bias.as_ref())?;
                let parts = y.f_split_with_sizes([nh * hd, nkv * hd, nkv * hd], -1)?;
                (
                    heads(parts[0].shallow_clone(), nh)?,
                    heads(parts[1].shallow_clone(), nkv)?,
                    heads(parts[2].shallow_clone(), nkv)?,
                )
            }
            Qkv::Fused(w, bias) => {
                let y = x.f_linear(w, bias.as_ref())?.f_view([b, t, 3, nh, hd])?;
                // RoPE on q and k together: half the kernels of two separate calls.
                let (cos, sin) = (&cos_sin.0, &cos_sin.1); // (b, 1, t, hd)
                let cos = cos.f_transpose(1, 2)?.f_unsqueeze(2)?; // (b, t, 1, 1, hd)
                let sin = sin.f_transpose(1, 2)?.f_unsqueeze(2)?;
                let qk = apply_rope_fma(&y.f_narrow(2, 0, 2)?, &cos, &sin)?; // (b, t, 2, nh, hd)
                let part = |src: &Tensor, i: i64| -> Result<Tensor> {
                    Ok(src.f_select(2, i)?.f_transpose(1, 2)?) // (b, nh, t, hd)
                };
                return Ok((part(&qk, 0)?, part(&qk, 1)?, part(&y, 2)?));
            }
        };
        Ok((
            apply_rope(&q, &cos_sin.0, &cos_sin.1)?,
            apply_rope(&k, &cos_sin.0, &cos_sin.1)?,
            v,
        ))
    }

    /// softmax(q·kᵀ/√d + mask)·v → o_proj [B,T,H]; q [B,heads,T,hd], k/v [B,kv_heads,L,hd].
    /// GQA: one query token per row folds each group's heads onto the query axis (q
    /// [B,kv_heads,group,hd], no K/V copy); longer queries repeat K/V per group.
    fn attend(&self, q: &Tensor, k: &Tensor, v: &Tensor, mask: &AttnMask) -> Result<Tensor> {
        let (b, _, t, _) = q.size4()?;
        let g = self.heads / self.kv_heads;
        if g > 1 && t == 1 {
            let qg = q.f_reshape([b, self.kv_heads, g, self.head_dim])?;
            return self.out_one_token(&self.core(&qg, k, v, mask)?); // (b, nkv, g, hd)
        }
        let (k, v) = if g > 1 {
            (repeat_kv(k, g)?, repeat_kv(v, g)?)
        } else {
            (k.shallow_clone(), v.shallow_clone())
        };
        let o = self.core(q, &k, &v, mask)?; // (b, nh, t, hd)
        let o = o
            .f_transpose(1, 2)?
            .f_reshape([b, t, self.heads * self.head_dim])?;
        Ok(o.f_linear::<Tensor>(&self.o, None)?)
    }

    /// One query token per row: the heads' outputs (any [B, .., .., hd] layout whose memory order
    /// is head-major, as [B, heads, 1, hd] or GQA's [B, kv_heads, group, hd]) → o_proj [B,1,H].
    fn out_one_token(&self, o: &Tensor) -> Result<Tensor> {
        let b = o.size4()?.0;
        let o = o.f_reshape([b, 1, self.heads * self.head_dim])?;
        Ok(o.f_linear::<Tensor>(&self.o, None)?)
    }

    /// softmax(q·kᵀ/√d + mask)·v with matching head counts.
    fn core(&self, q: &Tensor, k: &Tensor, v: &Tensor, mask: &AttnMask) -> Result<Tensor> {
        Ok(if self.sdpa {
            let (m, causal) = match mask {
                AttnMask::None => (None, false),
                AttnMask::Causal => (None, true),
                AttnMask::Explicit(m) | AttnMask::Additive(m) => (Some(m), false),
            };
            Tensor::f_scaled_dot_product_attention(q, k, v, m, 0.0, causal, None, false)?
        } else {
            math_attention(q, k, v, mask)?
        })
    }

    /// x [B,T,H] → [B,T,H] with no cache: every token attends within `x` as `mask` allows (an
    /// encoder's pass).
    pub fn forward_uncached(
        &self,
        x: &Tensor,
        cos_sin: &(Tensor, Tensor),
        mask: &AttnMask,
    ) -> Result<Tensor> {
        let (q, k, v) = self.project(x, cos_sin)?;
        self.attend(&q, &k, &v, mask)
    }

    /// x [B,T,H] → [B,T,H]; writes this call's K/V into `cache` for `layer`. On a GPU with the
    /// fused projection and a static cache, RoPE and the K/V write run as llmprof's kernel
    /// (`runtime.optim.rope_kv_kernel`), as in the decode step.
    pub fn forward(
        &self,
        x: &Tensor,
        cos_sin: &(Tensor, Tensor),
        cache: &mut KvCache,
        layer: usize,
        mask: &AttnMask,
    ) -> Result<Tensor> {
        let (b, t, _) = x.size3()?;
        if let (true, true, Qkv::Fused(w, bias)) = (
            self.rope_kv_kernel && b * t <= kernels::ROPE_KV_MAX_TOKENS,
            x.device().is_cuda(),
            &self.qkv,
        ) {
            if let Some(buffers) = cache.static_buffers_for(layer, t)? {
                let q = self.project_rope_kv(x, (w, bias.as_ref()), cos_sin, buffers)?;
                let (k_all, v_all) = cache.window(layer, cache.len() + t)?;
                return self.attend(&q, &k_all, &v_all, mask);
            }
        }
        let (q, k, v) = self.project(x, cos_sin)?;
        let (k_all, v_all) = cache.append(layer, &k, &v)?; // (b, nh, l, hd)
        self.attend(&q, &k_all, &v_all, mask)
    }

    /// The fused projection of x [B,T,H], then RoPE and the K/V write in llmprof's kernel into
    /// `(k_cache, v_cache, slot)` at slots slot … slot + T − 1 → q [B, heads, T, hd]. The eager
    /// formula it replaces: addcmul (one FMA) without GQA, else mul + add.
    fn project_rope_kv(
        &self,
        x: &Tensor,
        (w, bias): (&Tensor, Option<&Tensor>),
        cos_sin: &(Tensor, Tensor),
        (k_cache, v_cache, slot): (&Tensor, &Tensor, &Tensor),
    ) -> Result<Tensor> {
        let y = x.f_linear(w, bias)?; // (b, t, (nh + 2 nkv)·hd)
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

    /// Whether decode steps on `device` over `window` KV slots attend through llmprof's kernel
    /// (then they need no mask).
    pub fn uses_decode_kernel(&self, device: tch::Device, window: i64) -> bool {
        self.decode_attention_kernel
            && window >= self.decode_attention_min_window
            && device.is_cuda()
            && matches!(self.head_dim, 64 | 128)
    }

    /// One token per row [B,1,H] at the cache's device-side slot, attending over the first
    /// `window` slots under `mask` (from [`KvCache::device_step_mask`]), or over the written
    /// slots only through llmprof's kernel. Capturable.
    pub fn forward_device_step(
        &self,
        x: &Tensor,
        cos_sin: &(Tensor, Tensor),
        cache: &KvCache,
        layer: usize,
        mask: &AttnMask,
        window: i64,
    ) -> Result<Tensor> {
        let (q, k_all, v_all) = match (self.rope_kv_kernel, x.device().is_cuda(), &self.qkv) {
            (true, true, Qkv::Fused(w, bias)) => {
                let buffers = cache.device_step_buffers(layer);
                let q = self.project_rope_kv(x, (w, bias.as_ref()), cos_sin, buffers)?;
                let (k_all, v_all) = cache.window(layer, window)?;
                (q, k_all, v_all)
            }
            _ => {
                let (q, k, v) = self.project(x, cos_sin)?;
                let (k_all, v_all) = cache.append_at_device_len(layer, &k, &v, window)?;
                (q, k_all, v_all)
            }
        };
        if self.uses_decode_kernel(x.device(), window) {
            let (k_cache, v_cache, len) = cache.device_step_buffers(layer);
            let o = kernels::decode_attention(
                &q.f_contiguous()?,
                (k_cache, v_cache),
                (cache.device_pad(), len),
                window,
            )?; // (b, nh, 1, hd)
            return self.out_one_token(&o);
        }
        self.attend(&q, &k_all, &v_all, mask)
    }
}

/// [B,kv,L,hd] → [B,kv·g,L,hd], each K/V head repeated for its `g` query heads (HF `repeat_kv`).
fn repeat_kv(x: &Tensor, g: i64) -> Result<Tensor> {
    let (b, n, l, d) = x.size4()?;
    Ok(x.f_unsqueeze(2)?
        .f_expand([b, n, g, l, d], false)?
        .f_reshape([b, n * g, l, d])?)
}

/// HF-style eager attention: scores in the model dtype, fp32 softmax, masked keys at −∞.
fn math_attention(q: &Tensor, k: &Tensor, v: &Tensor, mask: &AttnMask) -> Result<Tensor> {
    let hd = q.size()[3];
    let scores = q
        .f_matmul(&k.f_transpose(-2, -1)?)?
        .f_mul_scalar(1.0 / (hd as f64).sqrt())?; // (b, nh, t, l)
    let hidden = match mask {
        AttnMask::None => None,
        AttnMask::Causal => {
            let (t, l) = (scores.size()[2], scores.size()[3]);
            Some(
                Tensor::f_ones([t, l], (Kind::Bool, q.device()))?
                    .f_tril(0)?
                    .f_logical_not()?,
            )
        }
        AttnMask::Explicit(m) => Some(m.f_logical_not()?),
        AttnMask::Additive(m) => Some(m.f_isneginf()?),
    };
    let scores = match hidden {
        Some(h) => scores.f_masked_fill(&h, f64::NEG_INFINITY)?,
        None => scores,
    };
    Ok(scores
        .f_softmax(-1, Kind::Float)?
        .f_to_kind(q.kind())?
        .f_matmul(v)?)
}

#[cfg(test)]
mod gpu_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use tch::Device;

    #[test]
    fn rope_hand_case() {
        // d = 4, θ = 100: inv_freq = [1, 0.1]. Position 1 rotates pair (x0, x2) by 1 rad and
        // (x1, x3) by 0.1 rad.
        let rope = Rope::new(4, 100.0, Device::Cpu).unwrap();
        let pos = Tensor::from_slice(&[1i64]).view([1, 1]);
        let (cos, sin) = rope.cos_sin(&pos, Kind::Double).unwrap();
        let x = Tensor::from_slice(&[1f64, 2., 3., 4.]).view([1, 1, 1, 4]);
        let y = Vec::<f64>::try_from(&apply_rope(&x, &cos, &sin).unwrap().view([4])).unwrap();
        let (c1, s1, c2, s2) = (1f64.cos(), 1f64.sin(), 0.1f64.cos(), 0.1f64.sin());
        let want = [
            1. * c1 - 3. * s1,
            2. * c2 - 4. * s2,
            3. * c1 + 1. * s1,
            4. * c2 + 2. * s2,
        ];
        for (a, b) in y.iter().zip(want) {
            assert!((a - b).abs() < 1e-6, "{y:?} vs {want:?}");
        }
        // Position 0 is the identity.
        let (cos0, sin0) = rope
            .cos_sin(&Tensor::from_slice(&[0i64]).view([1, 1]), Kind::Double)
            .unwrap();
        assert!(apply_rope(&x, &cos0, &sin0)
            .unwrap()
            .allclose(&x, 1e-12, 1e-12, false));
    }
}
