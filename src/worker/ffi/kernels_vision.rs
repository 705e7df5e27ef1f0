//! The vision encoders' CUDA kernels (`csrc/kernels/sam_attention.cu`, `add_layer_norm.cu` and
//! `quick_gelu.cu` behind `csrc/kernels_vision.cpp`): SAM's attention glue, the residual add +
//! LayerNorm and CLIP's quickGELU, as safe wrappers like [`super::kernels`]'s.
use super::kernels::{ceil_div, empty, ptr};
use super::{check, ShimError};
use std::ffi::{c_int, c_void};
use tch::Tensor;

extern "C" {
    fn llmprof_quick_gelu(x: *const c_void, out: *const c_void) -> c_int;
    fn llmprof_sam_patches(pixels: *const c_void, patch: i64, out: *const c_void) -> c_int;
    fn llmprof_sam_pack_qkv(
        qkv: *const c_void,
        bias: *const c_void,
        heads: i64,
        win_h: i64,
        win_w: i64,
        q_aug: *const c_void,
        k_aug: *const c_void,
        v: *const c_void,
        q_rows: *const c_void,
        q_cols: *const c_void,
        keys_ready: c_int,
    ) -> c_int;
    fn llmprof_sam_fill_rel_pos(
        prod: *const c_void,
        head_dim: i64,
        win_h: i64,
        win_w: i64,
        q_aug: *const c_void,
    ) -> c_int;
    fn llmprof_sam_merge_windows(
        o: *const c_void,
        win_h: i64,
        win_w: i64,
        out: *const c_void,
    ) -> c_int;
    fn llmprof_sam_window_attention(
        qkv: *const c_void,
        bias: *const c_void,
        prod: *const c_void,
        heads: i64,
        win_h: i64,
        win_w: i64,
        out: *const c_void,
    ) -> c_int;
    fn llmprof_add_layer_norm(
        x: *const c_void,
        delta: *const c_void,
        weight: *const c_void,
        bias: *const c_void,
        eps: f64,
        delta_win_h: i64,
        delta_win_w: i64,
        sum: *const c_void,
        out: *const c_void,
    ) -> c_int;
}

/// The widest row [`add_layer_norm`] takes, in 16-byte vectors per lane of a warp.
const ADD_LAYER_NORM_MAX_PASSES: i64 = 8;

/// Whether [`add_layer_norm`] takes rows of `hidden` elements of `kind`: a multiple of a
/// warp-wide pass of 16-byte vectors (256 bf16/f16 or 128 f32 channels), at most
/// [`ADD_LAYER_NORM_MAX_PASSES`] passes.
pub fn add_layer_norm_fits(kind: tch::Kind, hidden: i64) -> bool {
    let pass = 32 * (16 / kind.elt_size_in_bytes() as i64);
    hidden > 0 && hidden % pass == 0 && hidden / pass <= ADD_LAYER_NORM_MAX_PASSES
}

/// The residual add and the LayerNorm after it in one kernel: `x` + `delta` [.., hidden]
/// (contiguous, CUDA, same dtype, [`add_layer_norm_fits`]) → (sum, layer_norm(sum)·`weight` +
/// `bias`), the statistics in fp32 over the rounded sum. `delta_windows` = (win_h, win_w): `x`
/// is a grid [B,H,W,C] and `delta` holds its tokens cut into windows of that size over the grid
/// padded to their multiples, [B·windows, win_h·win_w, C] (as SAM's attention computes them).
pub fn add_layer_norm(
    x: &Tensor,
    delta: &Tensor,
    (weight, bias): (&Tensor, &Tensor),
    eps: f64,
    delta_windows: Option<(i64, i64)>,
) -> Result<(Tensor, Tensor), ShimError> {
    let (win_h, win_w) = delta_windows.unwrap_or((0, 0));
    let opts = (x.kind(), x.device());
    let (sum, out) = (empty(&x.size(), opts)?, empty(&x.size(), opts)?);
    // SAFETY: live tensors for the duration of the call; the shim checks shapes and devices.
    check(unsafe {
        llmprof_add_layer_norm(
            ptr(x),
            ptr(delta),
            ptr(weight),
            ptr(bias),
            eps,
            win_h,
            win_w,
            ptr(&sum),
            ptr(&out),
        )
    })?;
    Ok((sum, out))
}

/// Width of q′/k′ for a `win_h`×`win_w` window: head_dim + win_h + win_w, rounded up to 8.
pub fn sam_aug_dim(head_dim: i64, win_h: i64, win_w: i64) -> i64 {
    ceil_div(head_dim + win_h + win_w, 8) * 8
}

