//! Rotary position embeddings, NeoX "rotate-half" convention, with Llama 3's frequency scaling.
use anyhow::{anyhow, Result};
use llmprof::model::dense::RopeScaling;
use std::sync::Mutex;
use tch::{Device, Kind, Tensor};

/// RoPE tables, NeoX "rotate-half" convention: inv_freq_i = θ^(−2i/d), i < d/2, duplicated over
/// both halves. No MLA even/odd regroup (docs/deepseek-ocr.md §2, §9.1).
#[derive(Debug)]
pub struct Rope {
    inv_freq: Tensor,
    /// cos and sin × this (YaRN's attention factor; 1 elsewhere).
    scale: f64,
    /// The tables of positions 0..len built by [`Rope::cos_sin_below`], kept for the Rope's
    /// life: a captured decode step reads them at every replay.
    tables: Mutex<Vec<PositionTable>>,
}

/// cos and sin [len, d] of positions 0..len in one dtype on one device.
#[derive(Debug)]
struct PositionTable {
    len: i64,
    cos: Tensor,
    sin: Tensor,
}

impl PositionTable {
    fn serves(&self, below: i64, kind: Kind, device: Device) -> bool {
        self.len >= below && self.cos.kind() == kind && self.cos.device() == device
    }
}

impl Rope {
    pub fn new(head_dim: i64, theta: f64, device: tch::Device) -> Result<Self> {
        let i = Tensor::f_arange_start_step(0, head_dim, 2, (Kind::Float, device))?; // (d/2)
        let inv_freq = i
            .f_div_scalar(head_dim as f64)?
            .f_mul_scalar(-theta.ln())?
            .f_exp()?;
        Ok(Rope::from_parts(inv_freq, 1.0))
    }

    fn from_parts(inv_freq: Tensor, scale: f64) -> Self {
        Rope {
            inv_freq,
            scale,
            tables: Mutex::new(Vec::new()),
        }
    }

    /// Tables from given inverse frequencies (d/2 of them), cos and sin × `scale` (YaRN).
    pub fn from_inv_freq(inv_freq: &[f64], scale: f64, device: tch::Device) -> Result<Self> {
        Ok(Rope::from_parts(
            Tensor::f_from_slice(inv_freq)?
                .f_to_kind(Kind::Float)?
                .f_to_device(device)?,
            scale,
        ))
    }

    /// These tables for positions ÷ `factor` (linear RoPE scaling: each frequency ÷ `factor`).
    pub fn slowed(self, factor: f64) -> Result<Self> {
        Ok(Rope::from_parts(
            self.inv_freq.f_div_scalar(factor)?,
            self.scale,
        ))
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
        Ok(Rope::from_parts(
            smoothed.f_where_self(&medium, &llama)?,
            1.0,
        ))
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

    /// [`Rope::cos_sin`] of positions [B,T] that are all below `below` (the caller's bound),
    /// gathered from a table of positions 0..`below` or more, built by [`Rope::cos_sin`] on the
    /// first call for that bound, dtype and device and kept: two gathers a call instead of the
    /// tables' six elementwise kernels (a decode step's `embed` work). Every op of
    /// [`Rope::cos_sin`] is elementwise: on a GPU the same bits; on the CPU libtorch's vectorised
    /// and scalar cos may differ in the last fp32 place.
    pub fn cos_sin_below(
        &self,
        positions: &Tensor,
        below: i64,
        kind: Kind,
    ) -> Result<(Tensor, Tensor)> {
        let (cos, sin) = self.table(below, kind, positions.device())?;
        let (b, t) = positions.size2()?;
        let flat = positions.f_reshape([-1])?;
        let gather = |table: &Tensor| -> Result<Tensor> {
            let d = table.size()[1];
            Ok(table.f_index_select(0, &flat)?.f_view([b, 1, t, d])?)
        };
        Ok((gather(&cos)?, gather(&sin)?))
    }

    /// The kept table serving positions below `below` in `kind` on `device`, built (for the
    /// next power of two positions) where none does.
    fn table(&self, below: i64, kind: Kind, device: Device) -> Result<(Tensor, Tensor)> {
        let mut tables = self
            .tables
            .lock()
            .map_err(|_| anyhow!("a thread panicked building a RoPE table"))?;
        if let Some(t) = tables.iter().find(|t| t.serves(below, kind, device)) {
            return Ok((t.cos.shallow_clone(), t.sin.shallow_clone()));
        }
        let len = (below.max(1) as u64).next_power_of_two() as i64;
        let positions = Tensor::f_arange(len, (Kind::Int64, device))?.f_view([1, len])?;
        let (cos, sin) = self.cos_sin(&positions, kind)?; // (1, 1, len, d)
        let table = PositionTable {
            len,
            cos: cos.f_view([len, -1])?,
            sin: sin.f_view([len, -1])?,
        };
        let pair = (table.cos.shallow_clone(), table.sin.shallow_clone());
        tables.push(table);
        Ok(pair)
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

    #[test]
    fn gathered_tables_equal_the_computed_ones() {
        // Llama 3's scaled frequencies, fp32 and bf16: positions of two rows below 700 (the
        // table holds 1,024) gathered against computed; one table kept per dtype, reused for a
        // smaller bound, a new one for a larger.
        let scaling = RopeScaling {
            rope_type: "llama3".to_string(),
            factor: 8.0,
            low_freq_factor: 1.0,
            high_freq_factor: 4.0,
            original_max_position_embeddings: 8192,
        };
        let rope = Rope::with_scaling(128, 500_000.0, Some(&scaling), Device::Cpu).unwrap();
        let pos = Tensor::from_slice(&[0i64, 5, 699, 1, 300, 64]).view([2, 3]);
        for kind in [Kind::Float, Kind::BFloat16] {
            let (cos, sin) = rope.cos_sin(&pos, kind).unwrap();
            let (gc, gs) = rope.cos_sin_below(&pos, 700, kind).unwrap();
            assert_eq!(gc.size(), [2, 1, 3, 128]);
            let close = |a: &Tensor, b: &Tensor| {
                let d = (a.to_kind(Kind::Float) - b.to_kind(Kind::Float)).abs();
                d.max().double_value(&[])
            };
            // The same ops; on the CPU libtorch's vectorised and scalar cos may differ in the
            // last fp32 place, which can move a bf16 rounding by one place.
            let tol = if kind == Kind::Float {
                1e-6
            } else {
                1.0 / 128.0
            };
            assert!(
                close(&cos, &gc) <= tol && close(&sin, &gs) <= tol,
                "{kind:?}"
            );
        }
        let _ = rope.cos_sin_below(&pos, 10, Kind::Float).unwrap();
        assert_eq!(rope.tables.lock().unwrap().len(), 2);
        let _ = rope.cos_sin_below(&pos, 1500, Kind::Float).unwrap();
        let lens: Vec<i64> = rope.tables.lock().unwrap().iter().map(|t| t.len).collect();
        assert_eq!(lens, [1024, 1024, 2048]);
    }
}
