//! The gate and up projections of a gated MLP (SwiGLU, GeGLU): as two weights or one fused
//! weight, projected in libtorch or llmprof's GEMV (which may apply SwiGLU itself), and the
//! activation over the fused form's halves.
use crate::ffi::{kernels, kernels_gemv};
use anyhow::Result;
use tch::Tensor;

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

    /// `silu(x·gateᵀ) ⊙ x·upᵀ` [..., F]; `kernel`: the fused form's activation in llmprof's
    /// kernel on a GPU.
    pub fn act(&self, xs: &Tensor, kernel: bool) -> Result<Tensor> {
        self.project(xs, false, kernels_gemv::GemvAct::None)?
            .act(kernel)
    }

    /// The projections alone: `x·gateᵀ` and `x·upᵀ`, or `x·[gate; up]ᵀ`; `gemv`: in llmprof's
    /// GEMV kernel where it takes the call (`runtime.optim.gemv_kernel`); `act` SwiGLU: the
    /// fused form's activation in the same GEMV where it takes the call (its output then
    /// [`GateUpOut::Activated`], `runtime.optim.gemv_swiglu`).
    pub fn project(
        &self,
        xs: &Tensor,
        gemv: bool,
        act: kernels_gemv::GemvAct,
    ) -> Result<GateUpOut> {
        let lin = |w: &Tensor| kernels_gemv::linear_or_torch(xs, w, None, gemv);
        Ok(match self {
            GateUp::Split { gate, up } => GateUpOut::Split(lin(gate)?, lin(up)?),
            GateUp::Fused(w)
                if gemv
                    && act == kernels_gemv::GemvAct::SwiGlu
                    && kernels_gemv::swiglu_fits(xs, w) =>
            {
                GateUpOut::Activated(kernels_gemv::linear_swiglu(xs, w)?)
            }
            GateUp::Fused(w) => GateUpOut::Fused(lin(w)?),
        })
    }
}

/// What [`GateUp::project`] gives: the two projections, one tensor holding both halves, or
/// (SwiGLU in the GEMV) the activation itself.
pub enum GateUpOut {
    Split(Tensor, Tensor),
    Fused(Tensor),
    Activated(Tensor),
}

impl GateUpOut {
    /// `gelu_tanh(gate) ⊙ up` [..., F] (GeGLU).
    pub fn gelu_tanh_mul(self) -> Result<Tensor> {
        let (gate, up) = match self {
            GateUpOut::Split(gate, up) => (gate, up),
            GateUpOut::Fused(gu) => {
                let f = gu.size().last().copied().unwrap_or(0) / 2;
                (gu.f_narrow(-1, 0, f)?, gu.f_narrow(-1, f, f)?)
            }
            GateUpOut::Activated(_) => {
                anyhow::bail!("GeGLU on an output the GEMV already activated with SiLU")
            }
        };
        Ok(gate.f_gelu("tanh")?.f_mul(&up)?)
    }

    /// `silu(gate) ⊙ up` [..., F]; `kernel` as in [`GateUp::act`].
    pub fn act(self, kernel: bool) -> Result<Tensor> {
        match self {
            GateUpOut::Split(gate, up) => Ok(gate.f_silu()?.f_mul(&up)?),
            GateUpOut::Fused(gu) => silu_mul_last(&gu, kernel),
            GateUpOut::Activated(a) => Ok(a),
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

/// [`silu_mul_halves`] over the last dim, in llmprof's one kernel when `kernel` is set and `gu`
/// is a contiguous CUDA tensor (`runtime.optim.swiglu_kernel`).
pub fn silu_mul_last(gu: &Tensor, kernel: bool) -> Result<Tensor> {
    if kernel && gu.device().is_cuda() && gu.is_contiguous() {
        return Ok(kernels::silu_mul(gu)?);
    }
    silu_mul_halves(gu, -1)
}
