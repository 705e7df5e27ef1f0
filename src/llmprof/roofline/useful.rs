//! Useful FLOPs: the model's analytic FLOPs of the op a kernel computes, beside the executed
//! FLOPs ncu counts. Tensor-pipe counts include tile padding (the batch-1 LM-head GEMV on an
//! n=8 tile executes 2.66 GFLOP where its math is 2 × 1280 × 129280 = 0.33 GFLOP), so where a
//! kernel maps to a model op, reports show both intensities.
//!
//! A launch maps to an op by its kernel name: a regex (a user's own rule), or the base name of a
//! kernel stage 1's module attribution saw launched by that module ([`super::module_flops`]).
//! Where one kernel serves several linear modules of different sizes, the bytes it read pick
//! among those modules only: a kernel never borrows the FLOPs of a module that did not launch it.

use regex::Regex;

/// Bytes read per weight byte that still count as "read the weight once".
const READ_RATIO: (f64, f64) = (0.98, 1.10);

/// How a launch is recognised as the op.
#[derive(Debug, Clone)]
pub enum KernelMatch {
    /// Its kernel name as ncu prints it (demangled).
    Name(Regex),
    /// Its base name ([`crate::measure::kernel_names::base_name`]) and, when `weight_bytes` is
    /// given, a launch that executed FLOPs and read about that many DRAM bytes (the module's
    /// weight, streamed once).
    Base {
        base: String,
        weight_bytes: Option<f64>,
    },
}

/// One kernel → op mapping: launches recognised by `kernel` (and, when given, whose innermost
/// NVTX range is `nvtx_range`) compute `op`, worth `flops_per_launch` analytic FLOPs.
#[derive(Debug, Clone)]
pub struct UsefulFlops {
    /// The model op (`lm_head`, `layer.attention.qkv`).
    pub op: String,
    pub kernel: KernelMatch,
    pub nvtx_range: Option<String>,
    /// Analytic FLOPs of one launch (FLOP = 2 × multiply-accumulate).
    pub flops_per_launch: f64,
}

/// What a launch did, as far as the mapping needs it.
#[derive(Debug, Clone, Copy)]
pub struct Launch<'a> {
    pub kernel_name: &'a str,
    pub stage: Option<&'a str>,
    pub dram_read_bytes: Option<f64>,
    pub executed_flops: Option<f64>,
}

impl UsefulFlops {
    /// A linear layer (GEMV/GEMM) of `rows` rows through an `in_features × out_features` weight,
    /// recognised by kernel name: 2 × rows × in × out FLOPs per launch.
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
            kernel: KernelMatch::Name(Regex::new(kernel_regex)?),
            nvtx_range: nvtx_range.map(String::from),
            flops_per_launch: 2.0 * rows as f64 * in_features as f64 * out_features as f64,
        })
    }

    /// Whether `launch` computes this op.
    pub fn matches(&self, launch: &Launch) -> bool {
        let range_ok = self
            .nvtx_range
            .as_deref()
            .is_none_or(|want| launch.stage == Some(want));
        range_ok
            && match &self.kernel {
                KernelMatch::Name(re) => re.is_match(launch.kernel_name),
                KernelMatch::Base { base, weight_bytes } => {
                    crate::measure::kernel_names::base_name(launch.kernel_name) == *base
                        && weight_bytes.is_none_or(|w| reads_once(launch, w))
                }
            }
    }
}

/// The launch executed FLOPs and read between 0.98× and 1.10× of `weight_bytes`.
fn reads_once(launch: &Launch, weight_bytes: f64) -> bool {
    let read = launch.dram_read_bytes.unwrap_or(0.0);
    launch.executed_flops.unwrap_or(0.0) > 0.0
        && read >= READ_RATIO.0 * weight_bytes
        && read <= READ_RATIO.1 * weight_bytes
}

/// The first mapping that matches the launch, if any.
pub fn find<'a>(rules: &'a [UsefulFlops], launch: &Launch) -> Option<&'a UsefulFlops> {
    rules.iter().find(|r| r.matches(launch))
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
        let at = |kernel_name, stage| Launch {
            kernel_name,
            stage,
            dram_read_bytes: None,
            executed_flops: None,
        };
        let name = "nvjet_sm90_tst_384x8_64x4_2x1_v_bz_TNT";
        assert!(find(&rules, &at(name, Some("decode_step"))).is_some());
        assert!(find(&rules, &at(name, Some("prefill"))).is_none());
        assert!(find(&rules, &at("nvjet_sm90_tst_64x8", Some("decode_step"))).is_none());
    }

    #[test]
    fn base_rules_with_a_weight_need_flops_and_one_read_of_it() {
        let head_bytes = 1280.0 * 129_280.0 * 2.0;
        let rules = [UsefulFlops {
            op: "lm_head".into(),
            kernel: KernelMatch::Base {
                base: "gemv".into(),
                weight_bytes: Some(head_bytes),
            },
            nvtx_range: Some("decode_step".into()),
            flops_per_launch: 2.0 * 1280.0 * 129_280.0,
        }];
        let launch = |name, read: f64, flops: f64, stage| Launch {
            kernel_name: name,
            stage,
            dram_read_bytes: Some(read),
            executed_flops: Some(flops),
        };
        let hit = |l: &Launch| find(&rules, l).map(|r| r.op.as_str());
        let gemv = "void gemv<float, 128>(int)";
        assert_eq!(
            hit(&launch(gemv, head_bytes * 1.001, 1.0, Some("decode_step"))),
            Some("lm_head")
        );
        // Another kernel reading the same bytes (an attention kernel whose KV read equals a
        // weight) is not the module's: its name differs.
        assert_eq!(
            hit(&launch("attn_split", head_bytes, 1.0, Some("decode_step"))),
            None
        );
        // Too much read (a GEMM re-reading from DRAM), no FLOPs (a copy of the weight), or
        // outside the decode step: no mapping.
        assert_eq!(
            hit(&launch(gemv, head_bytes * 1.2, 1.0, Some("decode_step"))),
            None
        );
        assert_eq!(
            hit(&launch(gemv, head_bytes, 0.0, Some("decode_step"))),
            None
        );
        assert_eq!(hit(&launch(gemv, head_bytes, 1.0, Some("prefill"))), None);
    }
}
