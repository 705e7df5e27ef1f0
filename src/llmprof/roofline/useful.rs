//! Useful FLOPs: the model's analytic FLOPs of the op a kernel computes, beside the executed
//! FLOPs ncu counts. Tensor-pipe counts include tile padding (the batch-1 LM-head GEMV on an
//! n=8 tile executes 2.66 GFLOP where its math is 2 × 1280 × 129280 = 0.33 GFLOP), so where a
//! kernel maps to a model op, reports show both intensities.
//!
//! Two ways to map a launch to an op: its kernel name (a regex, GPU-specific), or what it read:
//! in a decode step a linear layer streams its weight from DRAM once, so a kernel that executes
//! FLOPs and reads between 0.98× and 1.10× of one weight's bytes computes that linear layer (rows
//! × in × out multiply-adds). Linears of equal weight size have equal FLOPs, so an ambiguous size
//! still gives the right FLOPs; the op is then named by all candidates (`q_proj|o_proj`).

use regex::Regex;

/// Weights below this size are not matched by bytes read: activations and caches then make up
/// a large share of a kernel's traffic.
const MIN_WEIGHT_BYTES: f64 = 1024.0 * 1024.0;
/// Bytes read per weight byte that still count as "read the weight once".
const READ_RATIO: (f64, f64) = (0.98, 1.10);

/// How a launch is recognised as the op.
#[derive(Debug, Clone)]
pub enum KernelMatch {
    /// Its kernel name as ncu prints it (demangled).
    Name(Regex),
    /// It executed FLOPs and read about this many DRAM bytes (one weight, streamed once).
    WeightRead { weight_bytes: f64 },
}

/// One kernel → op mapping: launches recognised by `kernel` (and, when given, whose innermost
/// NVTX range is `nvtx_range`) compute `op`, worth `flops_per_launch` analytic FLOPs.
#[derive(Debug, Clone)]
pub struct UsefulFlops {
    /// The model op ("lm_head").
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

/// A linear layer of a model: `in_features × out_features` weight (the model declares these).
#[derive(Debug, Clone, PartialEq)]
pub struct LinearShape {
    pub op: String,
    pub in_features: u64,
    pub out_features: u64,
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
                KernelMatch::WeightRead { weight_bytes } => {
                    let read = launch.dram_read_bytes.unwrap_or(0.0);
                    launch.executed_flops.unwrap_or(0.0) > 0.0
                        && read >= READ_RATIO.0 * weight_bytes
                        && read <= READ_RATIO.1 * weight_bytes
                }
            }
    }
}

/// Rules recognising the model's decode-step linears by the bytes they read: `rows` rows (the
/// batch) through each weight of `dtype_bytes` per element, inside NVTX range `nvtx_range`.
/// Linears of equal weight size share one rule named by all of them.
pub fn decode_linears_by_weight(
    linears: &[LinearShape],
    rows: u64,
    dtype_bytes: u64,
    nvtx_range: &str,
) -> Vec<UsefulFlops> {
    let mut by_size: Vec<(u64, Vec<&str>)> = Vec::new();
    for l in linears {
        let elems = l.in_features * l.out_features;
        match by_size.iter_mut().find(|(e, _)| *e == elems) {
            Some((_, ops)) if !ops.contains(&l.op.as_str()) => ops.push(&l.op),
            Some(_) => {}
            None => by_size.push((elems, vec![&l.op])),
        }
    }
    by_size
        .into_iter()
        .filter(|(elems, _)| (*elems * dtype_bytes) as f64 >= MIN_WEIGHT_BYTES)
        .map(|(elems, ops)| UsefulFlops {
            op: ops.join("|"),
            kernel: KernelMatch::WeightRead {
                weight_bytes: (elems * dtype_bytes) as f64,
            },
            nvtx_range: Some(nvtx_range.to_string()),
            flops_per_launch: 2.0 * rows as f64 * elems as f64,
        })
        .collect()
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

    fn linear(op: &str, i: u64, o: u64) -> LinearShape {
        LinearShape {
            op: op.into(),
            in_features: i,
            out_features: o,
        }
    }

    #[test]
    fn weight_read_rules_merge_equal_sizes_and_drop_small_weights() {
        let linears = [
            linear("q_proj", 1280, 1280),
            linear("o_proj", 1280, 1280),
            linear("q_proj", 1280, 1280),
            linear("router", 1280, 64),
            linear("lm_head", 1280, 129_280),
        ];
        let rules = decode_linears_by_weight(&linears, 4, 2, "decode_step");
        let ops: Vec<&str> = rules.iter().map(|r| r.op.as_str()).collect();
        // The router's 160 KiB weight is below the 1 MiB floor.
        assert_eq!(ops, ["q_proj|o_proj", "lm_head"]);
        assert_eq!(rules[1].flops_per_launch, 2.0 * 4.0 * 1280.0 * 129_280.0);
        let launch = |read: f64, flops: f64, stage| Launch {
            kernel_name: "any_gemm",
            stage,
            dram_read_bytes: Some(read),
            executed_flops: Some(flops),
        };
        let head_bytes = 1280.0 * 129_280.0 * 2.0;
        let hit = |l: &Launch| find(&rules, l).map(|r| r.op.as_str());
        assert_eq!(
            hit(&launch(head_bytes * 1.001, 1.0, Some("decode_step"))),
            Some("lm_head")
        );
        // Too much read (a GEMM re-reading from DRAM), no FLOPs (a copy of the weight), or
        // outside the decode step: no mapping.
        assert_eq!(
            hit(&launch(head_bytes * 1.2, 1.0, Some("decode_step"))),
            None
        );
        assert_eq!(hit(&launch(head_bytes, 0.0, Some("decode_step"))), None);
        assert_eq!(hit(&launch(head_bytes, 1.0, Some("prefill"))), None);
    }
}
