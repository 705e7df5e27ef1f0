//! llmprof's own CUDA kernels (`csrc/kernels/*.cu` behind `csrc/kernels.cpp` and
//! `csrc/kernels_vision.cpp`): safe wrappers that allocate the outputs, pass libtorch tensors to
//! the shim and turn its status into errors.
//! [`available`] says whether this build has them (nvcc was found when it was built).
use super::{check, ShimError};
use std::ffi::{c_int, c_void};
use tch::Tensor;

extern "C" {
    fn llmprof_kernels_available() -> c_int;
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
    fn llmprof_moe_route(
        logits: *const c_void,
        k: i64,
        scaling: f64,
        weights: *const c_void,
        ids: *const c_void,
        order: *const c_void,
        slot_token: *const c_void,
        slot_pos: *const c_void,
        group_ends: *const c_void,
    ) -> c_int;
    fn llmprof_moe_combine(
        sorted: *const c_void,
        slot_pos: *const c_void,
        weights: *const c_void,
        shared: *const c_void,
        y: *const c_void,
    ) -> c_int;
    fn llmprof_silu_mul(gate_up: *const c_void, out: *const c_void) -> c_int;
    fn llmprof_decode_attention(
        q: *const c_void,
        k_cache: *const c_void,
        v_cache: *const c_void,
        pad: *const c_void,
        len: *const c_void,
        window: i64,
        out: *const c_void,
    ) -> c_int;
    fn llmprof_add_rms_norm(
        x: *const c_void,
        delta: *const c_void,
        weight: *const c_void,
        eps: f64,
        sum: *const c_void,
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
    fn llmprof_router_logits(x: *const c_void, w: *const c_void, logits: *const c_void) -> c_int;
    fn llmprof_rope_kv(
        qkv: *const c_void,
        cos: *const c_void,
        sin: *const c_void,
        slot: *const c_void,
        heads: i64,
        kv_heads: i64,
        fused_add: i32,
        q: *const c_void,
        k_cache: *const c_void,
        v_cache: *const c_void,
    ) -> c_int;
    fn llmprof_ngram_ban(
        logits: *const c_void,
        recent: *const c_void,
        n: i64,
        bannable: *const c_void,
    ) -> c_int;
    fn llmprof_ngram_push(recent: *const c_void, next: *const c_void) -> c_int;
}

/// The longest n-gram window the push kernel takes.
pub const NGRAM_MAX_WINDOW: i64 = 4096;

/// Sets `logits` [rows, vocab] (fp32, CUDA) to −∞ in place where a token completes an n-gram of
/// the window `recent` [rows, window] (int64, newest last, unwritten slots negative); `bannable`
/// [vocab] bool limits which ids may be banned.
pub fn ngram_ban(
    logits: &Tensor,
    recent: &Tensor,
    n: i64,
    bannable: Option<&Tensor>,
) -> Result<(), ShimError> {
    let b = bannable.map_or(std::ptr::null(), ptr);
    // SAFETY: live tensors for the duration of the call; the shim checks shapes and devices.
    check(unsafe { llmprof_ngram_ban(ptr(logits), ptr(recent), n, b) })
}

/// Shifts each row of `recent` left by one slot and appends `next` [rows] (int64, CUDA).
pub fn ngram_push(recent: &Tensor, next: &Tensor) -> Result<(), ShimError> {
    // SAFETY: live tensors for the duration of the call; the shim checks shapes and devices.
    check(unsafe { llmprof_ngram_push(ptr(recent), ptr(next)) })
}

/// Limits of the one-block MoE router (csrc/kernels/launch.h).
pub const MOE_ROUTE_MAX_EXPERTS: i64 = 256;
pub const MOE_ROUTE_MAX_SLOTS: i64 = 4096;

/// What [`moe_route`] returns.
pub struct MoeRouting {
    /// [tokens, k] fp32: softmax probabilities of the chosen experts × scaling.
    pub weights: Tensor,
    /// [tokens, k] int64: the chosen experts, highest weight first.
    pub ids: Tensor,
    /// [tokens·k] int64: slot indices (token·k + j) sorted stably by expert.
    pub order: Tensor,
    /// [tokens·k] int64: the token of each sorted slot (order / k).
    pub slot_token: Tensor,
    /// [tokens·k] int64: the sorted row of each slot (the inverse of `order`).
    pub slot_pos: Tensor,
    /// [experts] int32: cumulative slot counts per expert (grouped GEMM group ends).
    pub group_ends: Tensor,
}

/// DeepSeek MoE routing of fp32 router logits [tokens, experts] on a CUDA device in one kernel;
/// tokens·k ≤ [`MOE_ROUTE_MAX_SLOTS`], experts ≤ [`MOE_ROUTE_MAX_EXPERTS`].
pub fn moe_route(logits: &Tensor, k: i64, scaling: f64) -> Result<MoeRouting, ShimError> {
    let (n, e) = logits
        .size2()
        .map_err(|err| ShimError::new(format!("moe_route: logits: {err}")))?;
    let dev = logits.device();
    let r = MoeRouting {
        weights: empty(&[n, k], (tch::Kind::Float, dev))?,
        ids: empty(&[n, k], (tch::Kind::Int64, dev))?,
        order: empty(&[n * k], (tch::Kind::Int64, dev))?,
        slot_token: empty(&[n * k], (tch::Kind::Int64, dev))?,
        slot_pos: empty(&[n * k], (tch::Kind::Int64, dev))?,
        group_ends: empty(&[e], (tch::Kind::Int, dev))?,
    };
    // SAFETY: live tensors for the duration of the call; the shim checks shapes and devices.
    check(unsafe {
        llmprof_moe_route(
            ptr(logits),
            k,
            scaling,
            ptr(&r.weights),
            ptr(&r.ids),
            ptr(&r.order),
            ptr(&r.slot_token),
            ptr(&r.slot_pos),
            ptr(&r.group_ends),
        )
    })?;
    Ok(r)
}

/// The MoE combine in one kernel: Σ_j `weights`[t, j] · `sorted`[`slot_pos`[t·k + j]] in fp32,
/// rounded to `sorted`'s dtype, then + `shared` [tokens, hidden] when given → [tokens, hidden].
/// `sorted` [tokens·k, hidden] is the grouped GEMM's output in expert-sorted order; `slot_pos`
/// and `weights` come from [`moe_route`].
pub fn moe_combine(
    sorted: &Tensor,
    slot_pos: &Tensor,
    weights: &Tensor,
    shared: Option<&Tensor>,
) -> Result<Tensor, ShimError> {
    let (tokens, _) = weights
        .size2()
        .map_err(|err| ShimError::new(format!("moe_combine: weights: {err}")))?;
    let (_, hidden) = sorted
        .size2()
        .map_err(|err| ShimError::new(format!("moe_combine: sorted: {err}")))?;
    let y = empty(&[tokens, hidden], (sorted.kind(), sorted.device()))?;
    let shared = shared.map_or(std::ptr::null(), ptr);
    // SAFETY: live tensors for the duration of the call; the shim checks shapes and devices.
    check(unsafe {
        llmprof_moe_combine(ptr(sorted), ptr(slot_pos), ptr(weights), shared, ptr(&y))
    })?;
    Ok(y)
}

/// A decode step's RoPE and KV-cache write in one kernel. `qkv` [B, 1, (heads + 2·kv_heads)·hd]
/// is the fused projection's output, `cos`/`sin` [B, 1, 1, hd] the rotate-half tables; q and k
/// are rotated, k and v written into `k_cache`/`v_cache` [B, kv_heads, slots, hd] at the slot
/// held by `slot` ([1] int64 on the device). `fused_add`: the second term added as one FMA (as
/// `addcmul` does), else as a rounded product and an add. Returns q [B, heads, 1, hd].
pub fn rope_kv(
    qkv: &Tensor,
    (cos, sin): (&Tensor, &Tensor),
    slot: &Tensor,
    (heads, kv_heads): (i64, i64),
    fused_add: bool,
    k_cache: &Tensor,
    v_cache: &Tensor,
) -> Result<Tensor, ShimError> {
    let size = qkv.size();
    if size.len() != 3 || kv_heads < 1 || size[2] % (heads + 2 * kv_heads) != 0 {
        return Err(ShimError::new(format!(
            "rope_kv: qkv {size:?} is not [B, 1, ({heads} + 2 x {kv_heads}) heads x head_dim]"
        )));
    }
    let hd = size[2] / (heads + 2 * kv_heads);
    let q = empty(&[size[0], heads, 1, hd], (qkv.kind(), qkv.device()))?;
    // SAFETY: live tensors for the duration of the call; the shim checks shapes and devices.
    check(unsafe {
        llmprof_rope_kv(
            ptr(qkv),
            ptr(cos),
            ptr(sin),
            ptr(slot),
            heads,
            kv_heads,
            i32::from(fused_add),
            ptr(&q),
            ptr(k_cache),
            ptr(v_cache),
        )
    })?;
    Ok(q)
}

/// SwiGLU's activation in one kernel: `gate_up` [.., 2f] (contiguous, CUDA; gate columns then
/// up columns) → silu(gate)·up [.., f], rounded after the silu and after the product as
/// libtorch's two ops round.
pub fn silu_mul(gate_up: &Tensor) -> Result<Tensor, ShimError> {
    let mut size = gate_up.size();
    let Some(last) = size.last_mut() else {
        return Err(ShimError::new("silu_mul: gate_up is a scalar".to_string()));
    };
    *last /= 2;
    let out = empty(&size, (gate_up.kind(), gate_up.device()))?;
    // SAFETY: live tensors for the duration of the call; the shim checks shapes and devices.
    check(unsafe { llmprof_silu_mul(ptr(gate_up), ptr(&out)) })?;
    Ok(out)
}

/// The widest row [`add_rms_norm`] takes (a row lives in one block's registers).
pub const ADD_RMS_NORM_MAX_HIDDEN: i64 = 8192;

/// The residual add and the RMSNorm after it in one kernel: `x` + `delta` [.., hidden]
/// (contiguous, CUDA, same dtype) → (sum, rms_norm(sum)·`weight`), rounded once after the fp32
/// product like libtorch's fused RMSNorm.
pub fn add_rms_norm(
    x: &Tensor,
    delta: &Tensor,
    weight: &Tensor,
    eps: f64,
) -> Result<(Tensor, Tensor), ShimError> {
    let opts = (x.kind(), x.device());
    let (sum, out) = (empty(&x.size(), opts)?, empty(&x.size(), opts)?);
    // SAFETY: live tensors for the duration of the call; the shim checks shapes and devices.
    check(unsafe {
        llmprof_add_rms_norm(ptr(x), ptr(delta), ptr(weight), eps, ptr(&sum), ptr(&out))
    })?;
    Ok((sum, out))
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

/// MoE router logits in one kernel: `x` [tokens, hidden] (model dtype, read as fp32) · `w`ᵀ
/// ([experts, hidden] fp32) → [tokens, experts] fp32.
pub fn router_logits(x: &Tensor, w: &Tensor) -> Result<Tensor, ShimError> {
    let rows = |t: &Tensor, name: &str| {
        t.size2()
            .map(|(r, _)| r)
            .map_err(|err| ShimError::new(format!("router_logits: {name}: {err}")))
    };
    let logits = empty(
        &[rows(x, "x")?, rows(w, "w")?],
        (tch::Kind::Float, x.device()),
    )?;
    // SAFETY: live tensors for the duration of the call; the shim checks shapes and devices.
    check(unsafe { llmprof_router_logits(ptr(x), ptr(w), ptr(&logits)) })?;
    Ok(logits)
}

/// Decode attention over the written slots of a static KV cache: `q` [B, heads, 1, hd] (hd 64 or
/// 128), `k_cache`/`v_cache` [B, kv_heads, slots, hd]; row b attends to slots `pad`[b] ..= `len`
/// (device int64 [B] and [1]), never beyond the first `window` slots. → [B, heads, 1, hd].
pub fn decode_attention(
    q: &Tensor,
    (k_cache, v_cache): (&Tensor, &Tensor),
    (pad, len): (&Tensor, &Tensor),
    window: i64,
) -> Result<Tensor, ShimError> {
    let out = empty(&q.size(), (q.kind(), q.device()))?;
    // SAFETY: live tensors for the duration of the call; the shim checks shapes and devices.
    check(unsafe {
        llmprof_decode_attention(
            ptr(q),
            ptr(k_cache),
            ptr(v_cache),
            ptr(pad),
            ptr(len),
            window,
            ptr(&out),
        )
    })?;
    Ok(out)
}

/// Whether this build carries the kernels.
pub fn available() -> bool {
    // SAFETY: no arguments, no state.
    unsafe { llmprof_kernels_available() == 1 }
}

/// Fails when `switch` (a `runtime.optim` key) is `used` but this build has no kernels.
pub fn require(switch: &str, used: bool) -> Result<(), ShimError> {
    if used && !available() {
        return Err(ShimError::new(format!(
            "runtime.optim.{switch}=true, but this llmprof-worker was built without llmprof's CUDA kernels (no nvcc at build time)\n  fix: run ./bootstrap.sh --yes (it installs nvidia-cuda-nvcc) and rebuild, or set runtime.optim.{switch}=false"
        )));
    }
    Ok(())
}

/// ⌈a / b⌉ for positive sizes (`i64::div_ceil` is not stable).
fn ceil_div(a: i64, b: i64) -> i64 {
    (a + b - 1) / b.max(1)
}

fn empty(size: &[i64], opts: (tch::Kind, tch::Device)) -> Result<Tensor, ShimError> {
    Tensor::f_empty(size, opts).map_err(|e| ShimError::new(format!("allocating {size:?}: {e}")))
}

fn ptr(t: &Tensor) -> *const c_void {
    t.as_ptr().cast()
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
/// per-window-row and per-column relative-position GEMMs.
pub fn sam_pack_qkv(
    qkv: &Tensor,
    bias: &Tensor,
    heads: i64,
    (win_h, win_w): (i64, i64),
    q_copies: bool,
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
        k_aug: empty(&[windows, n, heads, aug], opts)?,
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
