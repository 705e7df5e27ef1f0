//! llmprof's Hopper kernels (`csrc/kernels/sm90a`, CUTLASS, behind `csrc/kernels_gemm.cpp`): a
//! Linear whose epilogue applies the erf-form GELU or quickGELU, and SAM's global and windowed attention
//! with the relative-position bias inside, as safe wrappers like [`super::kernels`]'s.
use super::kernels::{aligned16, empty, ptr};
use super::{check, ShimError};
use std::ffi::{c_int, c_void};
use tch::{Device, Kind, Tensor};

extern "C" {
    fn llmprof_linear_gelu_on_device(device: i64) -> c_int;
    fn llmprof_linear_gelu(
        x: *const c_void,
        w: *const c_void,
        b: *const c_void,
        out: *const c_void,
        variant: c_int,
    ) -> c_int;
    fn llmprof_sam_global_attention_on_device(device: i64) -> c_int;
    fn llmprof_sam_window_fmha(
        qkv: *const c_void,
        prod: *const c_void,
        out: *const c_void,
    ) -> c_int;
    fn llmprof_sam_global_attention(
        qkv: *const c_void,
        prod: *const c_void,
        out: *const c_void,
    ) -> c_int;
}

/// Grid sides the global-attention kernel is built for: SAM at 512, 640, 1024 and 1280 pixels.
pub const SAM_GLOBAL_ATTENTION_GRIDS: [i64; 4] = [32, 40, 64, 80];

/// Whether [`sam_global_attention`] runs on `device`: this build has it (CUTLASS's FMHA example
/// was found) and the device is compute capability 9.0 (H100, H200).
pub fn sam_global_attention_on(device: Device) -> bool {
    match device {
        // SAFETY: a plain query; the shim checks the index.
        Device::Cuda(i) => unsafe { llmprof_sam_global_attention_on_device(i as i64) == 1 },
        _ => false,
    }
}

/// Whether [`sam_global_attention`] takes `qkv` [B, grid, grid, 3·heads·64] with `heads`:
/// bf16, contiguous and 16-byte aligned, heads of 64 channels, a square grid it is built for
/// ([`SAM_GLOBAL_ATTENTION_GRIDS`]), at most 65,535 views and 2³¹ − 1 elements (the kernel's
/// 32-bit strides), on a device where [`sam_global_attention_on`] holds.
pub fn sam_global_attention_fits(qkv: &Tensor, heads: i64) -> bool {
    let size = qkv.size();
    size.len() == 4
        && heads > 0
        && size[0] <= 65_535
        && qkv.numel() <= i32::MAX as usize
        && size[1] == size[2]
        && SAM_GLOBAL_ATTENTION_GRIDS.contains(&size[1])
        && size[3] == 3 * heads * 64
        && qkv.kind() == Kind::BFloat16
        && qkv.is_contiguous()
        && aligned16(qkv)
        && sam_global_attention_on(qkv.device())
}

/// SAM's global attention over `qkv` [B, grid, grid, 3·heads·64] (the qkv Linear's output) in
/// one flash-attention kernel: softmax((q·kᵀ + Ph + Pw)/8)·v per head, the decomposed bias taken
/// from `prod` [heads, B·grid², cols] (each token's q times both resized tables, √64 folded in:
/// the 2·grid − 1 row offsets, then the 2·grid − 1 column offsets). Output [B, grid, grid,
/// heads·64], heads merged ([`sam_global_attention_fits`]).
pub fn sam_global_attention(qkv: &Tensor, prod: &Tensor) -> Result<Tensor, ShimError> {
    sam_attention_with(llmprof_sam_global_attention, qkv, prod)
}

