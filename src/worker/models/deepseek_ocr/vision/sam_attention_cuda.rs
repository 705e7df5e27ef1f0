//! SAM's folded-bias attention (`runtime.optim.sam_cuda_kernels`) with llmprof's CUDA kernels
//! (`csrc/kernels/sam_attention.cu`): the qkv Linear runs on the unpadded grid; one kernel packs
//! k′ = [k, onehot(row), onehot(col)], v and the q part of q′ per window and head (padded tokens
//! take the Linear's bias, as zero inputs would). q′'s relative-position columns √d·q·Rh and
//! √d·q·Rw come, with `runtime.optim.sam_rel_pos_gemm`, from one GEMM of q′'s q columns with
//! both axes' resized tables (2·l − 1 rows each, every relative offset once) and one kernel that
//! gathers each query's offsets into q′; without it, from two cuBLAS batched GEMMs over copies
//! of q batched by window row and by column, copied into q′. cuDNN's fused attention runs with
//! no mask over token-major q′/k′/v, so it writes its output token-major: for global attention
//! merging the heads is a view; windowed outputs are projected in their windows and read in
//! place by the add + LayerNorm kernel (`runtime.optim.sam_proj_in_windows`), or merged back
//! into the grid by one kernel. Same mathematics as
//! [`super::sam_attention::SamAttention`] with `fused_rel_pos` (√d folded into the tables: exact
//! for SAM's 64 channels, a power of two); `llmprof debug fast-path` holds it to the reference
//! on the GPU.
use super::rel_pos::products_per_head;
use super::rel_pos::{gather_rel_table, resized_rel_table};
use super::sam_window_attention;
use crate::ffi::{kernels_gemm, kernels_vision};
use crate::models::common::layers::Linear;
use crate::models::common::size_cache::{Shared, SizeCache};
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
    /// `runtime.optim.sam_rel_pos_gemm`.
    pub rel_pos_gemm: bool,
    /// `runtime.optim.sam_proj_in_windows`.
    pub proj_in_windows: bool,
    /// `runtime.optim.sam_window_attention_kernel`: windowed attention in one kernel where it
    /// takes the shapes and `proj_in_windows` holds ([`super::sam_window_attention`]).
    pub window_kernel: bool,
    /// `runtime.optim.sam_global_attention_kernel`: global attention in one Hopper kernel with
    /// the bias inside, where it takes the shape ([`kernels_gemm::sam_global_attention_fits`]).
    pub global_kernel: bool,
    /// The pass's k′ buffers to reuse, if any.
    pub keys: Option<&'a KeyBuffers>,
}

/// SAM attention's output: on the grid, or, for windowed attention with
/// `runtime.optim.sam_proj_in_windows`, projected in the windows the attention ran in (the
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
    let qkv = p.qkv.forward(y)?.f_contiguous()?; // (b, h, w, 3c)
                                                 // The kernel's output is projected in its windows: only where the add + LayerNorm kernel
                                                 // reads them there (`proj_in_windows`); otherwise the folded path.
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
mod tests {
    use super::super::sam_attention::tests::{attention_on, kernels_gpu, rel_err, weights};
    use super::super::sam_attention::SamOptim;
    use tch::{Device, Kind, Tensor};

    /// The kernels against the libtorch formulation of the folded bias and the reference, on the
    /// GPU, with the relative-position products from batched GEMMs and from one GEMM: a 9×7 grid
    /// (windows of 4 need padding both ways), global layers with resized tables, heads of 64
    /// channels (SAM's; 16-byte vectors) and of 12 (√d not a power of two; single elements in
    /// bf16). fp32 with TF32 off within 1e-5; bf16 no further from fp32 than libtorch's bf16
    /// folded-bias formulation, doubled.
    #[test]
    #[ignore = "needs a CUDA GPU and a build with llmprof's kernels: cargo test -- --ignored on the GPU machine"]
    fn kernels_equal_the_reference_on_a_gpu() {
        let dev = kernels_gpu();
        let libtorch_fused = SamOptim {
            fused_rel_pos: true,
            fused_windows: true,
            ..SamOptim::default()
        };
        for (c, heads) in [(128, 2), (24, 2)] {
            let y = Tensor::randn([2, 9, 7, c], (Kind::Float, dev));
            let yb = y.to_kind(Kind::BFloat16);
            let w = weights(c, heads, 13);
            let reference = attention_on(&w, heads, SamOptim::default(), Kind::Float, dev);
            let bf16_libtorch = attention_on(&w, heads, libtorch_fused, Kind::BFloat16, dev);
            for (rel_pos_gemm, proj_in_windows) in [(false, false), (true, false), (true, true)] {
                let kernels = SamOptim {
                    cuda_kernels: true,
                    rel_pos_gemm,
                    proj_in_windows,
                    // The windowed projection needs it (forward_block merges its windows).
                    add_layer_norm_kernel: proj_in_windows,
                    ..libtorch_fused
                };
                let fast = attention_on(&w, heads, kernels, Kind::Float, dev);
                let fast_bf16 = attention_on(&w, heads, kernels, Kind::BFloat16, dev);
                for window in [0, 4] {
                    let want = reference.forward_block(&y, window).unwrap();
                    let got = fast.forward_block(&y, window).unwrap();
                    assert_eq!(got.size(), vec![2, 9, 7, c]);
                    let e = rel_err(&got, &want);
                    assert!(
                        e < 1e-5,
                        "c {c} window {window} one GEMM {rel_pos_gemm}: {e}"
                    );
                    let e_lib = rel_err(&bf16_libtorch.forward_block(&yb, window).unwrap(), &want);
                    let e_fast = rel_err(&fast_bf16.forward_block(&yb, window).unwrap(), &want);
                    assert!(
                        e_lib > 1e-4 && e_fast <= 2.0 * e_lib,
                        "bf16, c {c} window {window} one GEMM {rel_pos_gemm}: {e_fast} vs libtorch {e_lib}"
                    );
                }
            }
        }
    }

