//! The per-SKU table: for each board NVIDIA publishes datasheet figures for, its rated boost
//! clock, SM count, memory bus and datasheet DRAM bandwidth, matched from the name NVML or ncu
//! reports. With the per-SM rates (`peaks::rates`) a row reproduces the datasheet's dense peaks;
//! each row cites the NVIDIA document it comes from. NVML's maximum SM clock is not a rated clock
//! (GeForce boards report 20–25 % above their boost clock), so it is never used for peaks.

use super::GpuProps;

/// One board.
#[derive(Debug, Clone, PartialEq)]
pub struct Sku {
    /// Short display name ("H100 SXM5").
    pub name: &'static str,
    /// The name NVML reports for the board (`nvmlDeviceGetName`).
    pub nvml_name: &'static str,
    /// More names that select this row, normalised (see [`normalise`]); the normalised
    /// `nvml_name` always selects it.
    pub aliases: &'static [&'static str],
    pub compute_capability: (u32, u32),
    pub sm_count: u32,
    /// Rated (maximum) boost clock; NVIDIA's FP32 figures use it.
    pub boost_clock_mhz: f64,
    /// The clock NVIDIA's dense tensor figures correspond to (figure ÷ SMs ÷ per-SM rate): the boost
    /// clock, except on Hopper, whose tensor figures use a lower clock than its FP32 figure.
    pub tensor_clock_mhz: f64,
    pub memory_bus_width_bits: u32,
    /// Datasheet peak DRAM bandwidth, bytes/s.
    pub dram_bytes_per_s: f64,
    /// The document and figures the row reproduces.
    pub source: &'static str,
}

impl Sku {
    /// The DRAM clock (MHz) the datasheet bandwidth corresponds to: bandwidth ÷ (2 × bus bytes).
    pub fn dram_clock_mhz(&self) -> f64 {
        self.dram_bytes_per_s / (2.0 * f64::from(self.memory_bus_width_bits) / 8.0) / 1e6
    }
}

const A100_SOURCE: &str = "NVIDIA A100 Tensor Core GPU Architecture whitepaper, Table 1, and A100 datasheet: 108 SMs, 1410 MHz boost: FP32 19.5, TF32 156, FP16/BF16 312 TFLOPS dense; HBM2e on 5120 bits: 40GB SXM4/PCIe 1555 GB/s, 80GB SXM4 2039 GB/s, 80GB PCIe 1935 GB/s";

