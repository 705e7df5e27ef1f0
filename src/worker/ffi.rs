//! `extern "C"` declarations for the C++ shim (`src/worker/csrc/shim.{h,cpp}`) and minimal safe
//! wrappers: every call checks the shim's status code and every handle frees itself on drop.
//! The shim is linked into `llmprof-worker` and the test harnesses only (see build.rs); the
//! front-end binary must not call anything here.
use std::ffi::{c_char, c_int, CStr, CString};
use std::marker::PhantomData;
use std::path::Path;
use std::ptr::NonNull;

pub mod cuda_graph;
pub mod graph_nodes;
pub mod host_memory;
pub mod kernel_archs;
pub mod kernels;
pub mod kernels_gemm;
pub mod kernels_gemv;
#[cfg(test)]
mod kernels_gemv_swiglu_tests;
#[cfg(test)]
mod kernels_gemv_tests;
pub mod kernels_sampling;
pub mod kernels_vision;
pub mod nccl;
pub mod nvtx;
pub mod streams;
pub mod versions;

pub use cuda_graph::CudaGraph;

/// Mirrors `llmprof_profiler_config`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct RawProfilerConfig {
    pub record_shapes: u8,
    pub profile_memory: u8,
    pub with_stack: u8,
    pub with_flops: u8,
    pub with_modules: u8,
    pub activity_cpu: u8,
    pub activity_cuda: u8,
}

/// Mirrors `llmprof_event` (strings borrowed from the profile).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct RawEventC {
    pub name: *const c_char,
    pub input_shapes: *const c_char,
    pub input_dtypes: *const c_char,
    pub stack: *const c_char,
    pub device_type: i32,
    pub device_index: i32,
    pub activity_type: u8,
    pub scope: u8,
    pub is_async: u8,
    pub start_ns: u64,
    pub duration_ns: u64,
    pub flops: u64,
    pub correlation_id: u64,
    pub linked_correlation_id: u64,
    pub start_thread_id: u64,
    pub device_resource_id: i64,
    pub sequence_nr: i64,
    pub n_bytes: i64,
}

/// Caching-allocator statistics of one device (aggregate pool), in bytes.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct AllocatorStats {
    pub allocated_bytes_current: i64,
    pub allocated_bytes_peak: i64,
    pub reserved_bytes_current: i64,
    pub reserved_bytes_peak: i64,
    pub active_bytes_current: i64,
    pub active_bytes_peak: i64,
    pub requested_bytes_current: i64,
    pub requested_bytes_peak: i64,
    pub num_alloc_retries: i64,
    pub num_ooms: i64,
}

#[repr(C)]
pub struct RawProfile {
    _private: [u8; 0],
}
#[repr(C)]
pub struct RawScope {
    _private: [u8; 0],
}
#[repr(C)]
pub struct RawCudaEvent {
    _private: [u8; 0],
}

extern "C" {
    pub fn llmprof_last_error(buf: *mut c_char, buf_len: usize) -> usize;

    pub fn llmprof_profiler_start(config: *const RawProfilerConfig) -> c_int;
    pub fn llmprof_profiler_stop(out: *mut *mut RawProfile) -> c_int;
    pub fn llmprof_profile_len(profile: *const RawProfile) -> usize;
    pub fn llmprof_profile_event(
        profile: *const RawProfile,
        index: usize,
        out: *mut RawEventC,
    ) -> c_int;
    pub fn llmprof_profile_trace_start_ns(profile: *const RawProfile) -> u64;
    pub fn llmprof_profile_save(profile: *mut RawProfile, path: *const c_char) -> c_int;
    pub fn llmprof_profile_free(profile: *mut RawProfile);

    pub fn llmprof_scope_begin(name: *const c_char, out: *mut *mut RawScope) -> c_int;
    pub fn llmprof_scope_end(scope: *mut RawScope);

    pub fn llmprof_cuda_device_count() -> c_int;
    pub fn llmprof_cuda_current_device(out: *mut i32) -> c_int;
    pub fn llmprof_cuda_set_current_device(device: i32) -> c_int;
    pub fn llmprof_cuda_sm_count(device: i32, out: *mut i32) -> c_int;
    pub fn llmprof_cuda_compute_capability(device: i32, out: *mut i32) -> c_int;
    pub fn llmprof_cuda_clock_rate_khz(device: i32, out: *mut i32) -> c_int;
    pub fn llmprof_cuda_stream_synchronize() -> c_int;
    pub fn llmprof_cuda_device_synchronize() -> c_int;
    pub fn llmprof_set_allow_tf32(cublas: c_int, cudnn: c_int) -> c_int;

    pub fn llmprof_cuda_event_create(out: *mut *mut RawCudaEvent) -> c_int;
    pub fn llmprof_cuda_event_record(event: *mut RawCudaEvent) -> c_int;
    pub fn llmprof_cuda_event_synchronize(event: *mut RawCudaEvent) -> c_int;
    pub fn llmprof_cuda_event_elapsed_ms(
        start: *const RawCudaEvent,
        end: *const RawCudaEvent,
        out: *mut f32,
    ) -> c_int;
    pub fn llmprof_cuda_event_destroy(event: *mut RawCudaEvent);

    pub fn llmprof_cuda_allocator_stats(device: i32, out: *mut AllocatorStats) -> c_int;
    pub fn llmprof_cuda_allocator_reset_peak(device: i32) -> c_int;
}