/// What [`sam_pack_qkv`] returns: windows = `B·nW`, n = win_h·win_w tokens per window, each
/// tensor token-major ([windows, n, heads, ..], contiguous) so that attention over their
/// [windows, heads, n, ..] views writes its output token-major too.
pub struct SamPacked {
    /// [B·nW, n, heads, aug]: [q, relative-position columns and padding (left unwritten without
    /// the q copies, else zeros for the caller to overwrite)].
    pub q_aug: Tensor,
    /// [B·nW, n, heads, aug]: [k, onehot(row), onehot(col), 0…].
    pub k_aug: Tensor,
    /// [B·nW, n, heads, head_dim].
    pub v: Tensor,
    /// With the q copies: q as [win_h, B·nW·heads, win_w, head_dim] (batched by window row) and
    /// as [win_w, B·nW·heads, win_h, head_dim] (batched by window column).
    pub q_rows_cols: Option<(Tensor, Tensor)>,
}

/// SAM's folded-bias attention inputs from the qkv Linear's output `qkv` [B,H,W,3C]
/// (contiguous, on a CUDA device), in windows of `win_h`×`win_w` over the grid padded to their
/// multiple (padded tokens take `bias`); `q_copies`: q also in the two batched layouts of
/// per-window-row and per-column relative-position GEMMs. `keys`: the `k_aug` of an earlier pack
/// of the same shape, reused (its one-hot and zero columns, the same for every layer, are not
/// written again; only its k columns are).
pub fn sam_pack_qkv(
    qkv: &Tensor,
    bias: &Tensor,
    heads: i64,
    (win_h, win_w): (i64, i64),
    q_copies: bool,
    keys: Option<&Tensor>,
) -> Result<SamPacked, ShimError> {
    let (b, h, w, c3) = qkv
        .size4()
        .map_err(|e| ShimError::new(format!("sam_pack_qkv: qkv: {e}")))?;
    let head_dim = c3 / 3 / heads.max(1);
    let windows = b * ceil_div(h, win_h) * ceil_div(w, win_w);
    let n = win_h * win_w;
    let aug = sam_aug_dim(head_dim, win_h, win_w);
    let opts = (qkv.kind(), qkv.device());
    let q_rows_cols = if q_copies {
        Some((
            empty(&[win_h, windows * heads, win_w, head_dim], opts)?,
            empty(&[win_w, windows * heads, win_h, head_dim], opts)?,
        ))
    } else {
        None
    };
    let p = SamPacked {
        q_aug: empty(&[windows, n, heads, aug], opts)?,
        k_aug: match keys {
            Some(k) => k.shallow_clone(),
            None => empty(&[windows, n, heads, aug], opts)?,
        },
        v: empty(&[windows, n, heads, head_dim], opts)?,
        q_rows_cols,
    };
    let (q_rows, q_cols) = match &p.q_rows_cols {
        Some((r, c)) => (ptr(r), ptr(c)),
        None => (std::ptr::null(), std::ptr::null()),
    };
    // SAFETY: live tensors (or NULL for both copies) for the duration of the call; the shim
    // checks shapes and devices.
    check(unsafe {
        llmprof_sam_pack_qkv(
            ptr(qkv),
            ptr(bias),
            heads,
            win_h,
            win_w,
            ptr(&p.q_aug),
            ptr(&p.k_aug),
            ptr(&p.v),
            q_rows,
            q_cols,
            c_int::from(keys.is_some()),
        )
    })?;
    Ok(p)
}

/// Fills q′'s (`q_aug` from [`sam_pack_qkv`] without the q copies) columns after `head_dim` from
/// `prod` [rows of q′, ≥ 2·(win_h + win_w − 1)]: each row's q times the resized, scaled
/// relative-position table of the row axis (2·win_h − 1 columns), then of the column axis,
/// gathered per query position (R[i, j] = table[i − j + l − 1]); zeros after.
pub fn sam_fill_rel_pos(
    prod: &Tensor,
    head_dim: i64,
    (win_h, win_w): (i64, i64),
    q_aug: &Tensor,
) -> Result<(), ShimError> {
    // SAFETY: live tensors for the duration of the call; the shim checks shapes and devices.
    check(unsafe { llmprof_sam_fill_rel_pos(ptr(prod), head_dim, win_h, win_w, ptr(q_aug)) })
}

