//! SAM's folded-bias attention (`model.optim.sam_cuda_kernels`) with llmprof's CUDA kernels
//! (`csrc/kernels/sam_attention.cu`): the qkv Linear runs on the unpadded grid; one kernel packs
//! k′ = [k, onehot(row), onehot(col)], v and the q part of q′ per window and head (padded tokens
//! take the Linear's bias, as zero inputs would). q′'s relative-position columns √d·q·Rh and
//! √d·q·Rw come, with `model.optim.sam_rel_pos_gemm`, from one GEMM of q′'s q columns with
//! both axes' resized tables (2·l − 1 rows each, every relative offset once) and one kernel that
//! gathers each query's offsets into q′; without it, from two cuBLAS batched GEMMs over copies
//! of q batched by window row and by column, copied into q′. cuDNN's fused attention runs with
//! no mask over token-major q′/k′/v, so it writes its output token-major: for global attention
//! merging the heads is a view; windowed outputs are projected in their windows and read in
//! place by the add + LayerNorm kernel (`model.optim.sam_proj_in_windows`), or merged back
//! into the grid by one kernel. Same mathematics as
//! [`super::sam_attention::SamAttention`] with `fused_rel_pos` (√d folded into the tables: exact
//! for SAM's 64 channels, a power of two); `llmprof debug fast-path` holds it to the reference
//! on the GPU.
use super::rel_pos::{gather_rel_table, products_per_head, resized_rel_table};
use super::sam_window_attention;
use super::sam_window_fmha::{self, WindowBiases};
use crate::engine::size_cache::{Shared, SizeCache};
use crate::ffi::{kernels_gemm, kernels_vision};
use crate::models::layers::basic::Linear;
use anyhow::{Context, Result};
use std::cell::RefCell;
use tch::Tensor;

/// The k′ buffers of one encoder pass, one per shape: k′'s one-hot and zero columns depend only
/// on the window shape, so every later layer of that shape reuses the first layer's buffer and
/// the pack writes only its k columns (a third of k′ for global attention). One per pass (per
/// stream): two passes of one shape may overlap on two streams, and must not share a buffer.
#[derive(Debug, Default)]
pub struct KeyBuffers(RefCell<Vec<(KeyShape, Tensor)>>);

/// What a k′ is packed for: the qkv Linear's output shape [B,H,W,3C], the heads and the window
/// (the one-hot layout depends on the window's sides, not only on its size).
type KeyShape = (Vec<i64>, i64, (i64, i64));

impl KeyBuffers {
    /// The k′ an earlier layer of this pass packed for `shape`, if any.
    fn find(&self, shape: &KeyShape) -> Option<Tensor> {
        self.0
            .borrow()
            .iter()
            .find(|(s, _)| s == shape)
            .map(|(_, k)| k.shallow_clone())
    }

    fn keep(&self, shape: KeyShape, k: &Tensor) {
        self.0.borrow_mut().push((shape, k.shallow_clone()));
    }
}

/// The scaled relative-position matrices of one window size, built on first use.
#[derive(Debug)]
pub struct WindowTables {
    /// √d·Rh [wh, wh, d] and √d·Rw [ww, ww, d] (the batched GEMMs' operands).
    pub rh: Tensor,
    pub rw: Tensor,
    /// [d, prod_cols]: the transposed resized tables √d·table_h [2·wh − 1, d] and √d·table_w
    /// [2·ww − 1, d] side by side, zero columns up to a multiple of 8 (one GEMM's operand).
    pub both_t: Tensor,
}

impl Shared for WindowTables {
    fn share(&self) -> Self {
        WindowTables {
            rh: self.rh.shallow_clone(),
            rw: self.rw.shallow_clone(),
            both_t: self.both_t.shallow_clone(),
        }
    }
}

/// [`WindowTables`] per window size.
pub type TableCache = SizeCache<(i64, i64), WindowTables>;

/// The weights of one attention the kernels need.
pub struct AttentionParts<'a> {
    pub qkv: &'a Linear,
    pub proj: &'a Linear,
    pub rel_pos_h: &'a Tensor,
    pub rel_pos_w: &'a Tensor,
    pub heads: i64,
    pub tables: &'a TableCache,
    /// `model.optim.sam_rel_pos_gemm`.
    pub rel_pos_gemm: bool,
    /// `model.optim.sam_proj_in_windows`.
    pub proj_in_windows: bool,
    /// `model.optim.sam_window_attention_kernel`: windowed attention in one kernel where it
    /// takes the shapes and `proj_in_windows` holds ([`super::sam_window_attention`]).
    pub window_kernel: bool,
    /// `model.optim.sam_global_attention_kernel`: global attention in one Hopper kernel with
    /// the bias inside, where it takes the shape ([`kernels_gemm::sam_global_attention_fits`]).
    pub global_kernel: bool,
    /// `model.optim.sam_window_fmha_kernel`: the biases of windowed attention in one Hopper
    /// kernel, where it takes the shape ([`kernels_gemm::sam_window_fmha_fits`]).
    pub window_fmha: Option<&'a WindowBiases>,
    /// The pass's k′ buffers to reuse, if any.
    pub keys: Option<&'a KeyBuffers>,
}