/// The boards with datasheet figures. Add a row per board: every figure from NVIDIA's datasheet
/// or architecture whitepaper, cited in `source`.
pub const SKUS: &[Sku] = &[
    Sku {
        name: "H100 SXM5",
        nvml_name: "NVIDIA H100 80GB HBM3",
        aliases: &["h100 sxm5 80gb", "h100 sxm", "h100 sxm5", "h100"],
        compute_capability: (9, 0),
        sm_count: 132,
        boost_clock_mhz: 1980.0,
        tensor_clock_mhz: 1830.0,
        memory_bus_width_bits: 5120,
        dram_bytes_per_s: 3.35e12,
        source: "NVIDIA H100 Tensor Core GPU Architecture whitepaper, Table 3, and H100 datasheet (SXM5): 132 SMs, 1980 MHz max boost: FP32 66.9; TF32 494.7, FP16/BF16 989.4, FP8 1978.9 TFLOPS dense (= 132 SMs × per-SM rate × 1830 MHz); 3.35 TB/s HBM3 on 5120 bits",
    },
    Sku {
        name: "H100 PCIe",
        nvml_name: "NVIDIA H100 PCIe",
        aliases: &["h100 pcie 80gb"],
        compute_capability: (9, 0),
        sm_count: 114,
        boost_clock_mhz: 1755.0,
        tensor_clock_mhz: 1620.0,
        memory_bus_width_bits: 5120,
        dram_bytes_per_s: 2.0e12,
        source: "NVIDIA H100 PCIe product brief (PB-11133-001) and H100 datasheet (PCIe): 114 SMs, 1755 MHz max boost: FP32 51.2; TF32 378, FP16/BF16 756, FP8 1513 TFLOPS dense (= 114 SMs × per-SM rate × 1620 MHz); 2.0 TB/s HBM2e on 5120 bits",
    },
    Sku {
        name: "H200 SXM",
        nvml_name: "NVIDIA H200",
        aliases: &["h200 sxm", "h200 141gb hbm3e"],
        compute_capability: (9, 0),
        sm_count: 132,
        boost_clock_mhz: 1980.0,
        tensor_clock_mhz: 1830.0,
        // NVML and ncu report 6016 bits on the lent H200 (shared/fixtures/ncu-h200-tch-matmul).
        memory_bus_width_bits: 6016,
        dram_bytes_per_s: 4.8e12,
        source: "NVIDIA H200 Tensor Core GPU datasheet (SXM): FP32 67, TF32 989, FP16/BF16 1979, FP8 3958 TFLOPS with sparsity (dense: half), 4.8 TB/s HBM3e; the same 132-SM GH100 and clocks as H100 SXM5",
    },
    Sku {
        name: "A100 SXM4 40GB",
        nvml_name: "NVIDIA A100-SXM4-40GB",
        aliases: &["a100 sxm 40gb"],
        compute_capability: (8, 0),
        sm_count: 108,
        boost_clock_mhz: 1410.0,
        tensor_clock_mhz: 1410.0,
        memory_bus_width_bits: 5120,
        dram_bytes_per_s: 1555e9,
        source: A100_SOURCE,
    },
    Sku {
        name: "A100 SXM4 80GB",
        nvml_name: "NVIDIA A100-SXM4-80GB",
        aliases: &["a100 sxm 80gb", "a100 80gb", "a100"],
        compute_capability: (8, 0),
        sm_count: 108,
        boost_clock_mhz: 1410.0,
        tensor_clock_mhz: 1410.0,
        memory_bus_width_bits: 5120,
        dram_bytes_per_s: 2039e9,
        source: A100_SOURCE,
    },
    Sku {
        name: "A100 PCIe 40GB",
        nvml_name: "NVIDIA A100-PCIE-40GB",
        aliases: &[],
        compute_capability: (8, 0),
        sm_count: 108,
        boost_clock_mhz: 1410.0,
        tensor_clock_mhz: 1410.0,
        memory_bus_width_bits: 5120,
        dram_bytes_per_s: 1555e9,
        source: A100_SOURCE,
    },
    Sku {
        name: "A100 PCIe 80GB",
        nvml_name: "NVIDIA A100 80GB PCIe",
        aliases: &["a100 pcie 80gb"],
        compute_capability: (8, 0),
        sm_count: 108,
        boost_clock_mhz: 1410.0,
        tensor_clock_mhz: 1410.0,
        memory_bus_width_bits: 5120,
        dram_bytes_per_s: 1935e9,
        source: A100_SOURCE,
    },
    Sku {
        name: "L40S",
        nvml_name: "NVIDIA L40S",
        aliases: &[],
        compute_capability: (8, 9),
        sm_count: 142,
        boost_clock_mhz: 2520.0,
        tensor_clock_mhz: 2520.0,
        memory_bus_width_bits: 384,
        dram_bytes_per_s: 864e9,
        // 142 × 1024 × 2520 MHz = 366.4 TFLOP/s BF16, 1.2 % above the datasheet's 362.05 (its
        // sparse figure, 733, is twice 366.4).
        source: "NVIDIA L40S datasheet: 18,176 CUDA cores (142 SMs), 2520 MHz boost: FP32 91.6, TF32 183, FP16/BF16 362.05, FP8 733 TFLOPS dense; 864 GB/s GDDR6 on 384 bits",
    },
    Sku {
        name: "RTX 4090",
        nvml_name: "NVIDIA GeForce RTX 4090",
        aliases: &[],
        compute_capability: (8, 9),
        sm_count: 128,
        boost_clock_mhz: 2520.0,
        tensor_clock_mhz: 2520.0,
        memory_bus_width_bits: 384,
        dram_bytes_per_s: 1008e9,
        source: "NVIDIA Ada GPU Architecture whitepaper, Appendix A (GeForce RTX 4090): 128 SMs, 2520 MHz boost: FP32 82.6; FP16/BF16 Tensor with FP32 accumulate 165.2 dense (330.3 with FP16 accumulate); TF32 82.6; FP8 with FP32 accumulate 330.3; 21 Gbps GDDR6X on 384 bits = 1008 GB/s",
    },
    Sku {
        name: "RTX 5090",
        nvml_name: "NVIDIA GeForce RTX 5090",
        aliases: &[],
        compute_capability: (12, 0),
        sm_count: 170,
        boost_clock_mhz: 2407.0,
        tensor_clock_mhz: 2407.0,
        memory_bus_width_bits: 512,
        dram_bytes_per_s: 1792e9,
        source: "NVIDIA RTX Blackwell GPU Architecture whitepaper, Appendix A (GeForce RTX 5090): 170 SMs, 2407 MHz boost: FP32 104.8; FP16/BF16 Tensor with FP32 accumulate 209.5 dense (419 with FP16 accumulate); TF32 104.8; FP8 with FP32 accumulate 419; 28 Gbps GDDR7 on 512 bits = 1792 GB/s",
    },
];