/// A failed shim call: the C++ exception message, prefixed with the shim function.
#[derive(Debug, Clone, thiserror::Error)]
#[error("libtorch shim: {message}")]
pub struct ShimError {
    pub message: String,
}

impl ShimError {
    fn new(message: impl Into<String>) -> Self {
        ShimError {
            message: message.into(),
        }
    }
}

fn last_error() -> ShimError {
    // SAFETY: a NULL buffer asks only for the length; the second call writes at most `len + 1`
    // bytes into a buffer of that size.
    let len = unsafe { llmprof_last_error(std::ptr::null_mut(), 0) };
    let mut buf = vec![0u8; len + 1];
    unsafe { llmprof_last_error(buf.as_mut_ptr().cast(), buf.len()) };
    buf.truncate(len);
    ShimError::new(String::from_utf8_lossy(&buf).into_owned())
}

fn check(rc: c_int) -> Result<(), ShimError> {
    if rc == 0 {
        Ok(())
    } else {
        Err(last_error())
    }
}

fn take_handle<T>(rc: c_int, ptr: *mut T) -> Result<NonNull<T>, ShimError> {
    check(rc)?;
    NonNull::new(ptr).ok_or_else(|| ShimError::new("shim returned a NULL handle"))
}

/// Marker that keeps thread-affine handles (`RecordFunction`, current-stream state) `!Send`.
type NotSend = PhantomData<*const ()>;

/// One profiler event with owned strings.
#[derive(Debug, Clone)]
pub struct RawEvent {
    pub name: String,
    pub input_shapes: String,
    pub input_dtypes: String,
    pub stack: String,
    pub device_type: i32,
    pub device_index: i32,
    pub activity_type: u8,
    pub scope: u8,
    pub is_async: bool,
    pub start_ns: u64,
    pub duration_ns: u64,
    pub flops: u64,
    pub correlation_id: u64,
    pub linked_correlation_id: u64,
    pub start_thread_id: u64,
    pub device_resource_id: i64,
    pub sequence_nr: i64,
    pub n_bytes: i64,
}

/// Starts the Kineto profiler in this process.
pub fn profiler_start(config: &RawProfilerConfig) -> Result<(), ShimError> {
    // SAFETY: `config` is a valid pointer for the duration of the call.
    check(unsafe { llmprof_profiler_start(config) })
}

/// Stops the Kineto profiler and takes its result.
pub fn profiler_stop() -> Result<Profile, ShimError> {
    let mut out = std::ptr::null_mut();
    // SAFETY: `out` is a valid out-pointer; on success it owns a profile we free on drop.
    let rc = unsafe { llmprof_profiler_stop(&mut out) };
    take_handle(rc, out).map(Profile)
}

/// A finished Kineto profile (owns `ProfilerResult`).
pub struct Profile(NonNull<RawProfile>);

