//! NCCL communicators (`csrc/nccl.cpp`) for tensor-parallel ranks on GPUs: the unique id rank 0
//! makes, a communicator per rank, in-place all-reduce and all-gather on the current stream.
use super::{check, ShimError};
use std::ffi::{c_int, c_void};
use tch::Tensor;

/// Bytes of NCCL's unique id.
pub const UNIQUE_ID_BYTES: usize = 128;

/// Whether this worker was built with NCCL.
pub const BUILT_WITH_NCCL: bool = matches!(env!("LLMPROF_HAVE_NCCL").as_bytes(), b"1");

extern "C" {
    fn llmprof_nccl_unique_id(out: *mut u8, len: usize) -> c_int;
    fn llmprof_nccl_init(
        id: *const u8,
        len: usize,
        rank: c_int,
        world: c_int,
        device: c_int,
        comm: *mut *mut c_void,
    ) -> c_int;
    fn llmprof_nccl_all_reduce(comm: *mut c_void, t: *const c_void) -> c_int;
    fn llmprof_nccl_all_gather(comm: *mut c_void, t: *const c_void, out: *const c_void) -> c_int;
    fn llmprof_nccl_end(comm: *mut c_void, abort: c_int);
}

/// A new unique id (rank 0).
pub fn unique_id() -> Result<[u8; UNIQUE_ID_BYTES], ShimError> {
    let mut id = [0u8; UNIQUE_ID_BYTES];
    check(unsafe { llmprof_nccl_unique_id(id.as_mut_ptr(), UNIQUE_ID_BYTES) })?;
    Ok(id)
}

/// One rank's communicator; ends with the process (abort on drop: a rank leaving early must
/// not leave its peers blocked in a collective).
#[derive(Debug)]
pub struct Communicator {
    comm: *mut c_void,
}

// SAFETY: the communicator is used from one thread at a time (the worker's engine thread);
// NCCL communicators may be used from any thread as long as calls are not concurrent.
unsafe impl Send for Communicator {}
unsafe impl Sync for Communicator {}

impl Communicator {
    pub fn new(
        id: &[u8; UNIQUE_ID_BYTES],
        rank: usize,
        world: usize,
        device: usize,
    ) -> Result<Self, ShimError> {
        let mut comm = std::ptr::null_mut();
        check(unsafe {
            llmprof_nccl_init(
                id.as_ptr(),
                UNIQUE_ID_BYTES,
                rank as c_int,
                world as c_int,
                device as c_int,
                &mut comm,
            )
        })?;
        Ok(Communicator { comm })
    }

    /// `t` (contiguous, CUDA) becomes the sum over the ranks.
    pub fn all_reduce(&self, t: &Tensor) -> Result<(), ShimError> {
        check(unsafe { llmprof_nccl_all_reduce(self.comm, t.as_ptr().cast()) })
    }

    /// `out` [world, numel(t)] receives every rank's `t`.
    pub fn all_gather(&self, t: &Tensor, out: &Tensor) -> Result<(), ShimError> {
        check(unsafe { llmprof_nccl_all_gather(self.comm, t.as_ptr().cast(), out.as_ptr().cast()) })
    }
}

impl Drop for Communicator {
    fn drop(&mut self) {
        unsafe { llmprof_nccl_end(self.comm, 1) };
    }
}
