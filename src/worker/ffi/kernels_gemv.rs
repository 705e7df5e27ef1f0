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
    let y = output_of(x, weight, Act::None)?;
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
pub enum Act {
    None,
    SwiGlu,
}

impl Act {
    fn code(self) -> c_int {
        match self {
            Act::None => 0,
            Act::SwiGlu => 1,
        }
    }

    /// Whether a weight of `rows` rows can take it (SwiGLU: an even count, gate then up).
    fn takes(self, rows: i64) -> bool {
        self == Act::None || rows % 2 == 0
    }
}

/// [`linear`] of one row with `weight` a fused [gate; up] projection [2f, k]: silu(gate)·up
/// [.., f]; where [`swiglu_fits`] says (the shim checks it again).
pub fn linear_swiglu(x: &Tensor, weight: &Tensor) -> Result<Tensor, ShimError> {
    let y = output_of(x, weight, Act::SwiGlu)?;
    // SAFETY: live tensors for the duration of the call; the shim checks shapes, dtypes and
    // devices.
    check(unsafe { llmprof_gemv(ptr(x), ptr(weight), std::ptr::null(), ptr(&y), 1) })?;
    Ok(y)
}

/// Whether [`linear_swiglu`] takes `x` and the fused gate/up `weight`: what [`fits`] asks with no
/// bias, and an even number of weight rows. Checks shapes only.
pub fn swiglu_fits(x: &Tensor, weight: &Tensor) -> bool {
    fits(x, weight, None) && Act::SwiGlu.takes(weight.size()[0])
}

