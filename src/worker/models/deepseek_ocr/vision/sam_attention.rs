//! SAM's attention (docs/deepseek-ocr.md §3.1): multi-head attention over a [B,H,W,C] grid with
//! the decomposed relative-position bias, globally or within ws×ws windows. Two switches pick the
//! implementation (`model.optim.sam_fused_rel_pos`, `model.optim.sam_fused_windows`); each
//! off-state is the reference formulation, and the tests hold the fused ones to it.
//!
//! The bias is bias[(qh,qw),(kh,kw)] = q·Rh[qh,kh] + q·Rw[qw,kw] with q unscaled. Materialised,
//! it is a [B,heads,N,N] tensor (~0.4 GB in bf16 for one 1024² view's global layer). Folded into
//! the product instead: q' = [q, √d·(q·Rh), √d·(q·Rw)] and k' = [k, onehot(kh), onehot(kw)], so
//! (q'·k')/√d = q·k/√d + q·Rh[qh,kh] + q·Rw[qw,kw], which fused attention computes with no mask.

use super::rel_pos::rel_pos_table;
pub use super::sam_attention_cuda::AttnOut;
use crate::checkpoint::tensors::WeightPath;
use crate::models::layers::basic::Linear;
use anyhow::{ensure, Result};
use llmprof::model::deepseek_ocr::arch::SamConfig;
use tch::{Device, Kind, Tensor};

/// How SAM is computed (all off: the reference formulation).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SamOptim {
    /// Relative-position terms as extra q/k channels instead of a materialised bias.
    pub fused_rel_pos: bool,
    /// Windowed blocks run their q/k/v and output projections on the whole grid and split into
    /// windows and heads with one copy each way, instead of partition, split, merge and
    /// unpartition copies.
    pub fused_windows: bool,
    /// On a CUDA device, with `fused_rel_pos`: q′/k′/v packed straight from the qkv Linear's
    /// output and the windows merged back by llmprof's CUDA kernels
    /// ([`super::sam_attention_cuda`]), with no pad, partition or concatenation copies.
    pub cuda_kernels: bool,
    /// With `cuda_kernels`: the relative-position products as one GEMM with both axes' resized
    /// tables, gathered into q′ by a kernel (instead of batched GEMMs over copies of q).
    pub rel_pos_gemm: bool,
    /// With `cuda_kernels` and `add_layer_norm_kernel`: windowed blocks run the output
    /// projection on the windows and leave them for the add + LayerNorm kernel to read in place
    /// (no merge copy); without the add + LayerNorm kernel it has no effect.
    pub proj_in_windows: bool,
    /// The patch embedding as one GEMM over unfolded 16×16 patches instead of a convolution
    /// (cuDNN has no tensor-core kernel for its 3 input channels).
    pub patch_gemm: bool,
    /// On a CUDA device: each residual add and the LayerNorm after it in one llmprof kernel.
    pub add_layer_norm_kernel: bool,
    /// On a Hopper GPU in bf16: the MLP's first Linear and its GELU in one CUTLASS GEMM
    /// ([`crate::ffi::kernels_gemm::linear_gelu`]).
    pub gelu_epilogue: bool,
    /// With `cuda_kernels` and `proj_in_windows`, in bf16 with heads of 64 channels: windowed
    /// attention in one llmprof kernel, the relative-position columns folded into q·k inside it
    /// (no q′/k′ in memory), instead of the pack and cuDNN's attention over the folded bias.
    pub window_kernel: bool,
    /// With `cuda_kernels`, in bf16 on a Hopper GPU: global attention in one flash-attention
    /// kernel with the relative-position bias added to each score inside it
    /// ([`crate::ffi::kernels_gemm::sam_global_attention`]), instead of the pack and cuDNN's
    /// attention over the folded bias.
    pub global_kernel: bool,
    /// With `cuda_kernels`, in bf16 on a Hopper GPU: windowed attention in one flash-attention
    /// kernel that reads the windows on the grid and adds the bias per score
    /// ([`super::sam_window_fmha`]), instead of the pack and cuDNN's attention over the folded
    /// bias (and before `window_kernel`).
    pub window_fmha: bool,
}