impl Profile {
    pub fn len(&self) -> usize {
        // SAFETY: the handle is live until drop.
        unsafe { llmprof_profile_len(self.0.as_ptr()) }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn trace_start_ns(&self) -> u64 {
        // SAFETY: the handle is live until drop.
        unsafe { llmprof_profile_trace_start_ns(self.0.as_ptr()) }
    }

    /// All events, strings copied out.
    pub fn events(&self) -> Result<Vec<RawEvent>, ShimError> {
        (0..self.len()).map(|i| self.event(i)).collect()
    }

    pub fn event(&self, index: usize) -> Result<RawEvent, ShimError> {
        let mut raw = std::mem::MaybeUninit::<RawEventC>::uninit();
        // SAFETY: the handle is live; on success the shim fully writes `raw`, whose string
        // pointers stay valid while `self` lives (we copy them before returning).
        check(unsafe { llmprof_profile_event(self.0.as_ptr(), index, raw.as_mut_ptr()) })?;
        let raw = unsafe { raw.assume_init() };
        let text = |p: *const c_char| {
            if p.is_null() {
                String::new()
            } else {
                // SAFETY: non-NULL pointers are NUL-terminated strings owned by the profile.
                unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
            }
        };
        Ok(RawEvent {
            name: text(raw.name),
            input_shapes: text(raw.input_shapes),
            input_dtypes: text(raw.input_dtypes),
            stack: text(raw.stack),
            device_type: raw.device_type,
            device_index: raw.device_index,
            activity_type: raw.activity_type,
            scope: raw.scope,
            is_async: raw.is_async != 0,
            start_ns: raw.start_ns,
            duration_ns: raw.duration_ns,
            flops: raw.flops,
            correlation_id: raw.correlation_id,
            linked_correlation_id: raw.linked_correlation_id,
            start_thread_id: raw.start_thread_id,
            device_resource_id: raw.device_resource_id,
            sequence_nr: raw.sequence_nr,
            n_bytes: raw.n_bytes,
        })
    }

    /// Writes the Chrome/Perfetto trace JSON to `path`.
    pub fn save(&mut self, path: &Path) -> Result<(), ShimError> {
        let c_path = path_to_cstring(path)?;
        // SAFETY: live handle, NUL-terminated path.
        check(unsafe { llmprof_profile_save(self.0.as_ptr(), c_path.as_ptr()) })
    }
}

impl Drop for Profile {
    fn drop(&mut self) {
        // SAFETY: we own the handle and free it once.
        unsafe { llmprof_profile_free(self.0.as_ptr()) }
    }
}

fn path_to_cstring(path: &Path) -> Result<CString, ShimError> {
    CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| ShimError::new(format!("path contains NUL: {}", path.display())))
}

/// A named `at::RecordFunction` (USER_SCOPE): visible on the Kineto CPU and GPU timelines.
/// Ends on drop, on the thread that began it.
pub struct UserScope {
    handle: NonNull<RawScope>,
    _not_send: NotSend,
}

impl UserScope {
    pub fn begin(name: &str) -> Result<Self, ShimError> {
        let c_name = CString::new(name).map_err(|_| ShimError::new("scope name contains NUL"))?;
        let mut out = std::ptr::null_mut();
        // SAFETY: NUL-terminated name and valid out-pointer.
        let rc = unsafe { llmprof_scope_begin(c_name.as_ptr(), &mut out) };
        Ok(UserScope {
            handle: take_handle(rc, out)?,
            _not_send: PhantomData,
        })
    }
}

impl Drop for UserScope {
    fn drop(&mut self) {
        // SAFETY: we own the handle; `!Send` keeps us on the creating thread.
        unsafe { llmprof_scope_end(self.handle.as_ptr()) }
    }
}

/// Number of visible CUDA devices (0 without GPU or driver).
pub fn cuda_device_count() -> usize {
    // SAFETY: no arguments; the shim never throws here.
    usize::try_from(unsafe { llmprof_cuda_device_count() }).unwrap_or(0)
}

pub fn cuda_current_device() -> Result<i32, ShimError> {
    let mut out = 0;
    // SAFETY: valid out-pointer.
    check(unsafe { llmprof_cuda_current_device(&mut out) })?;
    Ok(out)
}

/// Makes `device` the current CUDA device: libtorch's current stream there is where the
/// worker's kernels, CUDA events and graph captures go.
pub fn set_current_cuda_device(device: usize) -> Result<(), ShimError> {
    // SAFETY: a plain value; the shim checks the index.
    check(unsafe { llmprof_cuda_set_current_device(device as i32) })
}

