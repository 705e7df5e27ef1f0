//! NVTX ranges (`csrc/nvtx.cpp`, NVTX v3's header-only API compiled into the shim): what Nsight
//! Systems draws on the host timeline and Nsight Compute's `--nvtx-include` filters kernels by.
use super::NotSend;
use std::ffi::{c_char, CString};
use std::marker::PhantomData;

extern "C" {
    fn llmprof_nvtx_range_push(message: *const c_char);
    fn llmprof_nvtx_range_pop();
}

/// A thread-local NVTX range, open until dropped (push on creation, pop on drop, so ranges nest
/// as their guards do). Not `Send`: NVTX pairs a pop with the last push of the same thread.
pub struct NvtxRange {
    _not_send: NotSend,
}

impl NvtxRange {
    /// Opens a range named `message`, as ASCII: Nsight Compute's `--nvtx-include` matches
    /// push/pop ranges by their ASCII message (a wide message never matched, seen on an H100 with
    /// ncu 2025.3.1; reports/gpu-runs.md). A NUL in `message` ends the name there.
    pub fn push(message: &str) -> Self {
        let head = message.split('\0').next().unwrap_or_default();
        let message = CString::new(head).expect("the name was cut at its first NUL");
        // SAFETY: a valid NUL-terminated string that NVTX copies before returning.
        unsafe { llmprof_nvtx_range_push(message.as_ptr()) };
        Self {
            _not_send: PhantomData,
        }
    }
}

impl Drop for NvtxRange {
    fn drop(&mut self) {
        // SAFETY: pops the range this guard pushed on this thread (guards are not Send).
        unsafe { llmprof_nvtx_range_pop() }
    }
}

#[cfg(test)]
mod tests {
    use super::NvtxRange;

    #[test]
    fn ranges_nest_and_names_with_a_nul_are_cut_not_refused() {
        // Without a profiler attached NVTX returns at once; this checks the calls link and that a
        // NUL in a name neither panics nor reaches C unterminated.
        let outer = NvtxRange::push("prefill");
        let inner = NvtxRange::push("decode\0step");
        drop(inner);
        drop(outer);
    }
}