/// The two decomposed terms for q [B', h·w, C] (unscaled) on an h×w grid:
/// (q·Rh [B', h·w, kh], q·Rw [B', h·w, kw]).
fn rel_pos_terms(
    q: &Tensor,
    rel_h: &Tensor,
    rel_w: &Tensor,
    h: i64,
    w: i64,
) -> Result<(Tensor, Tensor)> {
    let (b, n, c) = q.size3()?;
    ensure!(n == h * w, "rel-pos: {n} tokens for a {h}x{w} grid");
    let rh = rel_pos_table(rel_h, h)?; // (h, h, c)
    let rw = rel_pos_table(rel_w, w)?; // (w, w, c)
    let r_q = q.f_view([b, h, w, c])?;
    let bh = Tensor::f_einsum("bhwc,hkc->bhwk", &[&r_q, &rh], None::<i64>)?; // (b, h, w, kh)
    let bw = Tensor::f_einsum("bhwc,wkc->bhwk", &[&r_q, &rw], None::<i64>)?; // (b, h, w, kw)
    Ok((bh.f_reshape([b, n, h])?, bw.f_reshape([b, n, w])?))
}

/// Decomposed relative-position bias for q [B', h·w, C] (unscaled) on an h×w grid:
/// bias[b, (qh,qw), (kh,kw)] = Σ_c q·Rh[qh,kh] + Σ_c q·Rw[qw,kw]. Returns [B', h·w, h·w].
pub fn rel_pos_bias(q: &Tensor, rel_h: &Tensor, rel_w: &Tensor, h: i64, w: i64) -> Result<Tensor> {
    let (b, n, _) = q.size3()?;
    let (bh, bw) = rel_pos_terms(q, rel_h, rel_w, h, w)?;
    let bias = bh.f_view([b, n, h, 1])?.f_add(&bw.f_view([b, n, 1, w])?)?; // (b, n, kh, kw)
    Ok(bias.f_reshape([b, n, h * w])?)
}

/// Key-side channels of the folded bias: row (kh,kw) is [onehot_h(kh), onehot_w(kw), 0…],
/// padded with zero columns to `h + w + pad`. → [h·w, h+w+pad].
fn key_position_onehots(h: i64, w: i64, pad: i64, kind: Kind, dev: Device) -> Result<Tensor> {
    let eh = Tensor::f_eye(h, (kind, dev))?
        .f_unsqueeze(1)?
        .f_expand([h, w, h], false)?;
    let ew = Tensor::f_eye(w, (kind, dev))?
        .f_unsqueeze(0)?
        .f_expand([h, w, w], false)?;
    let z = Tensor::f_zeros([h, w, pad], (kind, dev))?;
    Ok(Tensor::f_cat(&[eh, ew, z], -1)?.f_reshape([h * w, h + w + pad])?)
}

/// Zero-pads [B,H,W,C] at the bottom/right to multiples of `ws`. Returns the padded grid and
/// (Hp, Wp).
fn pad_to_windows(x: &Tensor, ws: i64) -> Result<(Tensor, (i64, i64))> {
    let (_, h, w, _) = x.size4()?;
    let pad_h = (ws - h % ws) % ws;
    let pad_w = (ws - w % ws) % ws;
    let x = if pad_h > 0 || pad_w > 0 {
        x.f_constant_pad_nd([0, 0, 0, pad_w, 0, pad_h])?
    } else {
        x.shallow_clone()
    };
    Ok((x, (h + pad_h, w + pad_w)))
}

/// Zero-pads [B,H,W,C] at the bottom/right to multiples of `ws` and cuts row-major windows.
/// Returns ([B·nW, ws, ws, C], (Hp, Wp)).
pub fn window_partition(x: &Tensor, ws: i64) -> Result<(Tensor, (i64, i64))> {
    let (b, _, _, c) = x.size4()?;
    let (x, (hp, wp)) = pad_to_windows(x, ws)?;
    let x = x.f_view([b, hp / ws, ws, wp / ws, ws, c])?;
    let win = x
        .f_permute([0, 1, 3, 2, 4, 5])?
        .f_contiguous()?
        .f_view([-1, ws, ws, c])?; // (b·nW, ws, ws, c)
    Ok((win, (hp, wp)))
}

/// Inverse of [`window_partition`], cropping the padding: → [B,H,W,C].
pub fn window_unpartition(
    win: &Tensor,
    ws: i64,
    (hp, wp): (i64, i64),
    (h, w): (i64, i64),
) -> Result<Tensor> {
    let (nb, _, _, c) = win.size4()?;
    let b = nb / (hp * wp / ws / ws);
    let x = win.f_view([b, hp / ws, wp / ws, ws, ws, c])?;
    let x = x
        .f_permute([0, 1, 3, 2, 4, 5])?
        .f_contiguous()?
        .f_view([b, hp, wp, c])?; // (b, hp, wp, c)
    if hp > h || wp > w {
        Ok(x.f_narrow(1, 0, h)?.f_narrow(2, 0, w)?.f_contiguous()?)
    } else {
        Ok(x)
    }
}

