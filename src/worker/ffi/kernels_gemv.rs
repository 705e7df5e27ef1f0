//! A Linear over a decode step's few rows in llmprof's kernel (`csrc/kernels/gemv.cu`,
//! `runtime.optim.gemv_kernel`): the weight read once in 16-byte loads, fp32 sums, one rounding.
//! [`fits`] says which calls it takes; every other call stays with libtorch.
use super::kernels::{self, aligned16, empty, ptr};
use super::{check, ShimError};
use std::ffi::{c_int, c_void};
use tch::{Kind, Tensor};

extern "C" {
    fn llmprof_gemv(
        x: *const c_void,
        weight: *const c_void,
        bias: *const c_void,
        y: *const c_void,
        swiglu: c_int,
    ) -> c_int;
    fn llmprof_gemv_add_rms_norm(
        x: *const c_void,
        delta: *const c_void,
        norm_weight: *const c_void,
        eps: f64,
        weight: *const c_void,
        bias: *const c_void,
        sum: *const c_void,
        y: *const c_void,
        swiglu: c_int,
    ) -> c_int;
    fn llmprof_gemv_grouped(
        x: *const c_void,
        weight: *const c_void,
        group_ends: *const c_void,
        y: *const c_void,
        swiglu: c_int,
    ) -> c_int;
}

/// The most token slots (tokens × experts per token) [`grouped_fits`] gives the kernel: a
/// decode step's at batch 1 to 2 for DeepSeek's six experts a token; above, libtorch's grouped
/// GEMM reads each expert's weight once for all of its slots.
pub const MAX_GROUPED_ROWS: i64 = 16;

/// The most rows (the product of `x`'s leading dims) the kernel computes.
pub const MAX_ROWS: i64 = 8;

/// The rows at which [`fits`] gives a call to the kernel: one (a decode step at batch 1). At
/// batch 8, Llama-3.1-8B's decode step took 9.40 ms with the kernel against 5.41 with cuBLAS
/// (H200, round 3 session 29): eight rows of fp32 sums per weight row make it compute-bound.
pub const TAKEN_ROWS: i64 = 1;

/// The widest input the kernel takes by default. At Llama-3.1-8B's down projection (k 14,336)
/// it lost 11 % to cuBLAS's split-K GEMM in session 29; since its first weight loads go out
/// before the programmatic-launch wait (session 31) it is faster at every down projection
/// measured: k 12,288 25.8 µs against cuBLAS's 31.0 (kernel and reduce), 14,336 29.4 against
/// 32.1, 18,944 34.1 against 38.4, Llama-3.1-70B's 28,672 106.1 against 111.4 (H200, weights
/// from DRAM; reports/performance-history.md, round 3 session 32).
pub const MAX_K: i64 = 32768;

/// Whether `x·weightᵀ (+ bias)` runs in the kernel: `x` a contiguous CUDA bf16 or fp16 tensor
/// [.., k] of 1 ..= [`TAKEN_ROWS`] rows, `k` a multiple of 8 and at most [`MAX_K`], `weight` [n, k] and `bias` [n] of the
/// same dtype and device, contiguous, 16-byte aligned. Checks shapes only (no device call).
pub fn fits(x: &Tensor, weight: &Tensor, bias: Option<&Tensor>) -> bool {
    let k = x.size().last().copied().unwrap_or(0);
    let rows = if k > 0 { x.numel() as i64 / k } else { 0 };
    let ws = weight.size();
    operands_fit(x, weight)
        && (1..=TAKEN_ROWS).contains(&rows)
        && k <= MAX_K
        && ws.len() == 2
        && ws[0] >= 1
        && ws[1] == k
        && bias.is_none_or(|b| {
            b.size() == [ws[0]]
                && b.kind() == x.kind()
                && b.device() == x.device()
                && b.is_contiguous()
        })
}

/// What both forms ask of their operands: `x` a contiguous CUDA bf16 or fp16 tensor whose last
/// dim is a multiple of 8, `weight` of its dtype and device, contiguous, both 16-byte aligned.
fn operands_fit(x: &Tensor, weight: &Tensor) -> bool {
    x.device().is_cuda()
        && matches!(x.kind(), Kind::BFloat16 | Kind::Half)
        && x.size().last().is_some_and(|k| k % 8 == 0)
        && x.is_contiguous()
        && weight.kind() == x.kind()
        && weight.device() == x.device()
        && weight.is_contiguous()
        && aligned16(x)
        && aligned16(weight)
}

