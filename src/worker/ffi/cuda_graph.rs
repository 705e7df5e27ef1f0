//! CUDA graphs (`csrc/cuda_graph.cpp`): an `at::cuda::CUDAGraph` captured on a pool stream and
//! replayed on the current stream, and host-to-device copies captured in one
//! ([`capture_upload`]) whose source each replay may change ([`CudaGraph::set_upload`]).
use super::{check, take_handle, NotSend, ShimError};
use std::ffi::{c_int, c_void};
use std::marker::PhantomData;
use std::ptr::NonNull;
use tch::Tensor;

#[repr(C)]
pub struct RawCudaGraph {
    _private: [u8; 0],
}

extern "C" {
    fn llmprof_cuda_graph_create(keep_graph: c_int, out: *mut *mut RawCudaGraph) -> c_int;
    fn llmprof_cuda_graph_capture_begin(
        graph: *mut RawCudaGraph,
        share_pool_with: *mut RawCudaGraph,
    ) -> c_int;
    fn llmprof_cuda_graph_capture_end(graph: *mut RawCudaGraph) -> c_int;
    fn llmprof_cuda_graph_replay(graph: *mut RawCudaGraph) -> c_int;
    fn llmprof_cuda_graph_destroy(graph: *mut RawCudaGraph);
    fn llmprof_capture_upload(
        dst: *const c_void,
        src: *const c_void,
        node: *mut *mut c_void,
        dst_data: *mut *mut c_void,
        src_data: *mut *const c_void,
        bytes: *mut usize,
    ) -> c_int;
    fn llmprof_cuda_graph_set_upload(
        graph: *mut RawCudaGraph,
        node: *mut c_void,
        dst_data: *mut c_void,
        bytes: usize,
        src: *const c_void,
        offset: usize,
    ) -> c_int;
    fn llmprof_host_tensor_used(tensor: *const c_void) -> c_int;
}

/// An `at::cuda::CUDAGraph`, captured on a pool stream and replayed on the current stream.
pub struct CudaGraph {
    handle: NonNull<RawCudaGraph>,
    _not_send: NotSend,
}

impl CudaGraph {
    /// A graph for [`CudaGraph::capture`].
    pub fn new() -> Result<Self, ShimError> {
        Self::create(false)
    }

    /// A graph that keeps its nodes after capture, so that [`CudaGraph::set_upload`] can point
    /// its captured uploads at new sources.
    pub fn keeping_nodes() -> Result<Self, ShimError> {
        Self::create(true)
    }

    fn create(keep_graph: bool) -> Result<Self, ShimError> {
        let mut out = std::ptr::null_mut();
        // SAFETY: valid out-pointer.
        let rc = unsafe { llmprof_cuda_graph_create(c_int::from(keep_graph), &mut out) };
        Ok(CudaGraph {
            handle: take_handle(rc, out)?,
            _not_send: PhantomData,
        })
    }

    /// Captures everything `body` launches. Warm the work up eagerly first; host syncs and
    /// copies from pageable memory inside `body` make capture fail. With `share_pool_with`,
    /// allocations come from that captured graph's memory pool (replay such graphs one at a
    /// time and consume each one's outputs before the next replay).
    pub fn capture<T, E>(
        &mut self,
        share_pool_with: Option<&CudaGraph>,
        body: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E>
    where
        E: From<ShimError>,
    {
        let pool = share_pool_with.map_or(std::ptr::null_mut(), |g| g.handle.as_ptr());
        // SAFETY: live handles; the pool owner outlives this call.
        check(unsafe { llmprof_cuda_graph_capture_begin(self.handle.as_ptr(), pool) })?;
        let result = body();
        // SAFETY: live handle; ends capture and restores the stream even when `body` failed.
        let end = check(unsafe { llmprof_cuda_graph_capture_end(self.handle.as_ptr()) });
        let value = result?;
        end?;
        Ok(value)
    }

    /// The shim's handle, for the capture record's readers (`ffi::graph_nodes`).
    pub(super) fn raw(&self) -> *const RawCudaGraph {
        self.handle.as_ptr()
    }

    pub fn replay(&mut self) -> Result<(), ShimError> {
        // SAFETY: live handle.
        check(unsafe { llmprof_cuda_graph_replay(self.handle.as_ptr()) })
    }

    /// Points `upload` (captured in this graph, made by [`CudaGraph::keeping_nodes`]) at `upload.bytes` bytes of the dense,
    /// page-locked host tensor `src` from byte `offset` on, for the following replays. `src` must
    /// stay alive until those replays have run ([`host_tensor_used`]).
    pub fn set_upload(
        &mut self,
        upload: &CapturedUpload,
        src: &Tensor,
        offset: usize,
    ) -> Result<(), ShimError> {
        // SAFETY: live handles; the node and destination come from this graph's capture; the
        // shim checks that the source range lies inside `src` and is page-locked.
        check(unsafe {
            llmprof_cuda_graph_set_upload(
                self.handle.as_ptr(),
                upload.node.as_ptr(),
                upload.dst,
                upload.bytes,
                src.as_ptr().cast(),
                offset,
            )
        })
    }
}

impl Drop for CudaGraph {
    fn drop(&mut self) {
        // SAFETY: we own the handle.
        unsafe { llmprof_cuda_graph_destroy(self.handle.as_ptr()) }
    }
}

/// A host-to-device copy captured in a graph: its node, its destination, the address it read
/// at capture and its length.
#[derive(Debug, Clone, Copy)]
pub struct CapturedUpload {
    node: NonNull<c_void>,
    dst: *mut c_void,
    /// The source address at capture (to find which host input it read).
    pub src: usize,
    pub bytes: usize,
}

/// While the current stream captures a graph: copies the dense, page-locked host tensor `src`
/// into the CUDA tensor `dst` (same shape, strides and dtype) as a node of the graph.
pub fn capture_upload(dst: &Tensor, src: &Tensor) -> Result<CapturedUpload, ShimError> {
    let mut node = std::ptr::null_mut();
    let mut dst_data = std::ptr::null_mut();
    let mut src_data = std::ptr::null();
    let mut bytes = 0usize;
    // SAFETY: live tensor handles and valid out-pointers; the shim checks the tensors.
    check(unsafe {
        llmprof_capture_upload(
            dst.as_ptr().cast(),
            src.as_ptr().cast(),
            &mut node,
            &mut dst_data,
            &mut src_data,
            &mut bytes,
        )
    })?;
    let node =
        NonNull::new(node).ok_or_else(|| ShimError::new("the captured upload has no node"))?;
    Ok(CapturedUpload {
        node,
        dst: dst_data,
        src: src_data as usize,
        bytes,
    })
}

/// Libtorch's host allocator keeps the page-locked block of `t` until the work queued so far
/// on the current stream has run (what a non-blocking `copy_` from it records).
pub fn host_tensor_used(t: &Tensor) -> Result<(), ShimError> {
    // SAFETY: `t` is a live tensor handle.
    check(unsafe { llmprof_host_tensor_used(t.as_ptr().cast()) })
}
