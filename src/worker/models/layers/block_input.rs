//! What a decoder layer hands a block (its attention, its feed-forward): the norm's output, or,
//! where the residual add and the norm were folded into the block's first projection (one-row
//! decode steps, `runtime.optim.gemv_add_rms_norm`), that projection's output.
use anyhow::{bail, Result};
use tch::{Device, Tensor};

#[derive(Clone, Copy)]
pub enum BlockInput<'a> {
    /// The normed input [B,T,H].
    Normed(&'a Tensor),
    /// The first projection's output (the attention's fused q/k/v, the MLP's fused gate/up).
    Projected(&'a Tensor),
}

impl BlockInput<'_> {
    /// The normed input, for a path that projects it itself.
    pub fn normed(&self) -> Result<&Tensor> {
        match self {
            BlockInput::Normed(x) => Ok(x),
            BlockInput::Projected(_) => bail!(
                "a block was handed its first projection's output on a path that projects its \
                 input itself (a folded add + RMSNorm where the block cannot take it)\n  fix: \
                 runtime.optim.gemv_add_rms_norm=false, and report it"
            ),
        }
    }

    pub fn device(&self) -> Device {
        match self {
            BlockInput::Normed(x) | BlockInput::Projected(x) => x.device(),
        }
    }
}
