//! A side CUDA stream (`csrc/streams.cpp`): work queued on it may overlap the current stream's.
//! [`SideStream::fork`] orders it after what the current stream has queued, [`SideStream::run`]
//! queues a closure's work on it, [`SideStream::join`] orders the current stream after it.
//!
//! Tensors that cross streams must stay alive until the join: the caching allocator hands a
//! freed block to the next allocation on the stream that allocated it without waiting for the
//! other stream.
use super::{check, take_handle, NotSend, ShimError};
use std::ffi::c_int;
use std::marker::PhantomData;
use std::ptr::NonNull;

#[repr(C)]
pub struct RawSideStream {
    _private: [u8; 0],
}

extern "C" {
    fn llmprof_side_stream_create(device: i64, out: *mut *mut RawSideStream) -> c_int;
    fn llmprof_side_stream_fork(s: *mut RawSideStream) -> c_int;
    fn llmprof_side_stream_enter(s: *mut RawSideStream) -> c_int;
    fn llmprof_side_stream_leave(s: *mut RawSideStream) -> c_int;
    fn llmprof_side_stream_join(s: *mut RawSideStream) -> c_int;
    fn llmprof_side_stream_destroy(s: *mut RawSideStream);
    fn llmprof_cuda_stream_capturing(out: *mut c_int) -> c_int;
}

/// Whether the current CUDA stream is capturing a graph.
pub fn capturing() -> Result<bool, ShimError> {
    let mut out: c_int = 0;
    // SAFETY: valid out-pointer.
    check(unsafe { llmprof_cuda_stream_capturing(&mut out) })?;
    Ok(out == 1)
}

/// A non-blocking stream on one CUDA device.
pub struct SideStream {
    handle: NonNull<RawSideStream>,
    _not_send: NotSend,
}

impl std::fmt::Debug for SideStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SideStream")
    }
}

impl SideStream {
    /// A new stream on CUDA device `device`.
    pub fn new(device: usize) -> Result<Self, ShimError> {
        let mut out = std::ptr::null_mut();
        // SAFETY: valid out-pointer; the shim checks the index.
        let rc = unsafe { llmprof_side_stream_create(device as i64, &mut out) };
        Ok(SideStream {
            handle: take_handle(rc, out)?,
            _not_send: PhantomData,
        })
    }

    /// The side stream waits for everything the current stream has queued so far.
    pub fn fork(&self) -> Result<(), ShimError> {
        // SAFETY: live handle.
        check(unsafe { llmprof_side_stream_fork(self.handle.as_ptr()) })
    }

    /// The current stream waits for everything the side stream has queued so far.
    pub fn join(&self) -> Result<(), ShimError> {
        // SAFETY: live handle.
        check(unsafe { llmprof_side_stream_join(self.handle.as_ptr()) })
    }

    /// `body` with the side stream as the current stream; the previous one is current again
    /// afterwards, also when `body` fails.
    pub fn run<T, E>(&self, body: impl FnOnce() -> Result<T, E>) -> Result<T, E>
    where
        E: From<ShimError>,
    {
        // SAFETY: live handle.
        check(unsafe { llmprof_side_stream_enter(self.handle.as_ptr()) })?;
        let result = body();
        // SAFETY: live handle, entered above.
        let left = check(unsafe { llmprof_side_stream_leave(self.handle.as_ptr()) });
        let value = result?;
        left?;
        Ok(value)
    }
}

impl Drop for SideStream {
    fn drop(&mut self) {
        // SAFETY: we own the handle.
        unsafe { llmprof_side_stream_destroy(self.handle.as_ptr()) }
    }
}
