//! Page-locked host copies of tensors (`csrc/host_memory.cpp`): tch's `pin_memory` passes a
//! device, which libtorch 2.11 deprecates with a warning on every call; and copies that do not
//! block the host (tch's `copy_` always blocks).
use super::{check, ShimError};
use std::ffi::{c_int, c_void};
use tch::Tensor;

extern "C" {
    fn llmprof_pin_memory(tensor: *const c_void, out: *mut *mut c_void) -> c_int;
    fn llmprof_copy_async(dst: *const c_void, src: *const c_void) -> c_int;
    fn llmprof_is_pinned(tensor: *const c_void, out: *mut c_int) -> c_int;
}

/// A page-locked copy of the CPU tensor `t` (needs a CUDA build of libtorch).
pub fn pinned(t: &Tensor) -> Result<Tensor, ShimError> {
    let mut out: *mut c_void = std::ptr::null_mut();
    // SAFETY: `t` is a live tensor handle; on success `out` is a new at::Tensor* that the
    // returned Tensor owns (tch frees it on drop).
    check(unsafe { llmprof_pin_memory(t.as_ptr().cast(), &mut out) })?;
    if out.is_null() {
        return Err(ShimError::new("pin_memory returned no tensor"));
    }
    // SAFETY: `out` is a heap-allocated at::Tensor, which is what tch's handles are.
    Ok(unsafe { Tensor::from_ptr(out.cast()) })
}

/// `dst.copy_(src)` without blocking the host where the copy allows it (from page-locked memory
/// to a GPU, say; libtorch keeps the source's block until the copy has run).
pub fn copy_async(dst: &Tensor, src: &Tensor) -> Result<(), ShimError> {
    // SAFETY: both are live tensor handles.
    check(unsafe { llmprof_copy_async(dst.as_ptr().cast(), src.as_ptr().cast()) })
}

/// Whether `t` lies in page-locked host memory.
pub fn is_pinned(t: &Tensor) -> Result<bool, ShimError> {
    let mut out: c_int = 0;
    // SAFETY: a live tensor handle and a valid out-pointer.
    check(unsafe { llmprof_is_pinned(t.as_ptr().cast(), &mut out) })?;
    Ok(out == 1)
}
