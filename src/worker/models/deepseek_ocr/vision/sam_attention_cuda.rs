//! SAM's folded-bias attention (`runtime.optim.sam_cuda_kernels`) with llmprof's CUDA kernels
//! (`csrc/kernels/sam_attention.cu`): the qkv Linear runs on the unpadded grid; one kernel packs
//! k′ = [k, onehot(row), onehot(col)], v and the q part of q′ per window and head (padded tokens
//! take the Linear's bias, as zero inputs would), plus q batched by window row and by column;
//! two cuBLAS batched GEMMs give √d·q·Rh and √d·q·Rw, copied into q′'s remaining columns;
//! cuDNN's fused attention runs with no mask; one kernel merges the windows back into the grid.
//! Same mathematics as [`super::sam_attention::SamAttention`] with `fused_rel_pos` (√d folded
//! into the tables: exact for SAM's 64 channels, a power of two); `llmprof debug fast-path`
//! holds it to the reference on the GPU.
use super::rel_pos::rel_pos_table;
use crate::ffi::kernels;
use crate::models::common::layers::Linear;
use anyhow::{Context, Result};
use std::collections::HashMap;
use std::sync::Mutex;
use tch::Tensor;

/// √d·Rh [wh, wh, d] and √d·Rw [ww, ww, d] per window size, built on first use.
pub type TableCache = Mutex<HashMap<(i64, i64), (Tensor, Tensor)>>;

/// The weights of one attention the kernels need.
pub struct AttentionParts<'a> {
    pub qkv: &'a Linear,
    pub proj: &'a Linear,
    pub rel_pos_h: &'a Tensor,
    pub rel_pos_w: &'a Tensor,
    pub heads: i64,
    pub tables: &'a TableCache,
}

/// √d·Rh and √d·Rw for a `win` window, from the cache.
fn scaled_tables(p: &AttentionParts<'_>, win: (i64, i64), scale: f64) -> Result<(Tensor, Tensor)> {
    let mut cache = p
        .tables
        .lock()
        .map_err(|_| anyhow::anyhow!("SAM's relative-position table cache was poisoned"))?;
    if let Some((h, w)) = cache.get(&win) {
        return Ok((h.shallow_clone(), w.shallow_clone()));
    }
    let rh = rel_pos_table(&p.rel_pos_h.f_mul_scalar(scale)?, win.0)?;
    let rw = rel_pos_table(&p.rel_pos_w.f_mul_scalar(scale)?, win.1)?;
    cache.insert(win, (rh.shallow_clone(), rw.shallow_clone()));
    Ok((rh, rw))
}

/// Attention of a block over the normalised grid `y` [B,H,W,C] on a CUDA device, in windows of
/// `win` (the whole grid for global attention) → [B,H,W,C].
pub fn forward(p: AttentionParts<'_>, y: &Tensor, win: (i64, i64)) -> Result<Tensor> {
    let (_, h, w, c) = y.size4()?;
    let (wh, ww) = win;
    let hd = c / p.heads;
    let scale = (hd as f64).sqrt();
    let bias = p
        .qkv
        .bias
        .as_ref()
        .context("SAM's qkv projection has no bias")?;
    let qkv = p.qkv.forward(y)?.f_contiguous()?; // (b, h, w, 3c)
    let pk = kernels::sam_pack_qkv(&qkv, bias, p.heads, win)?;
    let (windows, heads, n, aug) = pk.q_aug.size4()?;
    let nb = windows * heads;
    let (rh, rw) = scaled_tables(&p, win, scale)?;
    // √d·q·Rh: per window row qh, [(window·head, qw), d] × [d, kh] → (qh, nb·ww, kh).
    let bh = pk
        .q_rows
        .f_view([wh, nb * ww, hd])?
        .f_bmm(&rh.f_transpose(1, 2)?)?;
    // √d·q·Rw: per window column qw, [(window·head, qh), d] × [d, kw] → (qw, nb·wh, kw).
    let bw = pk
        .q_cols
        .f_view([ww, nb * wh, hd])?
        .f_bmm(&rw.f_transpose(1, 2)?)?;
    let q_grid = pk.q_aug.f_view([nb, wh, ww, aug])?; // (window·head, qh, qw, aug)
    q_grid
        .f_narrow(3, hd, wh)?
        .f_permute([1, 0, 2, 3])? // (qh, nb, qw, kh)
        .f_copy_(&bh.f_view([wh, nb, ww, wh])?)?;
    q_grid
        .f_narrow(3, hd + wh, ww)?
        .f_permute([2, 0, 1, 3])? // (qw, nb, qh, kw)
        .f_copy_(&bw.f_view([ww, nb, wh, ww])?)?;
    debug_assert_eq!(n, wh * ww);
    let o = Tensor::f_scaled_dot_product_attention(
        &pk.q_aug,
        &pk.k_aug,
        &pk.v,
        None::<&Tensor>,
        0.0,
        false,
        Some(1.0 / scale),
        false,
    )?; // (b·windows, heads, n, hd)
    let grid = if win == (h, w) {
        // One window: merging heads is a view when the attention wrote [b, n, heads, hd].
        let merged = o.f_transpose(1, 2)?;
        if merged.is_contiguous() {
            merged.f_view([-1, h, w, c])?
        } else {
            kernels::sam_merge_windows(&o, (h, w), win)?
        }
    } else {
        kernels::sam_merge_windows(&o, (h, w), win)?
    };
    p.proj.forward(&grid)
}

#[cfg(test)]
mod tests {
    use super::super::sam_attention::tests::{attention_on, rel_err, weights};
    use super::super::sam_attention::SamOptim;
    use tch::{Device, Kind, Tensor};

    /// The kernels against the libtorch formulation of the folded bias and the reference, on the
    /// GPU: a 9×7 grid (windows of 4 need padding both ways), global layers with resized tables,
    /// heads of 64 channels (SAM's) and of 12 (√d not a power of two). fp32, TF32 off.
    #[test]
    #[ignore = "needs a CUDA GPU and a build with llmprof's kernels: cargo test -- --ignored on the GPU machine"]
    fn kernels_equal_the_reference_on_a_gpu() {
        assert!(tch::Cuda::is_available(), "no CUDA device");
        assert!(
            crate::ffi::kernels::available(),
            "this build has no kernels"
        );
        crate::ffi::set_allow_tf32(false, false).unwrap();
        let dev = Device::Cuda(0);
        for (c, heads) in [(128, 2), (24, 2)] {
            let y = Tensor::randn([2, 9, 7, c], (Kind::Float, dev));
            let w = weights(c, heads, 13);
            let reference = attention_on(&w, heads, SamOptim::default(), Kind::Float, dev);
            let kernels = SamOptim {
                fused_rel_pos: true,
                fused_windows: true,
                cuda_kernels: true,
                patch_gemm: false,
                add_layer_norm_kernel: false,
            };
            let fast = attention_on(&w, heads, kernels, Kind::Float, dev);
            for window in [0, 4] {
                let want = reference.forward_block(&y, window).unwrap();
                let got = fast.forward_block(&y, window).unwrap();
                assert_eq!(got.size(), vec![2, 9, 7, c]);
                let e = rel_err(&got, &want);
                assert!(e < 1e-5, "c {c} window {window}: {e}");
            }
        }
    }
}