/// The shim's SAM attention entry point `entry` over `qkv` [.., 3·C] and `prod`, into a new
/// output [.., C].
fn sam_attention_with(
    entry: unsafe extern "C" fn(*const c_void, *const c_void, *const c_void) -> c_int,
    qkv: &Tensor,
    prod: &Tensor,
) -> Result<Tensor, ShimError> {
    let mut size = qkv.size();
    if let Some(last) = size.last_mut() {
        *last /= 3;
    }
    let out = empty(&size, (qkv.kind(), qkv.device()))?;
    // SAFETY: live tensors for the duration of the call; the shim checks shapes and devices.
    check(unsafe { entry(ptr(qkv), ptr(prod), ptr(&out)) })?;
    Ok(out)
}

/// The window side [`sam_window_fmha`] is built for: SAM's.
pub const SAM_WINDOW_FMHA_SIDE: i64 = 14;

/// Whether [`sam_window_fmha`] takes the qkv Linear's output for `y` [B, H, W, C] with `heads`
/// in `win` windows: bf16, heads of 64 channels, SAM's 14×14 windows, at most 2³¹ − 1 tiles
/// (two per window and head) and tokens, on a device where the Hopper attention kernels run
/// ([`sam_global_attention_on`]).
pub fn sam_window_fmha_fits(y: &Tensor, heads: i64, win: (i64, i64)) -> bool {
    let size = y.size();
    if size.len() != 4 || heads <= 0 {
        return false;
    }
    let (b, h, w, c) = (size[0], size[1], size[2], size[3]);
    let side = SAM_WINDOW_FMHA_SIDE;
    let windows = b * ((h + side - 1) / side) * ((w + side - 1) / side);
    win == (side, side)
        && c == heads * 64
        && 2 * windows * heads <= i32::MAX as i64
        && b * h * w <= i32::MAX as i64
        && y.kind() == Kind::BFloat16
        && sam_global_attention_on(y.device())
}

/// SAM's windowed attention over `qkv` [B, H, W, 3·heads·64] in 14×14 windows (the grid padded
/// at the bottom and right) in one flash-attention kernel that reads the windows where the qkv
/// Linear wrote them and writes the output on the grid, [B, H, W, heads·64]. `qkv` must come
/// from the Linear without its k and v biases: padded tokens read as zero, which matches SAM's
/// zero padding only then (b_k shifts every score of a query alike; b_v goes to the
/// projection's bias: vision/sam_window_fmha.rs). `prod` as for [`sam_global_attention`], for
/// the 27 offsets of each axis.
pub fn sam_window_fmha(qkv: &Tensor, prod: &Tensor) -> Result<Tensor, ShimError> {
    sam_attention_with(llmprof_sam_window_fmha, qkv, prod)
}

/// Whether [`linear_act`] runs on `device`: this build has the Hopper GEMMs and the device is
/// compute capability 9.0 (H100, H200).
pub fn linear_gelu_on(device: Device) -> bool {
    match device {
        // SAFETY: a plain query; the shim checks the index.
        Device::Cuda(i) => unsafe { llmprof_linear_gelu_on_device(i as i64) == 1 },
        _ => false,
    }
}

/// Whether [`linear_act`] takes `x` [.., k] with `weight` [n, k] and `bias` [n]
/// ([`linear_gelu_operands_fit`]) on a device where [`linear_gelu_on`] holds.
pub fn linear_gelu_fits(x: &Tensor, weight: &Tensor, bias: &Tensor) -> bool {
    linear_gelu_operands_fit(x, weight, bias) && linear_gelu_on(x.device())
}

/// The GEMM's operand rules, wherever the tensors are: all bf16 on one device, contiguous, their
/// data 16-byte aligned (TMA), `x` non-empty [.., k], `weight` [n, k], `bias` [n], n and k
/// multiples of 8.
pub fn linear_gelu_operands_fit(x: &Tensor, weight: &Tensor, bias: &Tensor) -> bool {
    let (n, k) = match weight.size2() {
        Ok(nk) => nk,
        Err(_) => return false,
    };
    [x, weight, bias].iter().all(|t| {
        t.kind() == Kind::BFloat16 && t.device() == x.device() && t.is_contiguous() && aligned16(t)
    }) && x.numel() > 0
        && x.size().last() == Some(&k)
        && bias.size() == [n]
        && n % 8 == 0
        && k % 8 == 0
}

