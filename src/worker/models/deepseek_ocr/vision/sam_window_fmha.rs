//! SAM's windowed attention in the Hopper flash-attention kernel
//! (`model.optim.sam_window_fmha_kernel`, `csrc/kernels/sm90a/sam_window_fmha.cu`): q, k and v
//! read by TMA from the grid where the qkv Linear wrote them, the output written back on the
//! grid, the decomposed bias added per score from the products of q with both tables.
//!
//! The kernel reads the tokens a window has past the grid as zero. SAM pads the normed grid with
//! zeros before the qkv Linear, so there they are the Linear's bias. The two agree once the
//! Linear runs without its k and v biases:
//! - k: q·b_k is the same for every key of a query, and the softmax does not change when all of
//!   a row's scores move alike;
//! - v: the weights of a row sum to one, so the attention's output loses exactly b_v, which the
//!   projection puts back: proj(o + b_v) = W_p·o + (b_p + W_p·b_v).
//!
//! [`WindowBiases`] holds the two biases that change; [`forward`] runs the block's attention.
use super::rel_pos::products_per_head;
use crate::ffi::kernels_gemm;
use crate::models::layers::basic::Linear;
use anyhow::{Context, Result};
use tch::{Kind, Tensor};

/// The biases of one attention for the kernel's zero padding (module docs).
#[derive(Debug)]
pub struct WindowBiases {
    /// The qkv Linear's bias with its k and v parts zero.
    qkv: Tensor,
    /// The projection's bias plus W_p·b_v.
    proj: Tensor,
}

impl WindowBiases {
    /// From the attention's qkv and output projections (both with biases), in their dtype; W_p·b_v
    /// is computed in fp64 and rounded once.
    pub fn new(qkv: &Linear, proj: &Linear) -> Result<Self> {
        let bias = qkv
            .bias
            .as_ref()
            .context("SAM's qkv projection has no bias")?;
        let proj_bias = proj
            .bias
            .as_ref()
            .context("SAM's output projection has no bias")?;
        let c = bias.size1()? / 3;
        let b_v = bias.f_narrow(0, 2 * c, c)?.f_to_kind(Kind::Double)?;
        let w_p = proj.weight.f_to_kind(Kind::Double)?;
        let moved = proj_bias.f_to_kind(Kind::Double)?.f_add(&w_p.f_mv(&b_v)?)?;
        Ok(WindowBiases {
            qkv: Tensor::f_cat(
                &[
                    &bias.f_narrow(0, 0, c)?,
                    &bias.f_narrow(0, c, 2 * c)?.f_zeros_like()?,
                ],
                0,
            )?,
            proj: moved.f_to_kind(proj_bias.kind())?,
        })
    }

    /// (qkv bias, projection bias), for the tests.
    #[cfg(test)]
    pub fn parts(&self) -> (Tensor, Tensor) {
        (self.qkv.shallow_clone(), self.proj.shallow_clone())
    }
}

/// The attention of a block over the normalised grid `y` [B,H,W,C] in SAM's 14×14 windows
/// ([`kernels_gemm::sam_window_fmha_fits`]), projected: [B,H,W,C]. `tables_t` [head_dim, cols]:
/// both tables, √head_dim folded in, transposed.
pub fn forward(
    y: &Tensor,
    qkv: &Linear,
    proj: &Linear,
    biases: &WindowBiases,
    tables_t: &Tensor,
    heads: i64,
) -> Result<Tensor> {
    let qkv = y.f_linear(&qkv.weight, Some(&biases.qkv))?.f_contiguous()?;
    let prod = products_per_head(&qkv, tables_t, heads)?;
    let o = kernels_gemm::sam_window_fmha(&qkv, &prod)?;
    Ok(o.f_linear(&proj.weight, Some(&biases.proj))?)
}