    /// Layers that reuse a pass's k′ buffer (only k written, the one-hot columns left from the
    /// first layer of the shape) give exactly what a fresh pack gives: two attentions with
    /// different weights after each other on one buffer, global and windowed, bf16 with heads
    /// of 64 (16-byte vectors) and of 12 (single elements) and fp32; one buffer per shape is
    /// kept.
    #[test]
    #[ignore = "needs a CUDA GPU and a build with llmprof's kernels: cargo test -- --ignored on the GPU machine"]
    fn reused_key_buffers_equal_fresh_packs_on_a_gpu() {
        use super::KeyBuffers;
        assert!(tch::Cuda::is_available(), "no CUDA device");
        let dev = Device::Cuda(0);
        let kernels = SamOptim {
            cuda_kernels: true,
            fused_rel_pos: true,
            fused_windows: true,
            rel_pos_gemm: true,
            ..SamOptim::default()
        };
        for (kind, c, heads) in [
            (Kind::BFloat16, 128i64, 2i64),
            (Kind::BFloat16, 24, 2),
            (Kind::Float, 24, 2),
        ] {
            let y = Tensor::randn([2, 9, 7, c], (kind, dev));
            let layers = [
                attention_on(&weights(c, heads, 13), heads, kernels, kind, dev),
                attention_on(&weights(c, heads, 13), heads, kernels, kind, dev),
            ];
            let keys = KeyBuffers::default();
            for window in [0, 4, 0, 4] {
                for layer in &layers {
                    let got = layer
                        .forward_block_out(&y, window, Some(&keys))
                        .unwrap()
                        .into_grid()
                        .unwrap();
                    let want = layer.forward_block(&y, window).unwrap();
                    assert!(got.equal(&want), "{kind:?} window {window}: differs");
                }
            }
            assert_eq!(keys.0.borrow().len(), 2, "one buffer per shape");
        }
    }

    /// A windowed attention output read in place by the add + LayerNorm kernel equals the grid
    /// add bit for bit, and merging it gives the grid back exactly: a 9×7 grid in windows of 4
    /// (padding rows in the windows hold garbage the kernel must not read), fp32 and bf16.
    #[test]
    #[ignore = "needs a CUDA GPU and a build with llmprof's kernels: cargo test -- --ignored on the GPU machine"]
    fn windowed_rows_add_like_the_grid_on_a_gpu() {
        use super::super::sam_attention::window_partition;
        use super::AttnOut;
        use crate::models::common::layers::LayerNorm;
        assert!(tch::Cuda::is_available(), "no CUDA device");
        let dev = Device::Cuda(0);
        for (kind, c) in [(Kind::Float, 256i64), (Kind::BFloat16, 768)] {
            let ln = LayerNorm {
                weight: Tensor::rand([c], (kind, dev)) + 0.5,
                bias: Tensor::randn([c], (kind, dev)) * 0.1,
                eps: 1e-6,
                add_kernel: true,
            };
            let x = Tensor::randn([2, 9, 7, c], (kind, dev));
            let delta = Tensor::randn([2, 9, 7, c], (kind, dev));
            let (windows, _) = window_partition(&delta, 4).unwrap(); // (2·6, 4, 4, c)
            let windows = windows.view([-1, 16, c]);
            // What padding rows hold must not matter: fill them with NaN.
            let pad = Tensor::ones([2, 9, 7, 1], (kind, dev));
            let (pad, _) = window_partition(&pad, 4).unwrap();
            let windows = windows.where_self(
                &pad.view([-1, 16, 1]).ne(0),
                &Tensor::from(f64::NAN).to_kind(kind).to_device(dev),
            );
            assert!(ln.add_kernel_takes(&x, &windows).unwrap());
            let (sum, out) = ln.add_windows_forward(&x, &windows, (4, 4)).unwrap();
            let (want_sum, want) = ln.add_forward(&x, &delta).unwrap();
            assert!(sum.equal(&want_sum), "{kind:?}: sums differ");
            assert!(out.equal(&want), "{kind:?}: norms differ");
            let grid = AttnOut::Windows {
                y: windows,
                grid: (9, 7),
                win: (4, 4),
            }
            .into_grid()
            .unwrap();
            assert!(
                grid.equal(&delta),
                "{kind:?}: merged windows differ from the grid"
            );
        }
    }
}
