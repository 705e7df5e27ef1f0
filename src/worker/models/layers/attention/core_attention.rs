//! The attention core, softmax(q·kᵀ·scale + mask)·v, in its two forms (libtorch's fused
//! attention, HF's eager matmul + softmax), and HF's `repeat_kv` for grouped-query heads.
use crate::engine::kv_cache::AttnMask;
use anyhow::Result;
use tch::{Kind, Tensor};

/// [B,kv,L,hd] → [B,kv·g,L,hd], each K/V head repeated for its `g` query heads (HF `repeat_kv`).
pub(super) fn repeat_kv(x: &Tensor, g: i64) -> Result<Tensor> {
    let (b, n, l, d) = x.size4()?;
    Ok(x.f_unsqueeze(2)?
        .f_expand([b, n, g, l, d], false)?
        .f_reshape([b, n * g, l, d])?)
}

/// softmax(q·kᵀ·scale + mask)·v with matching (or broadcasting, in the math form) head counts:
/// libtorch's fused attention where `sdpa` (`gqa`: its grouped-query form, q's heads a multiple
/// of k's and v's, each K/V head serving its consecutive group), else [`math_attention`].
pub(super) fn core_attention(
    (q, k, v): (&Tensor, &Tensor, &Tensor),
    mask: &AttnMask,
    (sdpa, gqa): (bool, bool),
    scale: f64,
) -> Result<Tensor> {
    Ok(if sdpa {
        let (m, causal) = match mask {
            AttnMask::None => (None, false),
            AttnMask::Causal => (None, true),
            AttnMask::Explicit(m) | AttnMask::Additive(m) => (Some(m), false),
        };
        Tensor::f_scaled_dot_product_attention(q, k, v, m, 0.0, causal, Some(scale), gqa)?
    } else {
        math_attention(q, k, v, mask, scale)?
    })
}

/// HF-style eager attention: scores in the model dtype, fp32 softmax, masked keys at −∞.
fn math_attention(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    mask: &AttnMask,
    scale: f64,
) -> Result<Tensor> {
    let scores = q.f_matmul(&k.f_transpose(-2, -1)?)?.f_mul_scalar(scale)?; // (b, nh, t, l)
    Ok(masked_softmax(&scores, mask)?
        .f_to_kind(q.kind())?
        .f_matmul(v)?)
}

/// softmax over the last dim of `scores` [B,heads,T,L] in fp32 with the keys `mask` hides at −∞
/// (a causal mask aligned top-left) → fp32 probabilities.
pub(crate) fn masked_softmax(scores: &Tensor, mask: &AttnMask) -> Result<Tensor> {
    let hidden = match mask {
        AttnMask::None => None,
        AttnMask::Causal => {
            let (t, l) = (scores.size()[2], scores.size()[3]);
            Some(
                Tensor::f_ones([t, l], (Kind::Bool, scores.device()))?
                    .f_tril(0)?
                    .f_logical_not()?,
            )
        }
        AttnMask::Explicit(m) => Some(m.f_logical_not()?),
        AttnMask::Additive(m) => Some(m.f_isneginf()?),
    };
    let scores = match hidden {
        Some(h) => scores.f_masked_fill(&h, f64::NEG_INFINITY)?,
        None => scores.shallow_clone(),
    };
    Ok(scores.f_softmax(-1, Kind::Float)?)
}
