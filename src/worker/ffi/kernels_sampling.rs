//! Greedy selection on the GPU in llmprof's kernel (`csrc/kernels/argmax.cu`,
//! `runtime.optim.argmax_kernel`): each row of fp32 logits → the index of its largest value,
//! libtorch argmax's choice (the first of equal values, a NaN above every number), over many
//! blocks per row where libtorch reduces a row in one (27.6 µs a call for a 128,256-wide row on
//! an H200).
use super::kernels::{empty, ptr, MAX_GRID_Y};
use super::{check, ShimError};
use std::ffi::{c_int, c_void};
use tch::{Kind, Tensor};

extern "C" {
    fn llmprof_argmax(logits: *const c_void, scratch: *const c_void, out: *const c_void) -> c_int;
}

/// Each step's greedy choice in one generation loop: in the kernel, with its state (per row a
/// 64-bit key and a counter, zero between calls: each call leaves them so), or libtorch's argmax.
pub struct Argmax {
    scratch: Option<Tensor>,
    rows: i64,
}

/// Whether the kernel takes `logits`: [rows, vocab] fp32, contiguous, on a CUDA device, at most
/// CUDA's largest grid y rows and fewer than 2³² columns.
pub fn fits(logits: &Tensor) -> bool {
    let size = logits.size();
    logits.device().is_cuda()
        && logits.kind() == Kind::Float
        && logits.is_contiguous()
        && size.len() == 2
        && (1..=MAX_GRID_Y).contains(&size[0])
        && (1..(1i64 << 32)).contains(&size[1])
}

impl Argmax {
    /// For a loop whose logits are shaped as `logits`: the kernel where `kernel` is asked and
    /// [`fits`] says yes, else libtorch's argmax.
    pub fn new(logits: &Tensor, kernel: bool) -> Result<Self, ShimError> {
        let rows = logits.size().first().copied().unwrap_or(0);
        let scratch = match kernel && fits(logits) {
            true => Some(
                Tensor::f_zeros([2 * rows], (Kind::Int64, logits.device()))
                    .map_err(|e| ShimError::new(format!("argmax scratch: {e}")))?,
            ),
            false => None,
        };
        Ok(Argmax { scratch, rows })
    }

    /// Whether the choices run in the kernel.
    pub fn uses_kernel(&self) -> bool {
        self.scratch.is_some()
    }

    /// Each row's choice [rows] int64: in the kernel where it is used and `logits` fits with this
    /// loop's rows, else libtorch's argmax (the same choice).
    pub fn choose(&self, logits: &Tensor) -> Result<Tensor, ShimError> {
        let scratch = match &self.scratch {
            Some(s) if fits(logits) && logits.size()[0] == self.rows => s,
            _ => {
                return logits
                    .f_argmax(-1, false)
                    .map_err(|e| ShimError::new(format!("argmax: {e}")))
            }
        };
        let out = empty(&[self.rows], (Kind::Int64, logits.device()))?;
        // SAFETY: live tensors for the duration of the call; the shim checks shapes, dtypes and
        // devices.
        check(unsafe { llmprof_argmax(ptr(logits), ptr(scratch), ptr(&out)) })?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::Device;

    #[test]
    fn only_fp32_rows_on_a_gpu_fit() {
        let cpu = Tensor::zeros([2, 100], (Kind::Float, Device::Cpu));
        assert!(!fits(&cpu));
        assert!(!Argmax::new(&cpu, true).unwrap().uses_kernel());
    }

    /// The kernel against libtorch's argmax over rows of random logits (one and many blocks a
    /// row), rows whose maximum appears twice (the first wins), rows of −∞ only, rows with NaNs
    /// (the first NaN wins) and rows mixing −0 and +0 as their maximum; ten calls in a row reuse
    /// the scratch (left zero by each call), under both launch policies.
    #[test]
    #[ignore = "needs a CUDA GPU and a build with llmprof's kernels: cargo test -- --ignored on the GPU machine"]
    fn argmax_kernel_equals_libtorch_on_a_gpu() {
        crate::ffi::kernels::with_each_launch_policy(|| {
            assert!(tch::Cuda::is_available(), "no CUDA device");
            let dev = Device::Cuda(0);
            for (rows, vocab) in [(1i64, 128256i64), (32, 129280), (3, 1000), (5, 7)] {
                let logits = Tensor::randn([rows, vocab], (Kind::Float, dev)) * 4.0;
                let _ = logits.get(0).narrow(0, vocab / 3, 1).fill_(1e4);
                let _ = logits.get(0).narrow(0, vocab / 2, 1).fill_(1e4);
                if rows > 2 {
                    let _ = logits.get(1).fill_(f64::NEG_INFINITY);
                    let _ = logits.get(2).narrow(0, vocab - 1, 1).fill_(f64::NAN);
                    let _ = logits.get(2).narrow(0, vocab / 4, 1).fill_(f64::NAN);
                }
                if rows > 4 {
                    let _ = logits.get(4).fill_(-1.0);
                    let _ = logits.get(4).narrow(0, 2, 1).fill_(-0.0);
                    let _ = logits.get(4).narrow(0, 5, 1).fill_(0.0);
                }
                let argmax = Argmax::new(&logits, true).unwrap();
                assert!(argmax.uses_kernel(), "{rows}x{vocab}");
                let want = logits.argmax(-1, false);
                for call in 0..10 {
                    let got = argmax.choose(&logits).unwrap();
                    assert!(
                        got.equal(&want),
                        "{rows}x{vocab}, call {call}: {got:?} vs {want:?}"
                    );
                }
            }
        });
    }
}
