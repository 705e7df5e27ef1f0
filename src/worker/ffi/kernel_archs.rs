//! Whether this build's CUDA kernels run on a device: the architectures they were compiled for
//! (`LLMPROF_KERNEL_ARCHS`, set by build_archs.rs: SASS for each, PTX of the newest) against the
//! device's compute capability, and the message that names the rebuild when they do not.

/// The architectures the kernels were built for, as major·10 + minor (empty: no kernels).
pub fn built() -> Vec<u32> {
    parse(option_env!("LLMPROF_KERNEL_ARCHS").unwrap_or(""))
}

fn parse(text: &str) -> Vec<u32> {
    text.split(',')
        .filter_map(|a| a.trim().parse().ok())
        .collect()
}

/// How kernels built for `archs` run on a device of compute capability `device`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coverage {
    /// Machine code for the device's family (same major, minor at most the device's).
    Native,
    /// Only the embedded PTX, which the driver JIT-compiles at first launch: correct, but the
    /// code was not tuned or checked for this GPU.
    PtxOnly,
    /// Neither: the kernels cannot launch on this device.
    None,
}

pub fn coverage(archs: &[u32], device: u32) -> Coverage {
    let native = archs
        .iter()
        .any(|&a| a / 10 == device / 10 && a % 10 <= device % 10);
    // PTX is embedded for the newest architecture only.
    let ptx = archs.iter().max().is_some_and(|&newest| newest <= device);
    if native {
        Coverage::Native
    } else if ptx {
        Coverage::PtxOnly
    } else {
        Coverage::None
    }
}

/// The sentence that says what to rebuild, for a device of capability `device` that `archs`
/// does not cover natively; `None` when it does (or when the build has no kernels at all,
/// which [`super::kernels::require`] reports on its own).
pub fn mismatch(archs: &[u32], device: u32, gpu_name: &str) -> Option<String> {
    if archs.is_empty() {
        return None;
    }
    let built = archs
        .iter()
        .map(|a| format!("sm_{a}"))
        .collect::<Vec<_>>()
        .join(", ");
    let what = match coverage(archs, device) {
        Coverage::Native => return None,
        Coverage::PtxOnly => "runs them only through the driver's JIT from PTX (slower first launches, kernels not tuned for it; the Hopper-only kernels do not run)",
        Coverage::None => "cannot run them",
    };
    Some(format!(
        "llmprof-worker's CUDA kernels were built for {built}; this GPU ({gpu_name}) is sm_{device} and {what}.\n  \
         fix: rebuild on this machine with `./bootstrap.sh --yes` (it builds for the GPUs nvidia-smi lists), or \
         `LLMPROF_CUDA_ARCHS={device} cargo build --release` (LLMPROF_CUDA_ARCHS=all builds for every supported GPU)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_family_runs_natively() {
        assert_eq!(coverage(&[90], 90), Coverage::Native);
        assert_eq!(coverage(&[80], 86), Coverage::Native);
        assert_eq!(coverage(&[80, 90, 100, 120], 121), Coverage::Native);
        assert_eq!(mismatch(&[90], 90, "H100"), None);
    }

    #[test]
    fn a_newer_gpu_gets_ptx_and_a_rebuild_message() {
        assert_eq!(coverage(&[90], 100), Coverage::PtxOnly);
        let m = mismatch(&[90], 100, "NVIDIA B200").unwrap();
        assert!(m.contains("built for sm_90"), "{m}");
        assert!(m.contains("sm_100"), "{m}");
        assert!(
            m.contains("LLMPROF_CUDA_ARCHS=100 cargo build --release"),
            "{m}"
        );
    }

    #[test]
    fn an_older_gpu_cannot_run_them() {
        assert_eq!(coverage(&[90], 80), Coverage::None);
        assert_eq!(coverage(&[90, 100], 86), Coverage::None);
        assert!(mismatch(&[90], 80, "A100")
            .unwrap()
            .contains("cannot run them"));
    }

    #[test]
    fn no_kernels_no_message() {
        assert_eq!(mismatch(&[], 80, "A100"), None);
        assert_eq!(parse(""), Vec::<u32>::new());
        assert_eq!(parse("80,90"), vec![80, 90]);
    }
}
