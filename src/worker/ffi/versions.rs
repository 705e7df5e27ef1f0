//! Versions of the libraries this process loaded, read at run time through the shim: libtorch's
//! own build options (`TORCH_VERSION`, `COMMIT_SHA`, what it was built against), the CUDA
//! runtime and driver, cuDNN. Values that cannot be read are `None`; nothing here fails or
//! needs a GPU. Also the one reason a CPU-only run gives for having no CUDA device.
use std::ffi::{c_char, CStr, CString};

/// Mirrors `llmprof_runtime_versions` (shim.h).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawRuntimeVersions {
    pub cuda_runtime: i32,
    pub cuda_driver: i32,
    pub cudnn: i64,
    pub cuda_device_count: i32,
    pub cuda_device_error: i32,
}

extern "C" {
    fn llmprof_runtime_versions_read(out: *mut RawRuntimeVersions);
    fn llmprof_torch_build_option(key: *const c_char, buf: *mut c_char, buf_len: usize) -> i64;
    fn llmprof_cuda_error_string(code: i32) -> *const c_char;
}

/// What env.json records of the loaded libraries.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RuntimeVersions {
    /// libtorch's `TORCH_VERSION`, e.g. `2.11.0`.
    pub torch: Option<String>,
    /// The PyTorch commit libtorch was built from.
    pub torch_commit: Option<String>,
    /// The CUDA and cuDNN versions libtorch was built against (`CUDA_VERSION`, `CUDNN_VERSION`).
    pub torch_built_with_cuda: Option<String>,
    pub torch_built_with_cudnn: Option<String>,
    /// The loaded CUDA runtime (`cudaRuntimeGetVersion`), e.g. `13.0`.
    pub cuda_runtime: Option<String>,
    /// The newest CUDA the installed driver supports (`cudaDriverGetVersion`); `None` without
    /// a driver.
    pub cuda_driver: Option<String>,
    /// The loaded cuDNN (`cudnnGetVersion`), e.g. `9.19.0`.
    pub cudnn: Option<String>,
    pub cuda_device_count: u32,
    /// Why there is no CUDA device, when `cudaGetDeviceCount` failed.
    pub no_cuda_device_reason: Option<String>,
}

impl RuntimeVersions {
    /// Reads everything from the loaded libraries.
    pub fn read() -> Self {
        let mut raw = RawRuntimeVersions {
            cuda_runtime: -1,
            cuda_driver: -1,
            cudnn: -1,
            cuda_device_count: 0,
            cuda_device_error: 0,
        };
        // SAFETY: valid out-pointer to a `repr(C)` mirror; the shim never throws.
        unsafe { llmprof_runtime_versions_read(&mut raw) };
        let reason = (raw.cuda_device_error != 0).then(|| {
            format!(
                "cudaGetDeviceCount failed with code {}, \"{}\"",
                raw.cuda_device_error,
                cuda_error_string(raw.cuda_device_error)
            )
        });
        RuntimeVersions {
            torch: torch_build_option("TORCH_VERSION"),
            torch_commit: torch_build_option("COMMIT_SHA"),
            torch_built_with_cuda: torch_build_option("CUDA_VERSION"),
            torch_built_with_cudnn: torch_build_option("CUDNN_VERSION"),
            cuda_runtime: cuda_version(raw.cuda_runtime),
            cuda_driver: cuda_version(raw.cuda_driver),
            cudnn: cudnn_version(raw.cudnn),
            cuda_device_count: u32::try_from(raw.cuda_device_count).unwrap_or(0),
            no_cuda_device_reason: reason,
        }
    }
}

/// libtorch's build option `key`; `None` when it has none or it is empty.
pub fn torch_build_option(key: &str) -> Option<String> {
    let key = CString::new(key).ok()?;
    // SAFETY: NUL-terminated key; a NULL buffer asks only for the length.
    let len = unsafe { llmprof_torch_build_option(key.as_ptr(), std::ptr::null_mut(), 0) };
    let len = usize::try_from(len).ok()?;
    let mut buf = vec![0u8; len + 1];
    // SAFETY: the buffer holds `len + 1` bytes; the shim writes at most that many.
    unsafe { llmprof_torch_build_option(key.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    buf.truncate(len);
    let value = String::from_utf8_lossy(&buf).trim().to_string();
    (!value.is_empty()).then_some(value)
}

/// The CUDA runtime's description of an error code.
pub fn cuda_error_string(code: i32) -> String {
    // SAFETY: the shim returns a static NUL-terminated string, never NULL.
    unsafe { CStr::from_ptr(llmprof_cuda_error_string(code)) }
        .to_string_lossy()
        .into_owned()
}

/// `13000` → `13.0`, `12080` → `12.8`; `None` for 0 (no driver) and -1 (unknown).
pub fn cuda_version(v: i32) -> Option<String> {
    (v > 0).then(|| format!("{}.{}", v / 1000, (v % 1000) / 10))
}

/// cuDNN's integer version as a string: `major·10000 + minor·100 + patch` since cuDNN 9
/// (`91900` → `9.19.0`), `major·1000 + minor·100 + patch` before (`8902` → `8.9.2`).
pub fn cudnn_version(v: i64) -> Option<String> {
    if v <= 0 {
        return None;
    }
    let (major, rest) = if v >= 90_000 {
        (v / 10_000, v % 10_000)
    } else {
        (v / 1000, v % 1000)
    };
    Some(format!("{major}.{}.{}", rest / 100, rest % 100))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_versions_decode() {
        assert_eq!(cuda_version(13000).as_deref(), Some("13.0"));
        assert_eq!(cuda_version(12080).as_deref(), Some("12.8"));
        assert_eq!(cuda_version(11040).as_deref(), Some("11.4"));
        assert_eq!(cuda_version(0), None);
        assert_eq!(cuda_version(-1), None);
    }

    #[test]
    fn cudnn_versions_decode() {
        assert_eq!(cudnn_version(91900).as_deref(), Some("9.19.0"));
        assert_eq!(cudnn_version(90100).as_deref(), Some("9.1.0"));
        assert_eq!(cudnn_version(8902).as_deref(), Some("8.9.2"));
        assert_eq!(cudnn_version(-1), None);
    }

    #[test]
    fn reads_the_loaded_libtorch_without_a_gpu() {
        let v = RuntimeVersions::read();
        let torch = v.torch.expect("libtorch records TORCH_VERSION");
        assert!(torch.starts_with("2."), "{torch}");
        assert!(v.cuda_runtime.is_some(), "the shim links libcudart");
        if v.cuda_device_count == 0 {
            assert!(!tch::Cuda::is_available());
        }
        assert_eq!(torch_build_option("NO_SUCH_OPTION"), None);
        assert!(!cuda_error_string(35).is_empty());
    }
}
