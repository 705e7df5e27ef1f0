//! Useful FLOPs: the model's analytic FLOPs of the op a kernel computes, beside the executed
//! FLOPs ncu counts. Tensor-pipe counts include tile padding (the batch-1 LM-head GEMV on an
//! n=8 tile executes 2.66 GFLOP where its math is 2 × 1280 × 129280 = 0.33 GFLOP), so where a
//! caller can map a kernel to a model op, reports show both intensities.

use regex::Regex;

/// One kernel → op mapping: launches whose name matches `kernel` (and, when given, whose
/// innermost NVTX range is `nvtx_range`) compute `op`, worth `flops_per_launch` analytic FLOPs.
#[derive(Debug, Clone)]
pub struct UsefulFlops {
    /// The model op ("lm_head").
    pub op: String,
    /// Matched against the kernel name as ncu prints it (demangled).
    pub kernel: Regex,
    pub nvtx_range: Option<String>,
    /// Analytic FLOPs of one launch (FLOP = 2 × multiply-accumulate).
    pub flops_per_launch: f64,
}

impl UsefulFlops {
    /// A linear layer (GEMV/GEMM) of `rows` rows through an `in_features × out_features` weight:
    /// 2 × rows × in × out FLOPs per launch (the LM head: `rows` positions, hidden → vocab).
    pub fn linear(
        op: &str,
        kernel_regex: &str,
        nvtx_range: Option<&str>,
        rows: u64,
        in_features: u64,
        out_features: u64,
    ) -> Result<Self, regex::Error> {
        Ok(UsefulFlops {
            op: op.to_string(),
            kernel: Regex::new(kernel_regex)?,
            nvtx_range: nvtx_range.map(String::from),
            flops_per_launch: 2.0 * rows as f64 * in_features as f64 * out_features as f64,
        })
    }

    /// Whether a launch of `kernel_name` inside NVTX range `stage` computes this op.
    pub fn matches(&self, kernel_name: &str, stage: Option<&str>) -> bool {
        self.kernel.is_match(kernel_name)
            && self
                .nvtx_range
                .as_deref()
                .is_none_or(|want| stage == Some(want))
    }
}

/// The first mapping that matches the launch, if any.
pub fn find<'a>(
    rules: &'a [UsefulFlops],
    kernel_name: &str,
    stage: Option<&str>,
) -> Option<&'a UsefulFlops> {
    rules.iter().find(|r| r.matches(kernel_name, stage))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lm_head_mapping() {
        // DeepSeek-OCR's LM head at batch 1: 2 × 1280 × 129280 FLOPs (model/deepseek_ocr/analytic.rs,
        // lm_head_flops_per_position).
        let head = UsefulFlops::linear(
            "lm_head",
            "^nvjet_sm90_tst_384x8",
            Some("decode_step"),
            1,
            1280,
            129_280,
        )
        .expect("regex");
        assert_eq!(head.flops_per_launch, 330_956_800.0);
        let rules = [head];
        let name = "nvjet_sm90_tst_384x8_64x4_2x1_v_bz_TNT";
        assert!(find(&rules, name, Some("decode_step")).is_some());
        assert!(find(&rules, name, Some("prefill")).is_none());
        assert!(find(&rules, "nvjet_sm90_tst_64x8", Some("decode_step")).is_none());
    }
}