/// SAM attention's output: on the grid, or, for windowed attention with
/// `model.optim.sam_proj_in_windows`, projected in the windows the attention ran in (the
/// add + LayerNorm kernel after it reads the rows where they are; [`AttnOut::into_grid`] merges
/// them for anything else).
#[derive(Debug)]
pub enum AttnOut {
    /// [B,H,W,C].
    Grid(Tensor),
    /// [B·windows, win_h·win_w, C]: the grid `grid` = (H, W) padded to multiples of `win`, cut
    /// into windows (row-major windows, row-major tokens in each).
    Windows {
        y: Tensor,
        grid: (i64, i64),
        win: (i64, i64),
    },
}

impl AttnOut {
    /// The output on the grid, [B,H,W,C]: windows merged and padding cropped.
    pub fn into_grid(self) -> Result<Tensor> {
        match self {
            AttnOut::Grid(t) => Ok(t),
            // One "head" as wide as the channels: the merge kernel's [B·windows, heads, n, hd].
            AttnOut::Windows { y, grid, win } => Ok(kernels_vision::sam_merge_windows(
                &y.f_unsqueeze(1)?,
                grid,
                win,
            )?),
        }
    }
}

/// The matrices for a `win` window (√d folded into the tables), from the cache.
fn scaled_tables(p: &AttentionParts<'_>, win: (i64, i64), scale: f64) -> Result<WindowTables> {
    p.tables.get_or_build(win, || {
        let resized_h = resized_rel_table(&p.rel_pos_h.f_mul_scalar(scale)?, win.0)?;
        let resized_w = resized_rel_table(&p.rel_pos_w.f_mul_scalar(scale)?, win.1)?;
        let (len_h, d) = resized_h.size2()?;
        let pad = (8 - (len_h + resized_w.size2()?.0) % 8) % 8;
        let zeros = Tensor::f_zeros([pad, d], (resized_h.kind(), resized_h.device()))?;
        Ok(WindowTables {
            rh: gather_rel_table(&resized_h, win.0)?,
            rw: gather_rel_table(&resized_w, win.1)?,
            both_t: Tensor::f_cat(&[&resized_h, &resized_w, &zeros], 0)?
                .f_transpose(0, 1)?
                .f_contiguous()?,
        })
    })
}