/// Multi-head attention with decomposed rel-pos bias on a [B,H,W,C] grid.
#[derive(Debug)]
pub struct SamAttention {
    qkv: Linear,
    proj: Linear,
    rel_pos_h: Tensor,
    rel_pos_w: Tensor,
    heads: i64,
    optim: SamOptim,
    /// The CUDA-kernel path's scaled relative-position matrices per window size.
    kernel_tables: super::sam_attention_cuda::TableCache,
    /// The biases the windowed Hopper kernel runs with (`window_fmha`).
    window_biases: Option<super::sam_window_fmha::WindowBiases>,
}

impl SamAttention {
    pub fn load(vs: &WeightPath, cfg: &SamConfig, optim: SamOptim) -> Result<Self> {
        let qkv = Linear::load(&vs.sub("qkv"), true)?;
        let proj = Linear::load(&vs.sub("proj"), true)?;
        let window_biases = match optim.window_fmha && optim.cuda_kernels {
            true => Some(super::sam_window_fmha::WindowBiases::new(&qkv, &proj)?),
            false => None,
        };
        Ok(SamAttention {
            qkv,
            proj,
            rel_pos_h: vs.get("rel_pos_h")?,
            rel_pos_w: vs.get("rel_pos_w")?,
            heads: cfg.heads,
            optim,
            kernel_tables: Default::default(),
            window_biases,
        })
    }

    /// Attention of a block over the normalised grid `y` [B,H,W,C]: within `window`×`window`
    /// windows (zero padding after the norm, padded tokens not masked), or globally when
    /// `window == 0`. → [B,H,W,C].
    pub fn forward_block(&self, y: &Tensor, window: i64) -> Result<Tensor> {
        self.forward_block_out(y, window, None)?.into_grid()
    }

    /// [`SamAttention::forward_block`], leaving a windowed output in its windows where
    /// `proj_in_windows` applies; the CUDA-kernel path reuses `keys`' k′ buffers of its shape
    /// (one per encoder pass).
    pub fn forward_block_out(
        &self,
        y: &Tensor,
        window: i64,
        keys: Option<&super::sam_attention_cuda::KeyBuffers>,
    ) -> Result<AttnOut> {
        let (_, h, w, _) = y.size4()?;
        if self.optim.cuda_kernels && self.optim.fused_rel_pos && y.device().is_cuda() {
            let win = if window == 0 {
                (h, w)
            } else {
                (window, window)
            };
            return super::sam_attention_cuda::forward(self.parts(keys), y, win);
        }
        self.forward_block_eager(y, window).map(AttnOut::Grid)
    }

    /// The libtorch formulations of [`SamAttention::forward_block`].
    fn forward_block_eager(&self, y: &Tensor, window: i64) -> Result<Tensor> {
        let (_, h, w, _) = y.size4()?;
        if window == 0 {
            return self.forward(y);
        }
        if self.optim.fused_windows {
            return self.forward_windows_fused(y, window);
        }
        let (win, pad_hw) = window_partition(y, window)?;
        let o = self.forward(&win)?;
        window_unpartition(&o, window, pad_hw, (h, w))
    }

