//! llmprof's own CUDA kernels (`csrc/kernels/*.cu` behind `csrc/kernels.cpp`; the vision
//! encoders' in [`super::kernels_vision`] behind `csrc/kernels_vision.cpp`): safe wrappers that
//! allocate the outputs, pass libtorch tensors to the shim and turn its status into errors.
//! [`available`] says whether this build has them (nvcc was found when it was built).
use super::kernel_archs::{self, Coverage};
use super::{check, ShimError};
use std::ffi::{c_int, c_void};
use tch::Tensor;

extern "C" {
    fn llmprof_kernels_available() -> c_int;
    fn llmprof_set_programmatic_launch(on: c_int);
    fn llmprof_moe_route(
        logits: *const c_void,
        x: *const c_void,
        k: i64,
        shared: i64,
        scaling: f64,
        weights: *const c_void,
        ids: *const c_void,
        order: *const c_void,
        slot_token: *const c_void,
        slot_pos: *const c_void,
        group_ends: *const c_void,
        sorted_x: *const c_void,
    ) -> c_int;
    fn llmprof_moe_combine(
        sorted: *const c_void,
        slot_pos: *const c_void,
        weights: *const c_void,
        shared: *const c_void,
        y: *const c_void,
    ) -> c_int;
    fn llmprof_silu_mul(gate_up: *const c_void, out: *const c_void) -> c_int;
    fn llmprof_silu_mul_uses_vectors(
        gate_up: *const c_void,
        out: *const c_void,
        vectors: *mut c_int,
    ) -> c_int;
    fn llmprof_decode_attention(
        q: *const c_void,
        k_cache: *const c_void,
        v_cache: *const c_void,
        pad: *const c_void,
        len: *const c_void,
        window: i64,
        tensor_cores: c_int,
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

/// Experts per layer the MoE routers take (csrc/kernels/launch.h).
pub const MOE_ROUTE_MAX_EXPERTS: i64 = 256;
/// CUDA's largest grid y dimension (csrc/kernels/launch.h `LLMPROF_K_MAX_GRID_Y`): kernels that
/// put tokens or rows on y take at most this many.
pub const MAX_GRID_Y: i64 = 65535;
/// Tokens per [`moe_combine`] call (on grid y).
pub const MOE_COMBINE_MAX_TOKENS: i64 = MAX_GRID_Y;
/// Tokens (batch × tokens per row) per [`rope_kv`] call (on grid y).
pub const ROPE_KV_MAX_TOKENS: i64 = MAX_GRID_Y;

/// What [`moe_route`] returns; k below is the slots per token: top-k + the shared experts routed
/// as slots.
pub struct MoeRouting {
    /// [tokens, k] fp32: softmax probabilities of the chosen experts × scaling (1 for a shared
    /// expert's slot).
    pub weights: Tensor,
    /// [tokens, k] int64: the chosen experts, highest weight first, then the shared experts
    /// (ids experts ..).
    pub ids: Tensor,
    /// [tokens·k] int64: slot indices (token·k + j) sorted stably by expert.
    pub order: Tensor,
    /// [tokens·k] int64: the token of each sorted slot (order / k).
    pub slot_token: Tensor,
    /// [tokens·k] int64: the sorted row of each slot (the inverse of `order`).
    pub slot_pos: Tensor,
    /// [experts + shared] int32: cumulative slot counts per expert (grouped GEMM group ends).
    pub group_ends: Tensor,
    /// [tokens·k, hidden]: the token rows of `x` in sorted slot order (the expert GEMMs' input).
    pub sorted_x: Tensor,
}

/// DeepSeek MoE routing of fp32 router logits [tokens, experts] of the token rows `x` [tokens,
/// hidden] (contiguous) on a CUDA device in llmprof's kernels; experts ≤
/// [`MOE_ROUTE_MAX_EXPERTS`]. Up to 1,024 slots (tokens·k: decode steps) one block does it all,
/// for up to 4 tokens the gather of `x`'s rows included (else an index_select); above (a
/// prefill), three launches over many blocks and an index_select. `shared` > 0 (one block only:
/// tokens · (k + shared) ≤ 1,024, csrc/kernels/launch.h `LLMPROF_K_MOE_ONE_BLOCK_MAX_SLOTS`;
/// the shim refuses more) appends that many shared experts
/// to each token's slots, as experts `experts`.. with weight 1, for grouped GEMMs over weights
/// stacked with them.
pub fn moe_route(
    logits: &Tensor,
    x: &Tensor,
    k: i64,
    shared: i64,
    scaling: f64,
) -> Result<MoeRouting, ShimError> {
    let (n, e) = logits
        .size2()
        .map_err(|err| ShimError::new(format!("moe_route: logits: {err}")))?;
    let hidden = x.size().last().copied().unwrap_or(0);
    let dev = logits.device();
    let per_token = k + shared;
    let r = MoeRouting {
        weights: empty(&[n, per_token], (tch::Kind::Float, dev))?,
        ids: empty(&[n, per_token], (tch::Kind::Int64, dev))?,
        order: empty(&[n * per_token], (tch::Kind::Int64, dev))?,
        slot_token: empty(&[n * per_token], (tch::Kind::Int64, dev))?,
        slot_pos: empty(&[n * per_token], (tch::Kind::Int64, dev))?,
        group_ends: empty(&[e + shared], (tch::Kind::Int, dev))?,
        sorted_x: empty(&[n * per_token, hidden], (x.kind(), x.device()))?,
    };
    // SAFETY: live tensors for the duration of the call; the shim checks shapes and devices.
    check(unsafe {
        llmprof_moe_route(
            ptr(logits),
            ptr(x),
            k,
            shared,
            scaling,
            ptr(&r.weights),
            ptr(&r.ids),
            ptr(&r.order),
            ptr(&r.slot_token),
            ptr(&r.slot_pos),
            ptr(&r.group_ends),
            ptr(&r.sorted_x),
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

/// RoPE and the KV-cache write in one kernel, for a decode step (T = 1) or a prefill. `qkv`
/// [B, T, (heads + 2·kv_heads)·hd] is the fused projection's output, `cos`/`sin` [B, 1, T, hd]
/// the rotate-half tables; q and k are rotated, k and v written into `k_cache`/`v_cache` [B,
/// kv_heads, slots, hd] at slots s … s + T − 1, s held by `slot` ([1] int64 on the device).
/// `fused_add`: the second term added as one FMA (as `addcmul` does), else as a rounded product
/// and an add. B·T ≤ [`ROPE_KV_MAX_TOKENS`]. Returns q [B, heads, T, hd] as a view of [B, T,
/// heads, hd] memory: attention's output then keeps that token-major layout, and its [B, T,
/// heads·hd] reshape for o_proj needs no copy (one per layer before, 1.35 ms per batch-32 prefill
/// in run HE's table).
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
            "rope_kv: qkv {size:?} is not [B, T, ({heads} + 2 x {kv_heads}) heads x head_dim]"
        )));
    }
    let hd = size[2] / (heads + 2 * kv_heads);
    let q = empty(&[size[0], size[1], heads, hd], (qkv.kind(), qkv.device()))?;
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
    q.f_transpose(1, 2)
        .map_err(|err| ShimError::new(format!("rope_kv: q: {err}")))
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

/// Whether [`silu_mul`] of `gate_up` into `out` takes the 16-byte-vector kernel (prefill-sized
/// calls whose halves are whole vectors) rather than the element kernel.
pub fn silu_mul_uses_vectors(gate_up: &Tensor, out: &Tensor) -> Result<bool, ShimError> {
    let mut vectors: c_int = 0;
    // SAFETY: live tensors for the duration of the call; `vectors` outlives it.
    check(unsafe { llmprof_silu_mul_uses_vectors(ptr(gate_up), ptr(out), &mut vectors) })?;
    Ok(vectors == 1)
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

/// The longest KV window [`decode_attention`] takes (12,280 splits of 64 slots: the combine
/// keeps a weight per split in shared memory; csrc/kernels/launch.h).
pub const DECODE_ATTENTION_MAX_WINDOW: i64 = 12_280 * 64;

/// Decode attention over the written slots of a static KV cache: `q` [B, heads, 1, hd] (hd 64 or
/// 128), `k_cache`/`v_cache` [B, kv_heads, slots, hd]; row b attends to slots `pad`[b] ..= `len`
/// (device int64 [B] and [1]), never beyond the first `window` slots. → [B, heads, 1, hd].
/// `tensor_cores`: in bf16/fp16 with at most 16 query heads per kv head, the split pass on tensor
/// cores (each kv head's rows read once for its group; csrc/kernels/decode_attention_mma.cu).
pub fn decode_attention(
    q: &Tensor,
    (k_cache, v_cache): (&Tensor, &Tensor),
    (pad, len): (&Tensor, &Tensor),
    window: i64,
    tensor_cores: bool,
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
            c_int::from(tensor_cores),
            ptr(&out),
        )
    })?;
    Ok(out)
}