/// The CUDA clock-rate attribute of `device`, in MHz.
pub fn cuda_clock_rate_mhz(device: i32) -> Result<f64, ShimError> {
    let mut out = 0;
    // SAFETY: valid out-pointer.
    check(unsafe { llmprof_cuda_clock_rate_khz(device, &mut out) })?;
    Ok(f64::from(out) / 1000.0)
}

/// The compute capability of `device` as major·10 + minor (90 for an H100, 100 for a B200).
pub fn cuda_compute_capability(device: i32) -> Result<u32, ShimError> {
    let mut out = 0;
    // SAFETY: valid out-pointer.
    check(unsafe { llmprof_cuda_compute_capability(device, &mut out) })?;
    u32::try_from(out).map_err(|_| ShimError::new(format!("negative compute capability {out}")))
}

pub fn cuda_sm_count(device: i32) -> Result<u32, ShimError> {
    let mut out = 0;
    // SAFETY: valid out-pointer.
    check(unsafe { llmprof_cuda_sm_count(device, &mut out) })?;
    u32::try_from(out).map_err(|_| ShimError::new(format!("negative SM count {out}")))
}

/// Waits for the current CUDA stream of the current device.
pub fn cuda_stream_synchronize() -> Result<(), ShimError> {
    // SAFETY: no arguments.
    check(unsafe { llmprof_cuda_stream_synchronize() })
}

pub fn cuda_device_synchronize() -> Result<(), ShimError> {
    // SAFETY: no arguments.
    check(unsafe { llmprof_cuda_device_synchronize() })
}

/// Allow or forbid TF32 for fp32 matmuls (cuBLAS) and convolutions (cuDNN). Numerical checks in
/// fp32 forbid both, so they compare true fp32 arithmetic against the reference.
pub fn set_allow_tf32(cublas: bool, cudnn: bool) -> Result<(), ShimError> {
    // SAFETY: plain value arguments.
    check(unsafe { llmprof_set_allow_tf32(cublas.into(), cudnn.into()) })
}

/// A timing-enabled CUDA event.
pub struct CudaEvent(NonNull<RawCudaEvent>);

impl CudaEvent {
    pub fn new() -> Result<Self, ShimError> {
        let mut out = std::ptr::null_mut();
        // SAFETY: valid out-pointer.
        let rc = unsafe { llmprof_cuda_event_create(&mut out) };
        take_handle(rc, out).map(CudaEvent)
    }

    /// Records on the current stream (asynchronous).
    pub fn record(&mut self) -> Result<(), ShimError> {
        // SAFETY: live handle.
        check(unsafe { llmprof_cuda_event_record(self.0.as_ptr()) })
    }

    pub fn synchronize(&mut self) -> Result<(), ShimError> {
        // SAFETY: live handle.
        check(unsafe { llmprof_cuda_event_synchronize(self.0.as_ptr()) })
    }

    /// Milliseconds from `self` to `end` (both recorded and complete).
    pub fn elapsed_ms(&self, end: &CudaEvent) -> Result<f32, ShimError> {
        let mut out = 0.0f32;
        // SAFETY: live handles, valid out-pointer.
        check(unsafe { llmprof_cuda_event_elapsed_ms(self.0.as_ptr(), end.0.as_ptr(), &mut out) })?;
        Ok(out)
    }
}

impl Drop for CudaEvent {
    fn drop(&mut self) {
        // SAFETY: we own the handle.
        unsafe { llmprof_cuda_event_destroy(self.0.as_ptr()) }
    }
}

/// Caching-allocator statistics of `device`.
pub fn cuda_allocator_stats(device: i32) -> Result<AllocatorStats, ShimError> {
    let mut out = AllocatorStats::default();
    // SAFETY: valid out-pointer to a `repr(C)` mirror.
    check(unsafe { llmprof_cuda_allocator_stats(device, &mut out) })?;
    Ok(out)
}

pub fn cuda_allocator_reset_peak(device: i32) -> Result<(), ShimError> {
    // SAFETY: plain value argument.
    check(unsafe { llmprof_cuda_allocator_reset_peak(device) })
}