/// The attention output `o` [B·nW, heads, n, head_dim] back on the [B, h, w, heads·head_dim] grid,
/// windows merged and padding cropped.
pub fn sam_merge_windows(
    o: &Tensor,
    (h, w): (i64, i64),
    (win_h, win_w): (i64, i64),
) -> Result<Tensor, ShimError> {
    let (nb, heads, _, head_dim) = o
        .size4()
        .map_err(|e| ShimError::new(format!("sam_merge_windows: o: {e}")))?;
    let b = nb / (ceil_div(h, win_h) * ceil_div(w, win_w)).max(1);
    let out = empty(&[b, h, w, heads * head_dim], (o.kind(), o.device()))?;
    // SAFETY: live tensors for the duration of the call; the shim checks shapes and devices.
    check(unsafe { llmprof_sam_merge_windows(ptr(o), win_h, win_w, ptr(&out)) })?;
    Ok(out)
}

/// Whether [`sam_window_attention`] takes windows of `win` with heads of `head_dim` channels in
/// `kind`: bf16, head_dim 64, windows of 14×14 (SAM's) or 4×4 (the tests'), the window's sides
/// being the kernel's template arguments.
pub fn sam_window_attention_fits(kind: tch::Kind, head_dim: i64, win: (i64, i64)) -> bool {
    kind == tch::Kind::BFloat16 && head_dim == 64 && matches!(win, (14, 14) | (4, 4))
}

/// SAM's windowed attention in one kernel: `qkv` [B,H,W,3·heads·64] (the qkv Linear's output,
/// contiguous, bf16) in `win` windows over the grid padded to their multiples (padded tokens take
/// `bias`, the Linear's), the decomposed relative-position bias from `prod` [heads, B·H·W, cols]
/// (each token's q times the √64-scaled resized tables: row offsets, then column offsets) →
/// [B·windows, win_h·win_w, heads·64], token-major in each window.
pub fn sam_window_attention(
    qkv: &Tensor,
    bias: &Tensor,
    prod: &Tensor,
    heads: i64,
    (win_h, win_w): (i64, i64),
) -> Result<Tensor, ShimError> {
    let (b, h, w, _) = qkv
        .size4()
        .map_err(|e| ShimError::new(format!("sam_window_attention: qkv: {e}")))?;
    let windows = b * ceil_div(h, win_h) * ceil_div(w, win_w);
    let out = empty(
        &[windows, win_h * win_w, heads * 64],
        (qkv.kind(), qkv.device()),
    )?;
    // SAFETY: live tensors for the duration of the call; the shim checks shapes and devices.
    check(unsafe {
        llmprof_sam_window_attention(
            ptr(qkv),
            ptr(bias),
            ptr(prod),
            heads,
            win_h,
            win_w,
            ptr(&out),
        )
    })?;
    Ok(out)
}

/// SAM's patch-embedding operand [B, S/`patch`, S/`patch`, 3·`patch`²] in `kind` (columns in
/// the convolution weight's (channel, row, column) order) from uint8 `pixels` [B,3,S,S] on a
/// CUDA device (any strides), normalised as (x/255 − 0.5)/0.5: the same values as libtorch's
/// conversion, scalar ops and cast, bit for bit.
pub fn sam_patches(pixels: &Tensor, patch: i64, kind: tch::Kind) -> Result<Tensor, ShimError> {
    let size = pixels.size();
    let (b, side) = match size[..] {
        [b, 3, s, s2] if s == s2 && patch > 0 && s % patch == 0 => (b, s),
        _ => {
            return Err(ShimError::new(format!(
                "sam_patches: pixels must be [B,3,S,S] with S a multiple of {patch}, got {size:?}"
            )))
        }
    };
    let g = side / patch;
    let out = empty(&[b, g, g, 3 * patch * patch], (kind, pixels.device()))?;
    // SAFETY: live tensors for the duration of the call; the shim checks shapes and devices.
    check(unsafe { llmprof_sam_patches(ptr(pixels), patch, ptr(&out)) })?;
    Ok(out)
}

/// CLIP's quickGELU, `x`·sigmoid(1.702·`x`), in one kernel (`x` contiguous on a CUDA device),
/// rounded where libtorch's multiply, sigmoid and multiply round.
pub fn quick_gelu(x: &Tensor) -> Result<Tensor, ShimError> {
    let out = empty(&x.size(), (x.kind(), x.device()))?;
    // SAFETY: live tensors for the duration of the call; the shim checks shapes and devices.
    check(unsafe { llmprof_quick_gelu(ptr(x), ptr(&out)) })?;
    Ok(out)
}