    fn parts<'a>(
        &'a self,
        keys: Option<&'a super::sam_attention_cuda::KeyBuffers>,
    ) -> super::sam_attention_cuda::AttentionParts<'a> {
        super::sam_attention_cuda::AttentionParts {
            qkv: &self.qkv,
            proj: &self.proj,
            rel_pos_h: &self.rel_pos_h,
            rel_pos_w: &self.rel_pos_w,
            heads: self.heads,
            tables: &self.kernel_tables,
            rel_pos_gemm: self.optim.rel_pos_gemm,
            // Projecting on the padded windows only pays when the add + LayerNorm kernel reads
            // them in place; merged afterwards it would cost more rows and the same copy.
            proj_in_windows: self.optim.proj_in_windows && self.optim.add_layer_norm_kernel,
            window_kernel: self.optim.window_kernel,
            global_kernel: self.optim.global_kernel,
            window_fmha: self.window_biases.as_ref(),
            keys,
        }
    }

    /// Global attention over the whole grid x [B,H,W,C] → [B,H,W,C].
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let (b, h, w, c) = x.size4()?;
        let nh = self.heads;
        let hd = c / nh;
        let qkv = self
            .qkv
            .forward(x)?
            .f_reshape([b, h * w, 3, nh, hd])?
            .f_permute([2, 0, 3, 1, 4])?
            .f_contiguous()?; // (3, b, nh, hw, hd)
        let (q, k, v) = (qkv.f_get(0)?, qkv.f_get(1)?, qkv.f_get(2)?);
        let o = self.attend(&q, &k, &v, h, w)?; // (b, nh, hw, hd)
        let o = o
            .f_view([b, nh, h, w, hd])?
            .f_permute([0, 2, 3, 1, 4])?
            .f_reshape([b, h, w, c])?; // (b, h, w, c)
        self.proj.forward(&o)
    }

    /// Windowed attention with the projections on the whole (padded) grid: one copy splits
    /// q/k/v into windows and heads, one merges the output back.
    fn forward_windows_fused(&self, y: &Tensor, ws: i64) -> Result<Tensor> {
        let (b, h, w, c) = y.size4()?;
        let nh = self.heads;
        let hd = c / nh;
        let (y, (hp, wp)) = pad_to_windows(y, ws)?;
        let (nwh, nww) = (hp / ws, wp / ws);
        let qkv = self
            .qkv
            .forward(&y)? // (b, hp, wp, 3c)
            .f_view(&[b, nwh, ws, nww, ws, 3, nh, hd][..])?
            .f_permute([5, 0, 1, 3, 6, 2, 4, 7])? // (3, b, nwh, nww, nh, ws, ws, hd)
            .f_reshape([3, b * nwh * nww, nh, ws * ws, hd])?;
        let (q, k, v) = (qkv.f_get(0)?, qkv.f_get(1)?, qkv.f_get(2)?);
        let o = self.attend(&q, &k, &v, ws, ws)?; // (b·nW, nh, ws², hd)
        let o = o
            .f_view(&[b, nwh, nww, nh, ws, ws, hd][..])?
            .f_permute([0, 1, 4, 2, 5, 3, 6])? // (b, nwh, ws, nww, ws, nh, hd)
            .f_reshape([b, hp, wp, c])?;
        let o = if hp > h || wp > w {
            o.f_narrow(1, 0, h)?.f_narrow(2, 0, w)?
        } else {
            o
        };
        self.proj.forward(&o)
    }

    /// softmax(q·kᵀ/√d + rel-pos bias)·v on an h×w grid; q, k, v [B', heads, h·w, d].
    fn attend(&self, q: &Tensor, k: &Tensor, v: &Tensor, h: i64, w: i64) -> Result<Tensor> {
        if self.optim.fused_rel_pos {
            return self.attend_rel_pos_in_qk(q, k, v, h, w);
        }
        let (b, nh, n, hd) = q.size4()?;
        let bias = rel_pos_bias(
            &q.f_reshape([b * nh, n, hd])?,
            &self.rel_pos_h,
            &self.rel_pos_w,
            h,
            w,
        )?
        .f_view([b, nh, n, n])?;
        // SDPA scales only q·kᵀ (1/√hd) and adds the bias unscaled.
        Ok(Tensor::f_scaled_dot_product_attention(
            q,
            k,
            v,
            Some(&bias),
            0.0,
            false,
            None,
            false,
        )?)
    }

    /// The bias folded into q·k (module docs): no [B',heads,N,N] tensor, no mask.
    fn attend_rel_pos_in_qk(
        &self,
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
        h: i64,
        w: i64,
    ) -> Result<Tensor> {
        let (b, nh, n, hd) = q.size4()?;
        let (bh, bw) = rel_pos_terms(
            &q.f_reshape([b * nh, n, hd])?,
            &self.rel_pos_h,
            &self.rel_pos_w,
            h,
            w,
        )?;
        let root_d = (hd as f64).sqrt();
        // Fused kernels want the head dim a multiple of 8 elements.
        let pad = (8 - (hd + h + w) % 8) % 8;
        let (kind, dev) = (q.kind(), q.device());
        let q_aug = Tensor::f_cat(
            &[
                q.shallow_clone(),
                bh.f_mul_scalar(root_d)?.f_view([b, nh, n, h])?,
                bw.f_mul_scalar(root_d)?.f_view([b, nh, n, w])?,
                Tensor::f_zeros([b, nh, n, pad], (kind, dev))?,
            ],
            -1,
        )?;
        let keys =
            key_position_onehots(h, w, pad, kind, dev)?.f_expand([b, nh, n, h + w + pad], false)?;
        let k_aug = Tensor::f_cat(&[k.shallow_clone(), keys], -1)?;
        Ok(Tensor::f_scaled_dot_product_attention(
            &q_aug,
            &k_aug,
            v,
            None::<&Tensor>,
            0.0,
            false,
            Some(1.0 / root_d),
            false,
        )?)
    }
}

#[cfg(test)]
pub(crate) mod tests;