/// A board name as the table matches it: lower case, `-`/`_` as spaces, single spaces, without a
/// leading "NVIDIA" or "GeForce" ("NVIDIA A100-SXM4-80GB" → "a100 sxm4 80gb").
pub fn normalise(name: &str) -> String {
    let lc = name.to_ascii_lowercase().replace(['-', '_'], " ");
    let words: Vec<&str> = lc.split_whitespace().collect();
    let mut rest: &[&str] = &words;
    for skip in ["nvidia", "geforce"] {
        if rest.first() == Some(&skip) {
            rest = &rest[1..];
        }
    }
    rest.join(" ")
}

/// The row whose NVML name or an alias equals `name` once both are normalised; `None` for any
/// other board (a name that merely contains a row's name does not match: "H200 NVL" is not H200).
pub fn lookup(name: &str) -> Option<&'static Sku> {
    let n = normalise(name);
    SKUS.iter()
        .find(|s| normalise(s.nvml_name) == n || s.aliases.iter().any(|a| normalise(a) == n))
}

/// The names `lookup` knows, for error messages.
pub fn known_names() -> Vec<&'static str> {
    SKUS.iter().map(|s| s.name).collect()
}

/// Properties of a board from its table row alone, for exports that carry no device attributes
/// (`analyze ncu --gpu "RTX 5090"`). NVML's maximum clocks are unknown (`None`); the memory clock
/// is the one the datasheet bandwidth implies.
pub fn props_for_name(name: &str) -> Option<GpuProps> {
    let s = lookup(name)?;
    Some(GpuProps {
        name: s.nvml_name.to_string(),
        compute_capability: Some(s.compute_capability),
        sm_count: Some(s.sm_count),
        max_mem_clock_mhz: Some(s.dram_clock_mhz()),
        memory_bus_width_bits: Some(s.memory_bus_width_bits),
        ..GpuProps::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvml_and_short_names_match_exactly() {
        for (name, row) in [
            ("NVIDIA H100 80GB HBM3", "H100 SXM5"),
            ("H100 SXM", "H100 SXM5"),
            ("NVIDIA H100 PCIe", "H100 PCIe"),
            ("NVIDIA H200", "H200 SXM"),
            ("NVIDIA A100-SXM4-40GB", "A100 SXM4 40GB"),
            ("NVIDIA A100-SXM4-80GB", "A100 SXM4 80GB"),
            ("A100", "A100 SXM4 80GB"),
            ("NVIDIA A100-PCIE-40GB", "A100 PCIe 40GB"),
            ("NVIDIA A100 80GB PCIe", "A100 PCIe 80GB"),
            ("NVIDIA L40S", "L40S"),
            ("NVIDIA GeForce RTX 4090", "RTX 4090"),
            ("rtx-5090", "RTX 5090"),
        ] {
            assert_eq!(lookup(name).map(|s| s.name), Some(row), "{name}");
        }
        for other in [
            "NVIDIA H200 NVL",
            "NVIDIA GeForce RTX 4090 D",
            "NVIDIA L40",
            "Radeon",
        ] {
            assert!(lookup(other).is_none(), "{other}");
        }
    }

    #[test]
    fn datasheet_bandwidth_fits_the_bus() {
        // The implied memory clocks are NVML's maximum memory clocks to within 0.5 %:
        // H100 SXM 2619 MHz, H200 3201 MHz (shared/fixtures/ncu-h200-tch-matmul README), RTX 5090
        // 14001 MHz, RTX 4090 10501 MHz (28 and 21 Gbps), A100 80GB SXM 1593 MHz.
        for (name, nvml_mhz) in [
            ("H100", 2619.0),
            ("H200", 3201.0),
            ("RTX 5090", 14001.0),
            ("RTX 4090", 10501.0),
            ("A100", 1593.0),
        ] {
            let mhz = lookup(name).expect("known").dram_clock_mhz();
            assert!(((mhz - nvml_mhz) / nvml_mhz).abs() < 0.005, "{name}: {mhz}");
        }
    }
}
