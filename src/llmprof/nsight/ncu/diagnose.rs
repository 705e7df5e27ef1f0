//! Why stage 2 had no kernel to hand to Nsight Compute, worded as cause and fix. The usual cause
//! is not a setting: on a host where NVML sees no GPU the child stage 1 runs on the CPU and
//! launches no CUDA kernel at all, so blaming `pipeline.ncu.nvtx_include` would mislead.

/// The message for "no kernel to profile".
///
/// - `nvtx_include`: the NVTX range the selection was restricted to (`pipeline.ncu.nvtx_include`).
/// - `launched`: CUDA kernels the selection run launched, before that NVTX restriction.
/// - `gpu`: the GPU NVML sees (`Ok(name)`), or why it sees none (`Err(reason)`), e.g. from
///   `measure::nvml::query_gpu(0)`.
pub fn no_kernels_to_profile(
    nvtx_include: Option<&str>,
    launched: usize,
    gpu: &Result<String, String>,
) -> String {
    match (launched, gpu, nvtx_include) {
        (0, Err(why), _) => format!(
            "the profiled stage 1 launched no CUDA kernel: no NVIDIA GPU is visible on this host \
             ({why}), so it ran on the CPU and Nsight Compute has nothing to measure. Run stage 2 \
             on a machine with an NVIDIA GPU (`nvidia-smi` lists it), or set \
             pipeline.ncu.enable=false to skip Nsight Compute"
        ),
        (0, Ok(name), _) => format!(
            "the profiled stage 1 launched no CUDA kernel although {name} is visible: it ran on \
             the CPU. Check device= (auto, cuda or cuda:N) and CUDA_VISIBLE_DEVICES, and the child \
             run's log in the run directory"
        ),
        (n, _, Some(range)) => format!(
            "none of the {n} CUDA kernels the profiled stage 1 launched ran inside the NVTX range \
             '{range}': set pipeline.ncu.nvtx_include to a region the model marks (decode, \
             prefill, ...), or to null to choose among all kernels"
        ),
        (n, _, None) => format!(
            "the profiled stage 1 launched {n} CUDA kernels but all were memory copies or sets, \
             which Nsight Compute's roofline does not cover"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_gpu_names_the_cause_not_the_setting() {
        let m = no_kernels_to_profile(
            Some("decode"),
            0,
            &Err("NVML unavailable: libnvidia-ml.so.1 not found".into()),
        );
        assert!(
            m.contains("no NVIDIA GPU is visible")
                && m.contains("libnvidia-ml.so.1")
                && m.contains("pipeline.ncu.enable=false"),
            "{m}"
        );
        assert!(!m.contains("Some(") && !m.contains("nvtx_include"), "{m}");
    }

    #[test]
    fn a_filter_that_matches_nothing_names_the_range_plainly() {
        let m = no_kernels_to_profile(Some("decode"), 812, &Ok("NVIDIA H100 80GB HBM3".into()));
        assert!(
            m.contains("none of the 812 CUDA kernels") && m.contains("NVTX range 'decode'"),
            "{m}"
        );
        assert!(!m.contains("Some("), "{m}");
        let m = no_kernels_to_profile(None, 0, &Ok("NVIDIA H100 80GB HBM3".into()));
        assert!(m.contains("ran on the CPU") && m.contains("device="), "{m}");
    }
}
