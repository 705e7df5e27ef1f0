//! RMSNorm (HF's, and the fused forms the fast path switches on), with the residual add before
//! it in one kernel where asked; weights stored as offsets (Gemma) or scaled at load (Gemma 3
//! 27B's query scale).
use crate::checkpoint::tensors::WeightPath;
use crate::ffi::{kernels, kernels_gemv};
use anyhow::Result;
use tch::{Kind, Tensor};

/// RMSNorm as in HF DeepseekV2RMSNorm (docs/deepseek-ocr.md §2): fp32 normalise, cast back, then scale in the
/// input dtype.
#[derive(Debug)]
pub struct RmsNorm {
    pub weight: Tensor,
    pub eps: f64,
    /// One `_fused_rms_norm` kernel (fp32 accumulation, the product rounded once) instead.
    pub fused: bool,
    /// [`RmsNorm::add_forward`] in llmprof's one kernel on a GPU (with `fused`;
    /// `runtime.optim.add_rms_norm_kernel`).
    pub add_kernel: bool,
    /// With `add_kernel`: [`RmsNorm::add_forward_linear`] folds the add and the norm into the
    /// one-row projection after them (`runtime.optim.gemv_add_rms_norm`).
    pub gemv_fold: bool,
}

impl RmsNorm {
    pub fn load(vs: &WeightPath, eps: f64) -> Result<Self> {
        Ok(RmsNorm {
            weight: vs.get("weight")?,
            eps,
            fused: false,
            add_kernel: false,
            gemv_fold: false,
        })
    }

    /// This norm with its scale `offset + weight` (Gemma stores the weight as an offset from 1),
    /// computed in fp32 as HF does.
    pub fn with_offset(self, offset: f64) -> Result<Self> {
        if offset == 0.0 {
            return Ok(self);
        }
        let kind = self.weight.kind();
        let weight = self
            .weight
            .f_to_kind(Kind::Float)?
            .f_add_scalar(offset)?
            .f_to_kind(kind)?;
        Ok(RmsNorm { weight, ..self })
    }

    /// This norm with its scale × `factor` (computed in fp32, rounded once).
    pub fn scaled(self, factor: f64) -> Result<Self> {
        if factor == 1.0 {
            return Ok(self);
        }
        let kind = self.weight.kind();
        let weight = self
            .weight
            .f_to_kind(Kind::Float)?
            .f_mul_scalar(factor)?
            .f_to_kind(kind)?;
        Ok(RmsNorm { weight, ..self })
    }

    /// `x + delta` and its norm: (sum, norm(sum)). In llmprof's one kernel on a GPU when
    /// `add_kernel` and `fused` are set; else an add and [`RmsNorm::forward`].
    pub fn add_forward(&self, x: &Tensor, delta: &Tensor) -> Result<(Tensor, Tensor)> {
        let fits = self.weight.size1()? <= kernels::ADD_RMS_NORM_MAX_HIDDEN;
        if self.add_kernel && self.fused && fits && x.device().is_cuda() && x.kind() == delta.kind()
        {
            let (x, delta) = (x.f_contiguous()?, delta.f_contiguous()?);
            return Ok(kernels::add_rms_norm(&x, &delta, &self.weight, self.eps)?);
        }
        let sum = x.f_add(delta)?;
        let normed = self.forward(&sum)?;
        Ok((sum, normed))
    }

    /// Whether [`RmsNorm::add_forward_linear`] folds `x + delta` and this norm into the
    /// projection by `weight` (+ `bias`) after them: `gemv_fold` (with `add_kernel` and `fused`)
    /// and a call the GEMV takes with the norm folded in (one row on a GPU, bf16/fp16, a width up
    /// to the add + RMSNorm kernel's; `kernels_gemv::add_rms_norm_fits`). Checks shapes only.
    pub fn folds_into(
        &self,
        (x, delta): (&Tensor, &Tensor),
        weight: &Tensor,
        bias: Option<&Tensor>,
    ) -> bool {
        self.gemv_fold
            && self.add_kernel
            && self.fused
            && kernels_gemv::add_rms_norm_fits(x, delta, &self.weight, weight, bias)
    }

    /// `x + delta`, its norm and the projection after it as (sum, projection) in one kernel,
    /// the same bits as [`RmsNorm::add_forward`] and then llmprof's GEMV (and the SwiGLU kernel,
    /// `act` SwiGLU: `weight` a fused gate/up projection); only where [`RmsNorm::folds_into`]
    /// says so.
    pub fn add_forward_linear(
        &self,
        (x, delta): (&Tensor, &Tensor),
        weight: &Tensor,
        bias: Option<&Tensor>,
        act: kernels_gemv::GemvAct,
    ) -> Result<(Tensor, Tensor)> {
        Ok(kernels_gemv::add_rms_norm_linear(
            (x, delta),
            (&self.weight, self.eps),
            (weight, bias),
            act,
        )?)
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
