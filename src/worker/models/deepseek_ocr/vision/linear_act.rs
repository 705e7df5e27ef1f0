//! An MLP's first Linear and its activation: one Hopper GEMM with the activation in its epilogue
//! where the switch asks for it and the weights allow it (`model.optim.sam_gelu_epilogue`,
//! `clip_gelu_epilogue`; [`kernels_gemm::linear_act`]), else the Linear and the activation's own
//! pass.
use crate::checkpoint::tensors::WeightPath;
use crate::ffi::kernels_gemm::{self, Activation};
use crate::models::layers::basic::Linear;
use anyhow::Result;
use tch::{Kind, Tensor};

#[derive(Debug)]
pub struct LinearAct {
    linear: Linear,
    act: Activation,
    /// The fused GEMM runs: asked for, bf16 weights, on a device that has it (decided at load).
    fused: bool,
}

impl LinearAct {
    /// The Linear at `vs` (with its bias) followed by `act`, fused where `fused` asks for it and
    /// the weights allow it.
    pub fn load(vs: &WeightPath, act: Activation, fused: bool) -> Result<Self> {
        let linear = Linear::load(vs, true)?;
        let fused = fused
            && linear.weight.kind() == Kind::BFloat16
            && kernels_gemm::linear_gelu_on(linear.weight.device());
        Ok(LinearAct { linear, act, fused })
    }

    /// Whether the fused GEMM runs.
    pub fn fused(&self) -> bool {
        self.fused
    }

    /// act(linear(`x`)): in one GEMM where it runs and takes these tensors, else `unfused` of
    /// the Linear's output.
    pub fn forward(
        &self,
        x: &Tensor,
        unfused: impl FnOnce(Tensor) -> Result<Tensor>,
    ) -> Result<Tensor> {
        if let (true, Some(bias)) = (self.fused, &self.linear.bias) {
            if kernels_gemm::linear_gelu_operands_fit(x, &self.linear.weight, bias) {
                return Ok(kernels_gemm::linear_act(
                    x,
                    &self.linear.weight,
                    bias,
                    self.act,
                )?);
            }
        }
        unfused(self.linear.forward(x)?)
    }
}
