//! A Linear over a decode step's few rows in llmprof's kernel (`csrc/kernels/gemv.cu`,
//! `runtime.optim.gemv_kernel`): the weight read once in 16-byte loads, fp32 sums, one rounding.
//! [`fits`] says which calls it takes; every other call stays with libtorch.
use super::kernels::{empty, ptr};
use super::{check, ShimError};
use std::ffi::{c_int, c_void};
use tch::{Kind, Tensor};

extern "C" {
    fn llmprof_gemv(
        x: *const c_void,
        weight: *const c_void,
        bias: *const c_void,
        y: *const c_void,
    ) -> c_int;
}

/// The most rows (the product of `x`'s leading dims) the kernel computes.
pub const MAX_ROWS: i64 = 8;

/// The rows at which [`fits`] gives a call to the kernel: one (a decode step at batch 1). At
/// batch 8, Llama-3.1-8B's decode step took 9.40 ms with the kernel against 5.41 with cuBLAS
/// (H200, round 3 session 29): eight rows of fp32 sums per weight row make it compute-bound.
pub const TAKEN_ROWS: i64 = 1;

/// The widest input the kernel takes by default: at Llama-3.1-8B's down projection (k 14,336)
/// it was 11 % slower than cuBLAS's split-K GEMM, at k 4,096 (q/k/v, o_proj, gate/up) 3-7 %
/// faster (H200, reports/performance-history.md, round 3 session 29).
pub const MAX_K: i64 = 8192;

/// Whether `x·weightᵀ (+ bias)` runs in the kernel: `x` a contiguous CUDA bf16 or fp16 tensor
/// [.., k] of 1 ..= [`TAKEN_ROWS`] rows, `k` a multiple of 8 and at most [`MAX_K`], `weight` [n, k] and `bias` [n] of the
/// same dtype and device, contiguous, 16-byte aligned. Checks shapes only (no device call).
pub fn fits(x: &Tensor, weight: &Tensor, bias: Option<&Tensor>) -> bool {
    let kind = x.kind();
    let k = x.size().last().copied().unwrap_or(0);
    let rows = if k > 0 { x.numel() as i64 / k } else { 0 };
    let ws = weight.size();
    let aligned = |t: &Tensor| t.data_ptr() as usize % 16 == 0;
    x.device().is_cuda()
        && matches!(kind, Kind::BFloat16 | Kind::Half)
        && (1..=TAKEN_ROWS).contains(&rows)
        && k % 8 == 0
        && k <= MAX_K
        && x.is_contiguous()
        && ws.len() == 2
        && ws[0] >= 1
        && ws[1] == k
        && weight.kind() == kind
        && weight.device() == x.device()
        && weight.is_contiguous()
        && aligned(x)
        && aligned(weight)
        && bias.is_none_or(|b| {
            b.size() == [ws[0]] && b.kind() == kind && b.device() == x.device() && b.is_contiguous()
        })
}

/// `x·weightᵀ (+ bias)` [.., n] in the kernel, for 1 ..= [`MAX_ROWS`] rows and the operands
/// otherwise as [`fits`] says (the shim checks them again and names what is wrong).
pub fn linear(x: &Tensor, weight: &Tensor, bias: Option<&Tensor>) -> Result<Tensor, ShimError> {
    let mut size = x.size();
    let n = weight.size().first().copied().unwrap_or(0);
    if let Some(last) = size.last_mut() {
        *last = n;
    }
    let y = empty(&size, (x.kind(), x.device()))?;
    let b = bias.map_or(std::ptr::null(), ptr);
    // SAFETY: live tensors (or null for no bias) for the duration of the call; the shim checks
    // shapes, dtypes and devices.
    check(unsafe { llmprof_gemv(ptr(x), ptr(weight), b, ptr(&y)) })?;
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

    /// The kernel against libtorch's Linear in fp32 on the same bf16/fp16 operands, at every
    /// row count 1 ..= 8 it computes and widths that are not multiples of the kernel's
    /// 256-element step, with and without bias and with an output count that is not a multiple
    /// of its 16 per block: within one rounding of the output (2⁻⁷ relative for bf16, 2⁻¹⁰ fp16)
    /// of the largest value. [`fits`] gives it one row of at most [`MAX_K`] only.
    #[test]
    #[ignore = "needs a CUDA GPU and a build with llmprof's kernels: cargo test -- --ignored on the GPU machine"]
    fn gemv_matches_an_fp32_linear_on_a_gpu() {
        assert!(tch::Cuda::is_available(), "no CUDA device");
        let dev = Device::Cuda(0);
        for (kind, tol) in [(Kind::BFloat16, 1.0 / 128.0), (Kind::Half, 1.0 / 1024.0)] {
            for (n, k) in [(4096i64, 4096i64), (1000, 14336), (37, 264), (6144, 8)] {
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
    }
}
