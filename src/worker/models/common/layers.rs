//! Small building blocks shared by the encoders and the decoder: Linear, LayerNorm, RMSNorm,
//! SwiGLU MLP. Each is loaded by official tensor names from a [`WeightPath`].

use crate::models::common::tensors::WeightPath;
use anyhow::Result;
use tch::{Kind, Tensor};

/// `y = x·Wᵀ + b` (weight `[out, in]`).
#[derive(Debug)]
pub struct Linear {
    pub weight: Tensor,
    pub bias: Option<Tensor>,
}

impl Linear {
    /// Loads `{vs}.weight` and, if `with_bias`, `{vs}.bias`.
    pub fn load(vs: &WeightPath, with_bias: bool) -> Result<Self> {
        let weight = vs.get("weight")?;
        let bias = if with_bias {
            Some(vs.get("bias")?)
        } else {
            None
        };
        Ok(Linear { weight, bias })
    }

    pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        Ok(xs.f_linear(&self.weight, self.bias.as_ref())?)
    }
}

/// LayerNorm over the last dim, with affine parameters.
#[derive(Debug)]
pub struct LayerNorm {
    pub weight: Tensor,
    pub bias: Tensor,
    pub eps: f64,
}

impl LayerNorm {
    pub fn load(vs: &WeightPath, eps: f64) -> Result<Self> {
        Ok(LayerNorm {
            weight: vs.get("weight")?,
            bias: vs.get("bias")?,
            eps,
        })
    }

    pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let c = self.weight.size1()?;
        Ok(xs.f_layer_norm([c], Some(&self.weight), Some(&self.bias), self.eps, true)?)
    }
}

/// RMSNorm as in HF DeepseekV2RMSNorm (docs/deepseek-ocr.md §2): fp32 normalise, cast back, then scale in the
/// input dtype.
#[derive(Debug)]
pub struct RmsNorm {
    pub weight: Tensor,
    pub eps: f64,
    /// One `_fused_rms_norm` kernel (fp32 accumulation, the product rounded once) instead.
    pub fused: bool,
}

impl RmsNorm {
    pub fn load(vs: &WeightPath, eps: f64) -> Result<Self> {
        Ok(RmsNorm {
            weight: vs.get("weight")?,
            eps,
            fused: false,
        })
    }

    pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        if self.fused {
            let h = self.weight.size1()?;
            return Ok(xs
                .f_internal_fused_rms_norm(&[h][..], Some(&self.weight), self.eps)?
                .0);
        }
        let kind = xs.kind();
        let x32 = xs.f_to_kind(Kind::Float)?;
        let var = x32
            .f_pow_tensor_scalar(2)?
            .f_mean_dim(-1, true, Kind::Float)?;
        let normed = x32
            .f_mul(&var.f_add_scalar(self.eps)?.f_rsqrt()?)?
            .f_to_kind(kind)?;
        Ok(normed.f_mul(&self.weight)?)
    }
}

/// Gate and up projections of a SwiGLU MLP, as two weights or one concatenated weight.
#[derive(Debug)]
pub enum GateUp {
    /// `gate`, `up` [F,H].
    Split { gate: Tensor, up: Tensor },
    /// `[gate; up]` [2F,H]: one matmul instead of two.
    Fused(Tensor),
}

impl GateUp {
    /// Builds from separate weights, concatenating them along the output rows if `fused`.
    pub fn new(gate: Tensor, up: Tensor, fused: bool) -> Result<Self> {
        Ok(if fused {
            let dim = gate.dim() as i64 - 2; // rows of [F,H] or of each expert in [E,F,H]
            GateUp::Fused(Tensor::f_cat(&[gate, up], dim)?)
        } else {
            GateUp::Split { gate, up }
        })
    }

    /// `silu(x·gateᵀ) ⊙ x·upᵀ` [..., F].
    pub fn act(&self, xs: &Tensor) -> Result<Tensor> {
        match self {
            GateUp::Split { gate, up } => Ok(xs
                .f_linear::<Tensor>(gate, None)?
                .f_silu()?
                .f_mul(&xs.f_linear::<Tensor>(up, None)?)?),
            GateUp::Fused(w) => silu_mul_halves(&xs.f_linear::<Tensor>(w, None)?, -1),
        }
    }
}

/// Splits `gu` into halves along `dim` and returns `silu(first) ⊙ second`.
pub fn silu_mul_halves(gu: &Tensor, dim: i64) -> Result<Tensor> {
    let d = if dim < 0 { gu.dim() as i64 + dim } else { dim };
    let f = gu.size()[d as usize] / 2;
    Ok(gu
        .f_narrow(d, 0, f)?
        .f_silu()?
        .f_mul(&gu.f_narrow(d, f, f)?)?)
}

/// SwiGLU MLP: `down(silu(gate(x)) ⊙ up(x))`, bias-free (dense layer, shared experts).
#[derive(Debug)]
pub struct SwiGlu {
    pub gate_up: GateUp,
    pub down: Tensor,
}

impl SwiGlu {
    /// Loads `gate_proj`, `up_proj`, `down_proj`; `fused` concatenates gate and up.
    pub fn load(vs: &WeightPath, fused: bool) -> Result<Self> {
        Ok(SwiGlu {
            gate_up: GateUp::new(
                vs.get("gate_proj.weight")?,
                vs.get("up_proj.weight")?,
                fused,
            )?,
            down: vs.get("down_proj.weight")?,
        })
    }

    pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        Ok(self.gate_up.act(xs)?.f_linear::<Tensor>(&self.down, None)?)
    }
}