/// `x·weightᵀ (+ bias)` [.., n] in the kernel, for 1 ..= [`MAX_ROWS`] rows and the operands
/// otherwise as [`fits`] says (the shim checks them again and names what is wrong).
pub fn linear(x: &Tensor, weight: &Tensor, bias: Option<&Tensor>) -> Result<Tensor, ShimError> {
    let y = output_of(x, weight, GemvAct::None)?;
    let b = bias.map_or(std::ptr::null(), ptr);
    // SAFETY: live tensors (or null for no bias) for the duration of the call; the shim checks
    // shapes, dtypes and devices.
    check(unsafe { llmprof_gemv(ptr(x), ptr(weight), b, ptr(&y), 0) })?;
    Ok(y)
}

/// What a GEMV writes: the projection, or with a fused [gate; up] weight [2f, k] the SwiGLU of
/// its halves, silu(x·gateᵀ) ⊙ x·upᵀ [.., f], the same bits as the projection and then
/// [`kernels::silu_mul`] (`runtime.optim.gemv_swiglu`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GemvAct {
    None,
    SwiGlu,
}

impl GemvAct {
    fn code(self) -> c_int {
        match self {
            GemvAct::None => 0,
            GemvAct::SwiGlu => 1,
        }
    }

    /// Whether a weight of `rows` rows can take it (SwiGLU: an even count, gate then up).
    fn fits_rows(self, rows: i64) -> bool {
        self == GemvAct::None || rows % 2 == 0
    }

    /// The outputs a row of y holds through a weight of `rows` rows.
    fn outputs(self, rows: i64) -> i64 {
        match self {
            GemvAct::None => rows,
            GemvAct::SwiGlu => rows / 2,
        }
    }
}

/// [`linear`] of one row with `weight` a fused [gate; up] projection [2f, k]: silu(gate)·up
/// [.., f]; where [`swiglu_fits`] says (the shim checks it again).
pub fn linear_swiglu(x: &Tensor, weight: &Tensor) -> Result<Tensor, ShimError> {
    let y = output_of(x, weight, GemvAct::SwiGlu)?;
    // SAFETY: live tensors for the duration of the call; the shim checks shapes, dtypes and
    // devices.
    check(unsafe { llmprof_gemv(ptr(x), ptr(weight), std::ptr::null(), ptr(&y), 1) })?;
    Ok(y)
}

/// Whether [`linear_swiglu`] takes `x` and the fused gate/up `weight`: what [`fits`] asks with no
/// bias, one row (whatever [`TAKEN_ROWS`] becomes), and an even number of weight rows. Checks
/// shapes only.
pub fn swiglu_fits(x: &Tensor, weight: &Tensor) -> bool {
    let k = x.size().last().copied().unwrap_or(0);
    fits(x, weight, None) && x.numel() as i64 == k && GemvAct::SwiGlu.fits_rows(weight.size()[0])
}

/// The uninitialised output [.., n] of `x` [.., k] through `weight` [n, k] ([.., n / 2] for
/// SwiGLU).
fn output_of(x: &Tensor, weight: &Tensor, act: GemvAct) -> Result<Tensor, ShimError> {
    let mut size = x.size();
    if let Some(last) = size.last_mut() {
        *last = act.outputs(weight.size().first().copied().unwrap_or(0));
    }
    empty(&size, (x.kind(), x.device()))
}

/// Whether [`add_rms_norm_linear`] takes `x` and `delta` (one row [.., k] each), the norm's
/// `norm_weight` [k], `weight` [n, k] and `bias`: what [`fits`] asks of `x`, `weight` and `bias`,
/// `k` at most [`kernels::ADD_RMS_NORM_MAX_HIDDEN`], `delta` and `norm_weight` of `x`'s dtype and
/// device, contiguous and 16-byte aligned. Checks shapes only (no device call).
pub fn add_rms_norm_fits(
    x: &Tensor,
    delta: &Tensor,
    norm_weight: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
) -> bool {
    let k = x.size().last().copied().unwrap_or(0);
    let like_x = |t: &Tensor| {
        t.kind() == x.kind() && t.device() == x.device() && t.is_contiguous() && aligned16(t)
    };
    fits(x, weight, bias)
        && x.numel() as i64 == k
        && k <= kernels::ADD_RMS_NORM_MAX_HIDDEN
        && delta.size() == x.size()
        && like_x(delta)
        && norm_weight.size() == [k]
        && like_x(norm_weight)
}