/// The activation a [`linear_act`] GEMM applies in its epilogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    /// The erf-form GELU (erf within 1.5e-7; SAM's MLP).
    Gelu = 0,
    /// quickGELU, v·σ(1.702·v) (CLIP's MLP).
    QuickGelu = 1,
}

/// `act`(`x`·`weight`ᵀ + `bias`) in one GEMM, the activation applied to the fp32 accumulator
/// plus bias and rounded once ([`linear_gelu_fits`]).
pub fn linear_act(
    x: &Tensor,
    weight: &Tensor,
    bias: &Tensor,
    act: Activation,
) -> Result<Tensor, ShimError> {
    let mut size = x.size();
    if let Some(last) = size.last_mut() {
        *last = weight.size().first().copied().unwrap_or(0);
    }
    let out = empty(&size, (x.kind(), x.device()))?;
    // SAFETY: live tensors for the duration of the call; the shim checks shapes and devices.
    check(unsafe { llmprof_linear_gelu(ptr(x), ptr(weight), ptr(bias), ptr(&out), act as c_int) })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::{
        linear_act, linear_gelu_fits, linear_gelu_on, linear_gelu_operands_fit, Activation,
    };
    use tch::{Device, Kind, Tensor};

    /// Off a GPU nothing takes the Hopper GEMM: the caller falls back to the Linear and GELU.
    #[test]
    fn linear_gelu_runs_on_no_cpu_tensor() {
        assert!(!linear_gelu_on(Device::Cpu));
        let x = Tensor::randn([4, 64], (Kind::BFloat16, Device::Cpu));
        let w = Tensor::randn([32, 64], (Kind::BFloat16, Device::Cpu));
        let b = Tensor::randn([32], (Kind::BFloat16, Device::Cpu));
        assert!(!linear_gelu_fits(&x, &w, &b));
    }

    /// The operand rules the Hopper GEMM needs, checked where the data is: a view two bytes
    /// into its storage is refused (TMA needs 16-byte aligned rows), as are other dtypes,
    /// widths off a multiple of 8, an empty `x`, a bias of the wrong length and non-contiguous
    /// inputs; SAM's shapes fit.
    #[test]
    fn linear_gelu_operand_rules() {
        let bf = (Kind::BFloat16, Device::Cpu);
        let x = Tensor::randn([4, 64], bf);
        let w = Tensor::randn([32, 64], bf);
        let b = Tensor::randn([32], bf);
        assert!(linear_gelu_operands_fit(&x, &w, &b));
        let sam = (
            Tensor::randn([2, 5, 768], bf),
            Tensor::randn([3072, 768], bf),
        );
        assert!(linear_gelu_operands_fit(
            &sam.0,
            &sam.1,
            &Tensor::randn([3072], bf)
        ));
        let shifted = Tensor::randn([4 * 64 + 1], bf)
            .narrow(0, 1, 4 * 64)
            .view([4, 64]);
        assert!(shifted.is_contiguous());
        assert!(!linear_gelu_operands_fit(&shifted, &w, &b));
        assert!(!linear_gelu_operands_fit(&x.to_kind(Kind::Float), &w, &b));
        let odd = Tensor::randn([4, 36], bf);
        assert!(!linear_gelu_operands_fit(
            &odd,
            &Tensor::randn([32, 36], bf),
            &b
        ));
        assert!(!linear_gelu_operands_fit(
            &Tensor::randn([0, 64], bf),
            &w,
            &b
        ));
        assert!(!linear_gelu_operands_fit(&x, &w, &Tensor::randn([16], bf)));
        assert!(!linear_gelu_operands_fit(
            &Tensor::randn([64, 4], bf).tr(),
            &w,
            &b
        ));
    }

    /// Mean and largest absolute difference of `got` from `want` (fp32).
    fn errors(got: &Tensor, want: &Tensor) -> (f64, f64) {
        let d = (got.to_kind(Kind::Float) - want).abs();
        (
            d.mean(Kind::Float).double_value(&[]),
            d.max().double_value(&[]),
        )
    }

    /// The fused GEMM against GELU(x·Wᵀ + b) in fp32 from the same bf16 inputs: no less
    /// accurate than the Linear and GELU in bf16 (which round twice), for SAM's MLP shape at
    /// row counts off the 128-row tile and a small shape; shapes the GEMM does not take are
    /// refused by `linear_gelu_fits`.
    #[test]
    #[ignore = "needs a Hopper GPU and a build with llmprof's Hopper GEMMs: cargo test -- --ignored on the GPU machine"]
    fn linear_gelu_is_no_less_accurate_than_two_ops_on_a_gpu() {
        assert!(tch::Cuda::is_available(), "no CUDA device");
        let dev = Device::Cuda(0);
        assert!(
            linear_gelu_on(dev),
            "device 0 is not compute capability 9.0 or this build lacks the Hopper GEMMs"
        );
        tch::manual_seed(7);
        for (m, n, k) in [
            (1i64, 3072i64, 768i64),
            (7, 3072, 768),
            (4101, 3072, 768),
            (300, 64, 40),
        ] {
            let bf = (Kind::BFloat16, dev);
            let x = Tensor::randn([m, k], bf);
            let w = Tensor::randn([n, k], bf) * (1.0 / (k as f64).sqrt());
            let b = Tensor::randn([n], bf) * 0.5;
            assert!(linear_gelu_fits(&x, &w, &b), "{m}x{n}x{k}");
            let got = linear_act(&x, &w, &b, Activation::Gelu).unwrap();
            assert_eq!(got.size(), vec![m, n]);
            let f = |t: &Tensor| t.to_kind(Kind::Float);
            let exact = f(&x).linear(&f(&w), Some(&f(&b))).gelu("none");
            let two_ops = x.linear(&w, Some(&b)).gelu("none");
            let (got_mean, got_max) = errors(&got, &exact);
            let (ops_mean, ops_max) = errors(&two_ops, &exact);
            assert!(
                got_mean <= ops_mean * 1.05 && got_max <= ops_max * 1.5 + 1e-6,
                "{m}x{n}x{k}: fused mean {got_mean:.3e} max {got_max:.3e}, two ops mean \
                 {ops_mean:.3e} max {ops_max:.3e}"
            );
            // Every value within one bf16 rounding (plus the GEMM's fp32 sum order) of the
            // exact one.
            let (_, bound) = errors(&exact.to_kind(Kind::BFloat16), &exact);
            assert!(
                got_max <= 2.0 * bound + 1e-3,
                "{m}x{n}x{k}: max {got_max:.3e}"
            );
        }
        // 3-D input: rows of every leading index.
        let x = Tensor::randn([2, 5, 768], (Kind::BFloat16, dev));
        let w = Tensor::randn([3072, 768], (Kind::BFloat16, dev)) * 0.03;
        let b = Tensor::randn([3072], (Kind::BFloat16, dev));
        let got = linear_act(&x, &w, &b, Activation::Gelu).unwrap();
        let flat = linear_act(&x.reshape([10, 768]), &w, &b, Activation::Gelu).unwrap();
        assert!(got.reshape([10, 3072]).equal(&flat));
        // Not multiples of 8 or not bf16: refused.
        let odd = Tensor::randn([4, 36], (Kind::BFloat16, dev));
        let w_odd = Tensor::randn([16, 36], (Kind::BFloat16, dev));
        assert!(!linear_gelu_fits(
            &odd,
            &w_odd,
            &Tensor::zeros([16], (Kind::BFloat16, dev))
        ));
        let xf = Tensor::randn([4, 64], (Kind::Float, dev));
        let wf = Tensor::randn([32, 64], (Kind::Float, dev));
        assert!(!linear_gelu_fits(
            &xf,
            &wf,
            &Tensor::zeros([32], (Kind::Float, dev))
        ));
    }
}