/// Whether this build carries the kernels and they can launch on the current CUDA device
/// (natively or from their PTX; always true without a device: CPU runs never launch them).
pub fn available() -> bool {
    built_in() && !matches!(current_device(), Some(d) if d.coverage == Coverage::None)
}

/// Whether llmprof's decode-step kernels (norms, RoPE + cache write, decode attention, GEMV,
/// SwiGLU, MoE routing and combine) launch with programmatic dependent launch from now on in
/// this process (`runtime.optim.programmatic_launch`; `csrc/kernels/pdl.cuh`): each may start
/// while the kernel before it finishes and waits for that kernel's results on the GPU. Applies on
/// compute capability 9.0 and newer only; no effect in a build without the kernels.
pub fn set_programmatic_launch(on: bool) {
    // SAFETY: stores a flag; no pointers.
    unsafe { llmprof_set_programmatic_launch(c_int::from(on)) }
}

/// Runs `f` with llmprof's kernels launched the ordinary way, then with programmatic dependent
/// launch (`runtime.optim.programmatic_launch`; the same as the first on GPUs before Hopper),
/// and leaves the process's launch policy off, also when `f` panics.
#[cfg(test)]
pub(crate) fn with_each_launch_policy(f: impl Fn()) {
    struct Off;
    impl Drop for Off {
        fn drop(&mut self) {
            set_programmatic_launch(false);
        }
    }
    let _off = Off;
    for on in [false, true] {
        set_programmatic_launch(on);
        f();
    }
}