/// The uninitialised output [.., n] of `x` [.., k] through `weight` [n, k] ([.., n / 2] for
/// SwiGLU).
fn output_of(x: &Tensor, weight: &Tensor, act: Act) -> Result<Tensor, ShimError> {
    let mut size = x.size();
    if let Some(last) = size.last_mut() {
        let n = weight.size().first().copied().unwrap_or(0);
        *last = if act == Act::SwiGlu { n / 2 } else { n };
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
    act: Act,
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

/// Each slot's row of `x` [slots, k] times its expert's `weight[e]`ᵀ → [slots, n], e the
/// expert whose group of `group_ends` (inclusive cumulative slot counts: the routing's, whose
/// last equals `slots`; the kernel cannot check that without a sync, and a slot past it takes the
/// last expert) holds the slot; operands as [`grouped_fits`] says (the shim checks them again).
pub fn linear_grouped(
    x: &Tensor,
    weight: &Tensor,
    group_ends: &Tensor,
    act: Act,
) -> Result<Tensor, ShimError> {
    let slots = x.size().first().copied().unwrap_or(0);
    let n = weight.size().get(1).copied().unwrap_or(0);
    if !act.takes(n) {
        return Err(ShimError::new(format!(
            "gemv_grouped with SwiGLU: a fused gate/up weight has an even number of rows, got {n}"
        )));
    }
    let outs = if act == Act::SwiGlu { n / 2 } else { n };
    let y = empty(&[slots, outs], (x.kind(), x.device()))?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use tch::Device;

    #[test]
    fn only_small_bf16_or_fp16_calls_on_a_gpu_fit() {
        // On the CPU nothing fits, whatever the shapes.
        let x = Tensor::zeros([1, 1, 64], (Kind::BFloat16, Device::Cpu));
        let w = Tensor::zeros([32, 64], (Kind::BFloat16, Device::Cpu));
        assert!(!fits(&x, &w, None));
    }

    /// The folded add + RMSNorm against the add + RMSNorm kernel and then the GEMV: the sum and
    /// the output bit for bit, in bf16 and fp16, with and without bias, at widths whose norm takes
    /// one, two and four 16-byte vectors a thread (896, 1,280, 4,096, 8,192) and output counts
    /// that are and are not multiples of a block's 16, in each load plan (a whole row at once,
    /// whole groups with and without a serial tail, partial groups over 12,000 outputs: ≥ 4
    /// blocks an SM up to 187 SMs), under both launch policies; a call of two
    /// rows or a width over the norm's limit does not fit.
    #[test]
    #[ignore = "needs a CUDA GPU and a build with llmprof's kernels: cargo test -- --ignored on the GPU machine"]
    fn gemv_with_the_add_rms_norm_folded_in_equals_the_two_kernels_on_a_gpu() {
        crate::ffi::kernels::with_each_launch_policy(|| {
            assert!(tch::Cuda::is_available(), "no CUDA device");
            let dev = Device::Cuda(0);
            for kind in [Kind::BFloat16, Kind::Half] {
                let shapes = [
                    (1152i64, 896i64),
                    (1000, 896),
                    (3840, 1280),
                    (6144, 4096),
                    (1000, 3584),
                    (12000, 4096),
                    (37, 8192),
                ];
                for (n, k) in shapes {
                    for with_bias in [false, true] {
                        let x = Tensor::randn([1, 1, k], (kind, dev));
                        let delta = Tensor::randn([1, 1, k], (kind, dev)) * 0.5;
                        let nw = Tensor::rand([k], (kind, dev)) + 0.5;
                        let w = Tensor::randn([n, k], (kind, dev)) / (k as f64).sqrt();
                        let b = with_bias.then(|| Tensor::randn([n], (kind, dev)));
                        assert!(add_rms_norm_fits(&x, &delta, &nw, &w, b.as_ref()));
                        let (sum, y) =
                            add_rms_norm_linear((&x, &delta), (&nw, 1e-6), (&w, b.as_ref()), Act::None)
                                .unwrap();
                        let (want_sum, normed) =
                            kernels::add_rms_norm(&x, &delta, &nw, 1e-6).unwrap();
                        let want = linear(&normed, &w, b.as_ref()).unwrap();
                        let what = format!("{kind:?} n {n} k {k} bias {with_bias}");
                        assert!(sum.equal(&want_sum), "{what}: sums differ");
                        assert!(y.equal(&want), "{what}: outputs differ");
                    }
                }
                let (x2, nw) = (
                    Tensor::zeros([2, 1, 4096], (kind, dev)),
                    Tensor::ones([4096], (kind, dev)),
                );
                let w = Tensor::zeros([64, 4096], (kind, dev));
                assert!(!add_rms_norm_fits(&x2, &x2, &nw, &w, None));
                let (x, w) = (
                    Tensor::zeros([1, 16384], (kind, dev)),
                    Tensor::zeros([64, 16384], (kind, dev)),
                );
                let nw = Tensor::ones([16384], (kind, dev));
                assert!(!add_rms_norm_fits(&x, &x, &nw, &w, None));
            }
        });
    }

    /// The grouped form against each slot's expert in fp32, slots sorted by expert as the
    /// routing leaves them (experts without slots between, the last expert's group used, an
    /// expert with two slots), at every slot count 1 ..= [`MAX_GROUPED_ROWS`]: within one
    /// rounding of the output of the largest value; [`grouped_fits`] refuses 17 slots and int64
    /// group ends.
    #[test]
    #[ignore = "needs a CUDA GPU and a build with llmprof's kernels: cargo test -- --ignored on the GPU machine"]
    fn grouped_gemv_matches_each_slots_expert_on_a_gpu() {
        crate::ffi::kernels::with_each_launch_policy(|| {
            assert!(tch::Cuda::is_available(), "no CUDA device");
            let dev = Device::Cuda(0);
            let experts = 8i64;
            for (kind, tol) in [(Kind::BFloat16, 1.0 / 128.0), (Kind::Half, 1.0 / 1024.0)] {
                for (n, k) in [(1792i64, 1280i64), (1280, 896), (40, 264)] {
                    let w = Tensor::randn([experts, n, k], (kind, dev)) / (k as f64).sqrt();
                    for slots in 1..=MAX_GROUPED_ROWS {
                        // Slot s goes to expert (s · 5 / 2) mod 8, sorted: gaps and repeats.
                        let mut of_slot: Vec<i64> =
                            (0..slots).map(|s| (s * 5 / 2) % experts).collect();
                        of_slot.sort_unstable();
                        let ends: Vec<i32> = (0..experts)
                            .map(|e| of_slot.iter().filter(|&&x| x <= e).count() as i32)
                            .collect();
                        let ends = Tensor::from_slice(&ends).to_device(dev);
                        let x = Tensor::randn([slots, k], (kind, dev));
                        assert!(grouped_fits(&x, &w, &ends), "{kind:?} {slots} slots");
                        let got = linear_grouped(&x, &w, &ends, Act::None)
                            .unwrap()
                            .to_kind(Kind::Float);
                        let want = Tensor::stack(
                            &of_slot
                                .iter()
                                .enumerate()
                                .map(|(s, &e)| {
                                    x.get(s as i64)
                                        .to_kind(Kind::Float)
                                        .matmul(&w.get(e).to_kind(Kind::Float).tr())
                                })
                                .collect::<Vec<_>>(),
                            0,
                        );
                        let err = (&got - &want).abs().max().double_value(&[]);
                        let scale = want.abs().max().double_value(&[]);
                        assert!(
                            err <= tol * scale,
                            "{kind:?} {slots} slots, n {n}, k {k}: error {err} (scale {scale})"
                        );
                    }
                    let x17 = Tensor::zeros([MAX_GROUPED_ROWS + 1, k], (kind, dev));
                    let ends = Tensor::zeros([experts], (Kind::Int, dev));
                    assert!(!grouped_fits(&x17, &w, &ends));
                    let x1 = Tensor::zeros([1, k], (kind, dev));
                    assert!(!grouped_fits(&x1, &w, &ends.to_kind(Kind::Int64)));
                }
            }
        });
    }

    /// The kernel against libtorch's Linear in fp32 on the same bf16/fp16 operands, at every
    /// row count 1 ..= 8 it computes and widths that are not multiples of the kernel's
    /// 256-element step, with and without bias and with an output count that is not a multiple
    /// of its 16 per block, in both block shapes (one row of 1,280 over 9,000 outputs takes the
    /// short-row shape) and each load plan (rows of at most 2,048 at once; 3,080 over 12,000
    /// outputs in partial groups, a partial last one; longer rows or fewer outputs in whole
    /// groups, 3,080 over 1,000 with a serial tail): within one rounding of the output (2⁻⁷
    /// relative for bf16, 2⁻¹⁰ fp16) of the largest value. [`fits`] gives it one row of at most
    /// [`MAX_K`] only.
    #[test]
    #[ignore = "needs a CUDA GPU and a build with llmprof's kernels: cargo test -- --ignored on the GPU machine"]
    fn gemv_matches_an_fp32_linear_on_a_gpu() {
        crate::ffi::kernels::with_each_launch_policy(|| {
            assert!(tch::Cuda::is_available(), "no CUDA device");
            let dev = Device::Cuda(0);
            for (kind, tol) in [(Kind::BFloat16, 1.0 / 128.0), (Kind::Half, 1.0 / 1024.0)] {
                for (n, k) in [
                    (4096i64, 4096i64),
                    (1000, 14336),
                    (300, 28672),
                    (9000, 1280),
                    (12000, 3080),
                    (1000, 3080),
                    (37, 264),
                    (6144, 8),
                ] {
                    for rows in 1..=MAX_ROWS {
                        for with_bias in [false, true] {
                            let x = Tensor::randn([rows, 1, k], (kind, dev));
                            let w = Tensor::randn([n, k], (kind, dev)) / (k as f64).sqrt();
                            let b = with_bias.then(|| Tensor::randn([n], (kind, dev)));
                            assert_eq!(
                                fits(&x, &w, b.as_ref()),
                                rows <= TAKEN_ROWS && k <= MAX_K,
                                "{kind:?} {rows}x{k} by {n}"
                            );
                            let got = linear(&x, &w, b.as_ref()).unwrap().to_kind(Kind::Float);
                            let f = |t: &Tensor| t.to_kind(Kind::Float);
                            let want = f(&x).linear(&f(&w), b.as_ref().map(f).as_ref());
                            let err = (&got - &want).abs().max().double_value(&[]);
                            let scale = want.abs().max().double_value(&[]);
                            assert!(
                                err <= tol * scale,
                                "{kind:?} rows {rows}, n {n}, k {k}, bias {with_bias}: error {err} (scale {scale})"
                            );
                        }
                    }
                }
            }
        });
    }
}
