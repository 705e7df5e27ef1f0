//! Small building blocks shared by the encoders and the decoder: Linear, LayerNorm, RMSNorm,
//! SwiGLU MLP. Each is loaded by official tensor names from a [`WeightPath`].

use super::weights::WeightPath;
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

/// RMSNorm as in HF DeepseekV2RMSNorm (spec §2): fp32 normalise, cast back, then scale in the
/// input dtype.
#[derive(Debug)]
pub struct RmsNorm {
    pub weight: Tensor,
    pub eps: f64,
}

impl RmsNorm {
    pub fn load(vs: &WeightPath, eps: f64) -> Result<Self> {
        Ok(RmsNorm {
            weight: vs.get("weight")?,
            eps,
        })
    }

    pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {
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

/// SwiGLU MLP: `down(silu(gate(x)) ⊙ up(x))`, bias-free (dense layer, experts, shared experts).
#[derive(Debug)]
pub struct SwiGlu {
    pub gate: Tensor,
    pub up: Tensor,
    pub down: Tensor,
}

impl SwiGlu {
    pub fn load(vs: &WeightPath) -> Result<Self> {
        Ok(SwiGlu {
            gate: vs.get("gate_proj.weight")?,
            up: vs.get("up_proj.weight")?,
            down: vs.get("down_proj.weight")?,
        })
    }

    pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        swiglu(xs, &self.gate, &self.up, &self.down)
    }
}

/// `down(silu(x·gateᵀ) ⊙ x·upᵀ)ᵀ` for weights `gate/up [F,H]`, `down [H,F]`.
pub fn swiglu(xs: &Tensor, gate: &Tensor, up: &Tensor, down: &Tensor) -> Result<Tensor> {
    let g = xs.f_linear::<Tensor>(gate, None)?.f_silu()?;
    let u = xs.f_linear::<Tensor>(up, None)?;
    Ok(g.f_mul(&u)?.f_linear::<Tensor>(down, None)?)
}
