//! Decoder self-attention: plain MHA (no GQA, no MLA), rotate-half RoPE over the full head dim,
//! reading/writing the static KV cache (spec §2).

use super::config::DecoderConfig;
use super::kv_cache::{AttnMask, KvCache};
use super::weights::WeightPath;
use anyhow::Result;
use tch::{Kind, Tensor};

/// RoPE tables, NeoX "rotate-half" convention: inv_freq_i = θ^(−2i/d), i < d/2, duplicated over
/// both halves. No MLA even/odd regroup (spec §2, §9.1).
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
    let d = x.size()[x.dim() - 1];
    let x1 = x.f_narrow(-1, 0, d / 2)?;
    let x2 = x.f_narrow(-1, d / 2, d / 2)?;
    let rot = Tensor::f_cat(&[x2.f_neg()?, x1], -1)?;
    Ok(x.f_mul(cos)?.f_add(&rot.f_mul(sin)?)?)
}

#[derive(Debug)]
pub struct Attention {
    q: Tensor,
    k: Tensor,
    v: Tensor,
    o: Tensor,
    heads: i64,
    head_dim: i64,
}

impl Attention {
    /// `vs` points at `model.layers.{i}.self_attn`.
    pub fn load(vs: &WeightPath, cfg: &DecoderConfig) -> Result<Self> {
        Ok(Attention {
            q: vs.get("q_proj.weight")?,
            k: vs.get("k_proj.weight")?,
            v: vs.get("v_proj.weight")?,
            o: vs.get("o_proj.weight")?,
            heads: cfg.num_attention_heads,
            head_dim: cfg.head_dim,
        })
    }

    /// x [B,T,H] → [B,T,H]; writes this call's K/V into `cache` for `layer`.
    pub fn forward(
        &self,
        x: &Tensor,
        cos_sin: &(Tensor, Tensor),
        cache: &KvCache,
        layer: usize,
        mask: &AttnMask,
    ) -> Result<Tensor> {
        let (b, t, _) = x.size3()?;
        let (nh, hd) = (self.heads, self.head_dim);
        let split = |w: &Tensor| -> Result<Tensor> {
            Ok(x.f_linear::<Tensor>(w, None)?
                .f_view([b, t, nh, hd])?
                .f_transpose(1, 2)?) // (b, nh, t, hd)
        };
        let q = apply_rope(&split(&self.q)?, &cos_sin.0, &cos_sin.1)?;
        let k = apply_rope(&split(&self.k)?, &cos_sin.0, &cos_sin.1)?;
        let v = split(&self.v)?;
        let (k_all, v_all) = cache.append(layer, &k, &v)?; // (b, nh, l, hd)
        let o = match mask {
            AttnMask::None => Tensor::f_scaled_dot_product_attention::<Tensor>(
                &q, &k_all, &v_all, None, 0.0, false, None, false,
            )?,
            AttnMask::Causal => Tensor::f_scaled_dot_product_attention::<Tensor>(
                &q, &k_all, &v_all, None, 0.0, true, None, false,
            )?,
            AttnMask::Explicit(m) => Tensor::f_scaled_dot_product_attention(
                &q,
                &k_all,
                &v_all,
                Some(m),
                0.0,
                false,
                None,
                false,
            )?,
        }; // (b, nh, t, hd)
        let o = o.f_transpose(1, 2)?.f_reshape([b, t, nh * hd])?; // (b, t, h)
        Ok(o.f_linear::<Tensor>(&self.o, None)?)
    }
}

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