/// The residual add and RMSNorm before a one-row projection folded into its GEMV: (sum, y) with
/// sum = `x` + `delta` and y = rmsnorm(sum; `norm_weight`, `eps`)·`weight`ᵀ (+ `bias`), the
/// same bits as [`kernels::add_rms_norm`] then [`linear`] (then [`kernels::silu_mul`] with
/// `act` SwiGLU: `weight` a fused gate/up projection, no bias); operands as
/// [`add_rms_norm_fits`] says (the shim checks them again).
pub fn add_rms_norm_linear(
    (x, delta): (&Tensor, &Tensor),
    (norm_weight, eps): (&Tensor, f64),
    (weight, bias): (&Tensor, Option<&Tensor>),
    act: GemvAct,
) -> Result<(Tensor, Tensor), ShimError> {
    let sum = empty(&x.size(), (x.kind(), x.device()))?;
    let y = output_of(x, weight, act)?;
    let b = bias.map_or(std::ptr::null(), ptr);
    // SAFETY: live tensors (or null for no bias) for the duration of the call; the shim checks
    // shapes, dtypes, devices and alignment.
    check(unsafe {
        llmprof_gemv_add_rms_norm(
            ptr(x),
            ptr(delta),
            ptr(norm_weight),
            eps,
            ptr(weight),
            b,
            ptr(&sum),
            ptr(&y),
            act.code(),
        )
    })?;
    Ok((sum, y))
}

/// Whether [`linear_grouped`] takes `x` [slots, k] with `weight` [experts, n, k] and
/// `group_ends` [experts]: a contiguous CUDA bf16 or fp16 `x` of 1 ..= [`MAX_GROUPED_ROWS`]
/// rows, k a multiple of 8, `weight` of its dtype and device, contiguous, both 16-byte aligned,
/// `group_ends` int32 on that device. Checks shapes only (no device call).
pub fn grouped_fits(x: &Tensor, weight: &Tensor, group_ends: &Tensor) -> bool {
    let (xs, ws) = (x.size(), weight.size());
    operands_fit(x, weight)
        && xs.len() == 2
        && (1..=MAX_GROUPED_ROWS).contains(&xs[0])
        && ws.len() == 3
        && ws[0] >= 1
        && ws[1] >= 1
        && ws[2] == xs[1]
        && group_ends.size() == [ws[0]]
        && group_ends.kind() == Kind::Int
        && group_ends.device() == x.device()
        && group_ends.is_contiguous()
}

/// Each slot's row of `x` [slots, k] times its expert's `weight[e]`ᵀ → [slots, n] (with `act`
/// SwiGLU, `weight` the experts' fused gate/up projections [experts, 2f, k]: silu(gate)·up
/// [slots, f]), e the expert whose group of `group_ends` (inclusive cumulative slot counts: the
/// routing's, whose last equals `slots`; the kernel cannot check that without a sync, and a slot
/// past it takes the last expert) holds the slot; operands as [`grouped_fits`] says (the shim
/// checks them again).
pub fn linear_grouped(
    x: &Tensor,
    weight: &Tensor,
    group_ends: &Tensor,
    act: GemvAct,
) -> Result<Tensor, ShimError> {
    let slots = x.size().first().copied().unwrap_or(0);
    let n = weight.size().get(1).copied().unwrap_or(0);
    let y = empty(&[slots, act.outputs(n)], (x.kind(), x.device()))?;
    // SAFETY: live tensors for the duration of the call; the shim checks shapes, dtypes and
    // devices.
    check(unsafe {
        llmprof_gemv_grouped(ptr(x), ptr(weight), ptr(group_ends), ptr(&y), act.code())
    })?;
    Ok(y)
}

/// `x·weightᵀ (+ bias)`: in the kernel where `on` and the call [`fits`], else libtorch's Linear.
pub fn linear_or_torch(
    x: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    on: bool,
) -> Result<Tensor, ShimError> {
    if on && fits(x, weight, bias) {
        return linear(x, weight, bias);
    }
    x.f_linear(weight, bias)
        .map_err(|e| ShimError::new(format!("linear: {e}")))
}