/// Whether this build carries the kernels at all (nvcc was found when it was built).
fn built_in() -> bool {
    // SAFETY: no arguments, no state.
    unsafe { llmprof_kernels_available() == 1 }
}

/// The current CUDA device: its index, compute capability and coverage by this build's
/// kernels.
#[derive(Clone, Copy)]
struct CurrentDevice {
    index: i32,
    capability: u32,
    coverage: Coverage,
}

/// The current CUDA device, read once; `None` without one.
fn current_device() -> Option<CurrentDevice> {
    static DEVICE: std::sync::OnceLock<Option<CurrentDevice>> = std::sync::OnceLock::new();
    *DEVICE.get_or_init(|| {
        if super::cuda_device_count() == 0 {
            return None;
        }
        let index = super::cuda_current_device().ok()?;
        let capability = super::cuda_compute_capability(index).ok()?;
        Some(CurrentDevice {
            index,
            capability,
            coverage: kernel_archs::coverage(&kernel_archs::built(), capability),
        })
    })
}

/// Why this build's kernels do not run natively on the current device, with the rebuild
/// command; `None` when they do, or without a device.
pub fn device_mismatch() -> Option<String> {
    let d = current_device()?;
    if !built_in() {
        return Some(absent(Some(d.capability)));
    }
    kernel_archs::mismatch(
        &kernel_archs::built(),
        d.capability,
        &format!("CUDA device {}", d.index),
    )
}

/// Why this build has no kernels and how to build them: for the GPU of compute capability
/// `capability`, or for an H100/H200 (90) where there is none.
fn absent(capability: Option<u32>) -> String {
    let archs = capability.unwrap_or(90);
    match option_env!("LLMPROF_KERNELS_ABSENT").filter(|why| !why.is_empty()) {
        Some(why) => format!(
            "this llmprof-worker has no llmprof CUDA kernels: it was {why}.\n  fix: rebuild on \
             this machine with ./bootstrap.sh --yes, or `LLMPROF_CUDA_ARCHS={archs} cargo build \
             --release` where it was built"
        ),
        None => "this llmprof-worker was built without llmprof's CUDA kernels (no nvcc at build \
                 time)\n  fix: run ./bootstrap.sh --yes (it installs nvidia-cuda-nvcc) and rebuild"
            .to_string(),
    }
}

/// Fails when `switch` (a full key: `runtime.optim.rope_kv_kernel`, `model.optim.sam_cuda_kernels`)
/// is `used` but this build has no kernels, or has kernels that cannot launch on the current
/// device.
pub fn require(switch: &str, used: bool) -> Result<(), ShimError> {
    if used && !built_in() {
        return Err(ShimError::new(format!(
            "{switch}=true, but {}, or set {switch}=false",
            absent(current_device().map(|d| d.capability))
        )));
    }
    if used && !available() {
        let why = device_mismatch().unwrap_or_default();
        return Err(ShimError::new(format!(
            "{switch}=true, but {why}\n  or set {switch}=false"
        )));
    }
    Ok(())
}

/// ⌈a / b⌉ for positive sizes (`i64::div_ceil` is not stable).
pub(super) fn ceil_div(a: i64, b: i64) -> i64 {
    (a + b - 1) / b.max(1)
}

pub(super) fn empty(size: &[i64], opts: (tch::Kind, tch::Device)) -> Result<Tensor, ShimError> {
    Tensor::f_empty(size, opts).map_err(|e| ShimError::new(format!("allocating {size:?}: {e}")))
}

/// Whether `t`'s data starts on a 16-byte boundary (the kernels' vector loads, TMA).
pub(super) fn aligned16(t: &Tensor) -> bool {
    t.data_ptr() as usize % 16 == 0
}

pub(super) fn ptr(t: &Tensor) -> *const c_void {
    t.as_ptr().cast()
}