/// Attention of a block over the normalised grid `y` [B,H,W,C] on a CUDA device, in windows of
/// `win` (the whole grid for global attention): [B,H,W,C], or the windows (`proj_in_windows`).
pub fn forward(p: AttentionParts<'_>, y: &Tensor, win: (i64, i64)) -> Result<AttnOut> {
    let (_, h, w, c) = y.size4()?;
    let hd = c / p.heads;
    let scale = (hd as f64).sqrt();
    let bias = p
        .qkv
        .bias
        .as_ref()
        .context("SAM's qkv projection has no bias")?;
    if let Some(biases) = p.window_fmha {
        if win != (h, w) && kernels_gemm::sam_window_fmha_fits(y, p.heads, win) {
            let tables = scaled_tables(&p, win, scale)?;
            let out = sam_window_fmha::forward(y, p.qkv, p.proj, biases, &tables.both_t, p.heads)?;
            return Ok(AttnOut::Grid(out));
        }
    }
    // (b, h, w, 3c)
    let qkv = p.qkv.forward(y)?.f_contiguous()?;
    // The window kernel's output is projected in its windows: only where the add + LayerNorm
    // kernel reads them there (`proj_in_windows`); otherwise the folded path.
    if p.window_kernel
        && p.proj_in_windows
        && win != (h, w)
        && kernels_vision::sam_window_attention_fits(qkv.kind(), hd, win)
    {
        let tables = scaled_tables(&p, win, scale)?;
        let y = sam_window_attention::forward(&qkv, bias, &tables.both_t, p.heads, p.proj, win)?;
        return Ok(AttnOut::Windows {
            y,
            grid: (h, w),
            win,
        });
    }
    if p.global_kernel && win == (h, w) && kernels_gemm::sam_global_attention_fits(&qkv, p.heads) {
        let tables = scaled_tables(&p, win, scale)?;
        let prod = products_per_head(&qkv, &tables.both_t, p.heads)?;
        let o = kernels_gemm::sam_global_attention(&qkv, &prod)?;
        return Ok(AttnOut::Grid(p.proj.forward(&o)?));
    }
    let key_shape = (qkv.size(), p.heads, win);
    let reused = p.keys.and_then(|k| k.find(&key_shape));
    let pk =
        kernels_vision::sam_pack_qkv(&qkv, bias, p.heads, win, !p.rel_pos_gemm, reused.as_ref())?;
    if let (Some(keys), None) = (p.keys, &reused) {
        keys.keep(key_shape, &pk.k_aug);
    }
    let tables = scaled_tables(&p, win, scale)?;
    match &pk.q_rows_cols {
        None => rel_pos_by_one_gemm(&pk.q_aug, &tables, hd, win)?,
        Some((q_rows, q_cols)) => {
            rel_pos_by_batched_gemms(&pk.q_aug, q_rows, q_cols, &tables, hd, win)?
        }
    }
    // Token-major inputs: cuDNN writes the output in their layout.
    let o = Tensor::f_scaled_dot_product_attention(
        &pk.q_aug.f_transpose(1, 2)?,
        &pk.k_aug.f_transpose(1, 2)?,
        &pk.v.f_transpose(1, 2)?,
        None::<&Tensor>,
        0.0,
        false,
        Some(1.0 / scale),
        false,
    )?;
    // o is (b·windows, heads, n, hd); merging heads is a view when the attention wrote it
    // token-major, [b·windows, n, heads, hd] in memory.
    let tokens = o.f_transpose(1, 2)?;
    let grid = if win == (h, w) && tokens.is_contiguous() {
        tokens.f_view([-1, h, w, c])?
    } else if p.proj_in_windows && tokens.is_contiguous() {
        let y = p.proj.forward(&tokens.f_view([-1, win.0 * win.1, c])?)?;
        return Ok(AttnOut::Windows {
            y,
            grid: (h, w),
            win,
        });
    } else {
        kernels_vision::sam_merge_windows(&o, (h, w), win)?
    };
    Ok(AttnOut::Grid(p.proj.forward(&grid)?))
}

/// q′'s relative-position columns from one GEMM: every row's q (q′'s first `hd` columns, read
/// in place) times both resized tables, [rows, prod_cols]; the kernel gathers each query
/// position's offsets into q′.
fn rel_pos_by_one_gemm(q_aug: &Tensor, t: &WindowTables, hd: i64, win: (i64, i64)) -> Result<()> {
    let aug = q_aug.size()[3];
    let q = q_aug.f_view([-1, aug])?.f_narrow(1, 0, hd)?; // (rows, hd), row stride aug
    let prod = q.f_mm(&t.both_t)?; // (rows, prod_cols)
    kernels_vision::sam_fill_rel_pos(&prod, hd, win, q_aug)?;
    Ok(())
}

/// q′'s relative-position columns from two batched GEMMs over q copied per window row and per
/// window column, then strided copies into q′.
fn rel_pos_by_batched_gemms(
    q_aug: &Tensor,
    q_rows: &Tensor,
    q_cols: &Tensor,
    t: &WindowTables,
    hd: i64,
    (wh, ww): (i64, i64),
) -> Result<()> {
    let (windows, _, heads, aug) = q_aug.size4()?;
    let nb = windows * heads;
    // √d·q·Rh: per window row qh, [(window·head, qw), d] × [d, kh] → (qh, nb·ww, kh).
    let bh = q_rows
        .f_view([wh, nb * ww, hd])?
        .f_bmm(&t.rh.f_transpose(1, 2)?)?;
    // √d·q·Rw: per window column qw, [(window·head, qh), d] × [d, kw] → (qw, nb·wh, kw).
    let bw = q_cols
        .f_view([ww, nb * wh, hd])?
        .f_bmm(&t.rw.f_transpose(1, 2)?)?;
    let q_grid = q_aug.f_view([windows, wh, ww, heads, aug])?; // (window, qh, qw, head, aug)
    q_grid
        .f_narrow(4, hd, wh)?
        .f_permute([1, 0, 3, 2, 4])? // (qh, window, head, qw, kh)
        .f_copy_(&bh.f_view([wh, windows, heads, ww, wh])?)?;
    q_grid
        .f_narrow(4, hd + wh, ww)?
        .f_permute([2, 0, 3, 1, 4])? // (qw, window, head, qh, kw)
        .f_copy_(&bw.f_view([ww, windows, heads, wh, ww])?)?;
    Ok(())
}

#[cfg(test)]
mod tests;
