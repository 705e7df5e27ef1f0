//! Running a stack of pre-LayerNorm blocks (SAM, CLIP) so that each residual add and the
//! LayerNorm after it are one step ([`LayerNorm::add_forward`], one kernel with
//! `model.optim.add_layer_norm_kernel`): a block receives its input and that input already
//! normalised, and hands back its output together with the next block's normalised input.
use super::basic::LayerNorm;
use anyhow::Result;
use llmprof::region::{Module, RegionObserver};
use tch::Tensor;

/// `x + delta`, and with `next` (the following block's input norm) also that norm of the sum:
/// the last residual add of a block.
pub fn add_into_next(
    x: &Tensor,
    delta: &Tensor,
    next: Option<&LayerNorm>,
) -> Result<(Tensor, Option<Tensor>)> {
    match next {
        Some(norm) => {
            let (sum, normed) = norm.add_forward(x, delta)?;
            Ok((sum, Some(normed)))
        }
        None => Ok((x.f_add(delta)?, None)),
    }
}

/// Runs `blocks` over `x`: `norm_in` gives a block's input LayerNorm, `forward(block, x,
/// norm_in(block)(x), next block's norm_in)` returns (output, next block's normalised input).
/// Each block runs inside module `block` with its index on `obs`; the first block's input norm
/// (the one not fused with a residual add) inside `first_norm` within it.
pub fn run_blocks<B>(
    blocks: &[B],
    x: Tensor,
    (block, first_norm): (Module, Module),
    obs: &dyn RegionObserver,
    norm_in: impl Fn(&B) -> &LayerNorm,
    forward: impl Fn(&B, &Tensor, &Tensor, Option<&LayerNorm>) -> Result<(Tensor, Option<Tensor>)>,
) -> Result<Tensor> {
    let Some(first) = blocks.first() else {
        return Ok(x);
    };
    let mut normed = {
        let _b = obs.enter_module(block, Some(0));
        let _n = obs.enter_module(first_norm, None);
        norm_in(first).forward(&x)?
    };
    let mut x = x;
    for (i, b) in blocks.iter().enumerate() {
        let _b = obs.enter_module(block, Some(i as u32));
        let next = blocks.get(i + 1).map(&norm_in);
        let (out, next_normed) = forward(b, &x, &normed, next)?;
        x = out;
        normed = next_normed.unwrap_or(normed);
    }
    Ok(x)
}
