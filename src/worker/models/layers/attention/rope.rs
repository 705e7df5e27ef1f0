//! Rotary position embeddings, NeoX "rotate-half" convention, with Llama 3's frequency scaling.
use anyhow::Result;
use llmprof::model::dense::RopeScaling;
use tch::{Kind, Tensor};

/// RoPE tables, NeoX "rotate-half" convention: inv_freq_i = θ^(−2i/d), i < d/2, duplicated over
/// both halves. No MLA even/odd regroup (docs/deepseek-ocr.md §2, §9.1).
#[derive(Debug)]
pub struct Rope {
    inv_freq: Tensor,
    /// cos and sin × this (YaRN's attention factor; 1 elsewhere).
    scale: f64,
}

impl Rope {
    pub fn new(head_dim: i64, theta: f64, device: tch::Device) -> Result<Self> {
        let i = Tensor::f_arange_start_step(0, head_dim, 2, (Kind::Float, device))?; // (d/2)
        let inv_freq = i
            .f_div_scalar(head_dim as f64)?
            .f_mul_scalar(-theta.ln())?
            .f_exp()?;
        Ok(Rope {
            inv_freq,
            scale: 1.0,
        })
    }

    /// Tables from given inverse frequencies (d/2 of them), cos and sin × `scale` (YaRN).
    pub fn from_inv_freq(inv_freq: &[f64], scale: f64, device: tch::Device) -> Result<Self> {
        Ok(Rope {
            inv_freq: Tensor::f_from_slice(inv_freq)?
                .f_to_kind(Kind::Float)?
                .f_to_device(device)?,
            scale,
        })
    }

    /// These tables for positions ÷ `factor` (linear RoPE scaling: each frequency ÷ `factor`).
    pub fn slowed(self, factor: f64) -> Result<Self> {
        Ok(Rope {
            inv_freq: self.inv_freq.f_div_scalar(factor)?,
            ..self
        })
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
            scale: 1.0,
        })
    }

    /// positions [B,T] (int) → (cos, sin) [B,1,T,d], computed in fp32 and cast to `kind`.
    pub fn cos_sin(&self, positions: &Tensor, kind: Kind) -> Result<(Tensor, Tensor)> {
        let freqs = positions
            .f_to_kind(Kind::Float)?
            .f_unsqueeze(-1)?
            .f_mul(&self.inv_freq)?; // (b, t, d/2)
        let emb = Tensor::f_cat(&[&freqs, &freqs], -1)?.f_unsqueeze(1)?; // (b, 1, t, d)
        let (cos, sin) = (emb.f_cos()?, emb.f_sin()?);
        let (cos, sin) = match self.scale {
            1.0 => (cos, sin),
            s => (cos.f_mul_scalar(s)?, sin.f_mul_scalar(s)?),
        };
        Ok((cos.f_to_kind(kind)?, sin.f_to_kind(kind)?))
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
