//! The libtorch CUDA caching allocator as an [`AllocatorProbe`] (through the shim), for the
//! per-region peaks of `llmprof::measure::memory`.
use llmprof::measure::memory::{AllocatorProbe, Peak};

/// The libtorch CUDA caching allocator of one device, through the shim.
pub struct CudaAllocator {
    pub device: i32,
}

impl AllocatorProbe for CudaAllocator {
    fn peak(&self) -> Option<Peak> {
        crate::ffi::cuda_allocator_stats(self.device)
            .ok()
            .map(|s| (s.allocated_bytes_peak, s.reserved_bytes_peak))
    }

    fn reset_peak(&self) {
        // A failed reset only makes later peaks conservative (they include earlier ones).
        if let Err(e) = crate::ffi::cuda_allocator_reset_peak(self.device) {
            tracing::debug!("allocator peak reset failed: {e}");
        }
    }
}
