//! Peak dense FLOP/s per precision and peak DRAM bandwidth, computed from GPU properties
//! (compute capability, SM count, SM clock, memory clock, bus width) through a per-architecture
//! FLOP-per-clock-per-SM table. An unknown architecture is an error: no fallback guess.
//!
//! Clock: the peaks use `GpuProps::max_sm_clock_mhz` as given. NVML/ncu report the maximum SM
//! clock (1980 MHz on H100 SXM and H200), which gives 1070 TFLOP/s dense BF16 on 132 SMs; NVIDIA's
//! H100 SXM datasheet figure of 989.4 TFLOP/s is the same formula at 1830 MHz. Callers that want the
//! datasheet number pass that clock; reports print the clock used (`Peaks::sm_clock_mhz`).

use serde::Serialize;

pub use super::gpu::GpuProps;

/// GPU architecture (chip family), from the compute capability.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Arch {
    Volta,
    Turing,
    AmpereGa100,
    AmpereGa10x,
    Ada,
    Hopper,
    BlackwellGb100,
    BlackwellGb20x,
}

/// Why peaks could not be derived.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    #[error("no peak table for compute capability {major}.{minor} ({name}); pass peak_tflops/peak_bandwidth_gbs overrides")]
    UnknownArchitecture {
        name: String,
        major: u32,
        minor: u32,
    },
    #[error("GPU properties of {name} are incomplete: {what} is missing or zero")]
    Incomplete { name: String, what: &'static str },
}

/// Dense FLOP per clock per SM. Tensor rates are with FP32 accumulate on full-rate parts
/// (data-centre and professional boards); `geforce_half_rate` halves them on GeForce boards.
struct PerSm {
    fp32: f64,
    tensor_fp16: f64,
    tensor_bf16: Option<f64>,
    tensor_tf32: Option<f64>,
    tensor_fp8: Option<f64>,
    geforce_half_rate: bool,
    source: &'static str,
}

// Each entry: FLOP/clk/SM = the cited TFLOP/s ÷ (SMs × boost clock), rounded to the power of two
// it equals to within 1 %.
const VOLTA: PerSm = PerSm {
    fp32: 128.0,
    tensor_fp16: 1024.0,
    tensor_bf16: None,
    tensor_tf32: None,
    tensor_fp8: None,
    geforce_half_rate: false,
    source: "NVIDIA Tesla V100 GPU Architecture whitepaper (WP-08608-001), Table 1: V100 SXM2, 80 SMs, 1530 MHz: 15.7 FP32 TFLOPS, 125 Tensor TFLOPS",
};
const TURING: PerSm = PerSm {
    fp32: 128.0,
    tensor_fp16: 1024.0,
    tensor_bf16: None,
    tensor_tf32: None,
    tensor_fp8: None,
    geforce_half_rate: true,
    source: "NVIDIA Turing GPU Architecture whitepaper (WP-09183-001), Appendix A, GeForce RTX 2080 Ti FE table: 68 SMs, 1635 MHz: 14.2 FP32 TFLOPS, FP16 Tensor 113.8 TFLOPS with FP16 accumulate, 56.9 with FP32 accumulate",
};
const GA100: PerSm = PerSm {
    fp32: 128.0,
    tensor_fp16: 2048.0,
    tensor_bf16: Some(2048.0),
    tensor_tf32: Some(1024.0),
    tensor_fp8: None,
    geforce_half_rate: false,
    source: "NVIDIA A100 Tensor Core GPU Architecture whitepaper, Table 1 (A100 performance specs): 108 SMs, 1410 MHz: FP32 19.5, TF32 156, FP16/BF16 312 TFLOPS dense",
};
const GA10X: PerSm = PerSm {
    fp32: 256.0,
    tensor_fp16: 1024.0,
    tensor_bf16: Some(1024.0),
    tensor_tf32: Some(512.0),
    tensor_fp8: None,
    geforce_half_rate: true,
    source: "NVIDIA Ampere GA102 GPU Architecture whitepaper, GeForce RTX 3090 spec table: 82 SMs, 1695 MHz: FP32 35.6 TFLOPS, FP16 Tensor 142 TFLOPS with FP16 accumulate, 71 with FP32 accumulate, TF32 35.6",
};
const ADA: PerSm = PerSm {
    fp32: 256.0,
    tensor_fp16: 1024.0,
    tensor_bf16: Some(1024.0),
    tensor_tf32: Some(512.0),
    tensor_fp8: Some(2048.0),
    geforce_half_rate: true,
    source: "NVIDIA Ada GPU Architecture whitepaper, Appendix A, GeForce RTX 4090 table: 128 SMs, 2520 MHz: FP32 82.6 TFLOPS, FP16 Tensor 330.3 with FP16 accumulate / 165.2 with FP32 accumulate, TF32 82.6, FP8 330.3 with FP32 accumulate",
};
const HOPPER: PerSm = PerSm {
    fp32: 256.0,
    tensor_fp16: 4096.0,
    tensor_bf16: Some(4096.0),
    tensor_tf32: Some(2048.0),
    tensor_fp8: Some(8192.0),
    geforce_half_rate: false,
    source: "NVIDIA H100 Tensor Core GPU Architecture whitepaper, Table 3 (A100 vs H100): H100 SXM5, 132 SMs: FP16/BF16 989.4, TF32 494.7, FP8 1978.9 TFLOPS dense (at 1830 MHz); H100 datasheet FP32 67 TFLOPS (at 1980 MHz)",
};
const GB100: PerSm = PerSm {
    fp32: 256.0,
    tensor_fp16: 8192.0,
    tensor_bf16: Some(8192.0),
    tensor_tf32: Some(4096.0),
    tensor_fp8: Some(16384.0),
    geforce_half_rate: false,
    source: "NVIDIA Blackwell Architecture Technical Brief, HGX B200 per-GPU table: 148 SMs: FP16/BF16 2.25 PFLOPS, TF32 1.1 PFLOPS, FP8 4.5 PFLOPS dense",
};
const GB20X: PerSm = PerSm {
    fp32: 256.0,
    tensor_fp16: 1024.0,
    tensor_bf16: Some(1024.0),
    tensor_tf32: Some(512.0),
    tensor_fp8: Some(2048.0),
    // Not halved on GeForce: shared/fixtures/llm-perf-opt-rtx5090 kernel_0005 ran 17.67 G bf16→fp32
    // tensor ops in 165.09 us (107 TFLOP/s) at ~2.0 GHz with sm__throughput 30.7 %, which fits
    // only the full 1024 FLOP/clk/SM rate (31 % of 348 TFLOP/s), not half of it (61 %).
    geforce_half_rate: false,
    source: "NVIDIA RTX Blackwell GPU Architecture whitepaper, Appendix A, GeForce RTX 5090 table: 170 SMs, 2407 MHz: FP32 104.8 TFLOPS, FP16 Tensor 419 TFLOPS dense, FP8 838 dense; FP32-accumulate at the same rate per the RTX 5090 ncu measurements in shared/fixtures/llm-perf-opt-rtx5090",
};

impl Arch {
    /// Architecture for a compute capability; `None` when we have no table for it.
    pub fn from_cc(major: u32, minor: u32) -> Option<Arch> {
        match (major, minor) {
            (7, 0) | (7, 2) => Some(Arch::Volta),
            (7, 5) => Some(Arch::Turing),
            (8, 0) => Some(Arch::AmpereGa100),
            (8, 6) | (8, 7) => Some(Arch::AmpereGa10x),
            (8, 9) => Some(Arch::Ada),
            (9, 0) => Some(Arch::Hopper),
            (10, 0) => Some(Arch::BlackwellGb100),
            (12, 0) => Some(Arch::BlackwellGb20x),
            _ => None,
        }
    }

    fn per_sm(self) -> &'static PerSm {
        match self {
            Arch::Volta => &VOLTA,
            Arch::Turing => &TURING,
            Arch::AmpereGa100 => &GA100,
            Arch::AmpereGa10x => &GA10X,
            Arch::Ada => &ADA,
            Arch::Hopper => &HOPPER,
            Arch::BlackwellGb100 => &GB100,
            Arch::BlackwellGb20x => &GB20X,
        }
    }
}

/// Peak rates of one GPU, all dense (no 2:4 sparsity), in FLOP/s and bytes/s.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Peaks {
    pub gpu_name: String,
    pub arch: Arch,
    /// The SM clock the FLOP/s figures use.
    pub sm_clock_mhz: f64,
    pub fp32_flops_per_s: f64,
    pub tf32_flops_per_s: Option<f64>,
    /// Tensor cores, FP16 inputs, FP32 accumulate.
    pub fp16_flops_per_s: f64,
    /// Tensor cores, BF16 inputs, FP32 accumulate.
    pub bf16_flops_per_s: Option<f64>,
    pub fp8_flops_per_s: Option<f64>,
    pub dram_bytes_per_s: f64,
    /// True when the board is a GeForce, whose FP32-accumulate tensor rate is half the full rate.
    pub geforce_half_rate: bool,
    /// The NVIDIA document the per-SM rates come from.
    pub source: String,
}

/// GeForce boards run FP32-accumulate tensor math at half rate: NVML names contain "GeForce";
/// short names like "RTX 5090" or "RTX 4090 D" count too, while "RTX 6000 Ada Generation",
/// "RTX A6000" and "RTX PRO 6000" do not.
pub fn is_geforce(name: &str) -> bool {
    let lc = name.to_ascii_lowercase();
    if lc.contains("geforce") {
        return true;
    }
    let short = lc.trim_start_matches("nvidia ").trim();
    regex::Regex::new(r"^rtx \d{4}( ti| super| d)*$")
        .expect("static regex is valid")
        .is_match(short)
}

/// Peak DRAM bandwidth: memory clock × 2 (double data rate) × bus width in bytes.
pub fn dram_bytes_per_s(max_mem_clock_mhz: f64, bus_width_bits: u32) -> f64 {
    max_mem_clock_mhz * 1e6 * 2.0 * f64::from(bus_width_bits) / 8.0
}

/// Derives peaks from `props`; errors for an architecture not in the table.
pub fn derive(props: &GpuProps) -> Result<Peaks, Error> {
    let incomplete = |what: &'static str| Error::Incomplete {
        name: props.name.clone(),
        what,
    };
    let (cc_major, cc_minor) = props
        .compute_capability
        .ok_or_else(|| incomplete("compute_capability"))?;
    let arch = Arch::from_cc(cc_major, cc_minor).ok_or_else(|| Error::UnknownArchitecture {
        name: props.name.clone(),
        major: cc_major,
        minor: cc_minor,
    })?;
    let positive = |what: &'static str, v: Option<f64>| -> Result<f64, Error> {
        v.filter(|x| *x > 0.0).ok_or_else(|| incomplete(what))
    };
    let sm_count = positive("sm_count", props.sm_count.map(f64::from))?;
    let sm_clock_mhz = positive("max_sm_clock_mhz", props.max_sm_clock_mhz)?;
    let mem_clock_mhz = positive("max_mem_clock_mhz", props.max_mem_clock_mhz)?;
    let bus_bits = positive(
        "memory_bus_width_bits",
        props.memory_bus_width_bits.map(f64::from),
    )?;
    let t = arch.per_sm();
    let half = t.geforce_half_rate && is_geforce(&props.name);
    let tensor_scale = if half { 0.5 } else { 1.0 };
    let per_s = sm_count * sm_clock_mhz * 1e6;
    Ok(Peaks {
        gpu_name: props.name.clone(),
        arch,
        sm_clock_mhz,
        fp32_flops_per_s: t.fp32 * per_s,
        tf32_flops_per_s: t.tensor_tf32.map(|r| r * per_s * tensor_scale),
        fp16_flops_per_s: t.tensor_fp16 * per_s * tensor_scale,
        bf16_flops_per_s: t.tensor_bf16.map(|r| r * per_s * tensor_scale),
        fp8_flops_per_s: t.tensor_fp8.map(|r| r * per_s * tensor_scale),
        dram_bytes_per_s: dram_bytes_per_s(mem_clock_mhz, bus_bits as u32),
        geforce_half_rate: half,
        source: t.source.to_string(),
    })
}

/// The one peaks resolver (stage 1, stage 2, `analyze ncu`): the peaks of the GPU `props`
/// describe, with where they came from (`origin`: "NVML and CUDA", "ncu device attributes", ...),
/// or why there are none.
pub fn resolve(props: Result<GpuProps, String>, origin: &str) -> Result<(Peaks, String), String> {
    let props = props?;
    let peaks = derive(&props).map_err(|e| e.to_string())?;
    let source = format!(
        "derived from {origin}: {} SMs at {:.0} MHz, memory clock and bus width ({})",
        props.sm_count.unwrap_or(0),
        peaks.sm_clock_mhz,
        peaks.source
    );
    Ok((peaks, source))
}

impl Peaks {
    /// Dense FLOP/s for tensors of `dtype` (bf16 falls back to the fp16 rate on parts without a
    /// separate bf16 figure).
    pub fn dense_flops_per_s(&self, dtype: crate::dtype::Dtype) -> f64 {
        use crate::dtype::Dtype;
        match dtype {
            Dtype::Bf16 => self.bf16_flops_per_s.unwrap_or(self.fp16_flops_per_s),
            Dtype::F16 => self.fp16_flops_per_s,
            Dtype::F32 => self.fp32_flops_per_s,
        }
    }
}

/// Properties of a few boards by name ("H100 SXM", "H200", "RTX 5090", "RTX 4090", "A100"), for
/// analysing exports that carry no device attributes. `None` for any other name.
pub fn props_for_name(name: &str) -> Option<GpuProps> {
    let lc = name.to_ascii_lowercase().replace(['-', '_'], " ");
    let lc = lc
        .trim_start_matches("nvidia ")
        .trim_start_matches("geforce ")
        .trim();
    let props =
        |name: &str, cc: (u32, u32), sms: u32, sm_mhz: f64, mem_mhz: f64, bits: u32| GpuProps {
            name: name.to_string(),
            compute_capability: Some(cc),
            sm_count: Some(sms),
            max_sm_clock_mhz: Some(sm_mhz),
            max_mem_clock_mhz: Some(mem_mhz),
            memory_bus_width_bits: Some(bits),
            ..GpuProps::default()
        };
    // H100/H200: NVML on the lent machines (shared/fixtures/ncu-h200-tch-matmul README and
    // ncu_raw.csv device__attribute_*); RTX 5090 / 4090: NVIDIA spec pages (boost clock, 28 / 21
    // Gbps memory on 512 / 384 bits); A100 SXM4 80GB: A100 datasheet (1410 MHz, 2039 GB/s).
    let found = match lc {
        "h100" | "h100 sxm" | "h100 sxm5" | "h100 80gb hbm3" => {
            props("NVIDIA H100 80GB HBM3", (9, 0), 132, 1980.0, 2619.0, 5120)
        }
        "h200" | "h200 sxm" => props("NVIDIA H200", (9, 0), 132, 1980.0, 3201.0, 6016),
        "rtx 5090" => props(
            "NVIDIA GeForce RTX 5090",
            (12, 0),
            170,
            2407.0,
            14001.0,
            512,
        ),
        "rtx 4090" => props("NVIDIA GeForce RTX 4090", (8, 9), 128, 2520.0, 10501.0, 384),
        "a100" | "a100 sxm4 80gb" | "a100 80gb" => {
            props("NVIDIA A100-SXM4-80GB", (8, 0), 108, 1410.0, 1593.0, 5120)
        }
        _ => return None,
    };
    Some(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn within(got: f64, want: f64, pct: f64) -> bool {
        ((got - want) / want).abs() * 100.0 <= pct
    }

    #[test]
    fn h100_sxm_matches_datasheet() {
        // Datasheet: 989.4 TFLOP/s dense BF16 at 1830 MHz; 3.35 TB/s; 67 TFLOP/s FP32 at 1980 MHz.
        let mut props = props_for_name("H100 SXM").expect("known");
        props.max_sm_clock_mhz = Some(1830.0);
        let p = derive(&props).expect("hopper");
        assert_eq!(p.arch, Arch::Hopper);
        assert!(
            within(p.bf16_flops_per_s.expect("bf16"), 989.4e12, 2.0),
            "{}",
            p.bf16_flops_per_s.unwrap_or(0.0)
        );
        assert!(within(p.tf32_flops_per_s.expect("tf32"), 494.7e12, 2.0));
        assert!(within(p.fp8_flops_per_s.expect("fp8"), 1978.9e12, 2.0));
        assert!(
            within(p.dram_bytes_per_s, 3.35e12, 2.0),
            "{}",
            p.dram_bytes_per_s
        );
        let at_max = derive(&props_for_name("H100 SXM").expect("known")).expect("hopper");
        assert_eq!(at_max.sm_clock_mhz, 1980.0);
        assert!(within(at_max.fp32_flops_per_s, 67e12, 2.0));
        assert!(within(
            at_max.bf16_flops_per_s.expect("bf16"),
            1070.5e12,
            0.1
        ));
    }

    #[test]
    fn h200_matches_datasheet() {
        // H200 datasheet: 4.8 TB/s, 989 TFLOP/s dense BF16 (same SMs and clocks as H100 SXM).
        let mut props = props_for_name("H200").expect("known");
        let p = derive(&props).expect("hopper");
        assert!(
            within(p.dram_bytes_per_s, 4.8e12, 2.0),
            "{}",
            p.dram_bytes_per_s
        );
        props.max_sm_clock_mhz = Some(1830.0);
        assert!(within(
            derive(&props)
                .expect("hopper")
                .bf16_flops_per_s
                .expect("bf16"),
            989e12,
            2.0
        ));
    }

    #[test]
    fn other_boards_match_their_tables() {
        let p = derive(&props_for_name("RTX 4090").expect("known")).expect("ada");
        assert!(p.geforce_half_rate);
        assert!(within(p.fp32_flops_per_s, 82.6e12, 1.0));
        assert!(within(p.bf16_flops_per_s.expect("bf16"), 165.2e12, 1.0));
        assert!(within(p.dram_bytes_per_s, 1008e9, 1.0));
        let p = derive(&props_for_name("RTX 5090").expect("known")).expect("gb20x");
        assert!(!p.geforce_half_rate);
        assert!(within(p.fp32_flops_per_s, 104.8e12, 1.0));
        assert!(within(p.bf16_flops_per_s.expect("bf16"), 419e12, 1.0));
        assert!(within(p.dram_bytes_per_s, 1792e9, 1.0));
        let p = derive(&props_for_name("A100").expect("known")).expect("ga100");
        assert!(within(p.bf16_flops_per_s.expect("bf16"), 312e12, 1.0));
        assert!(within(p.fp32_flops_per_s, 19.5e12, 1.0));
        assert!(within(p.dram_bytes_per_s, 2039e9, 1.0));
    }

    #[test]
    fn unknown_architecture_is_an_error() {
        let mut props = props_for_name("H200").expect("known");
        props.compute_capability = Some((6, 1));
        let err = derive(&props).expect_err("pascal not in table");
        assert!(matches!(
            err,
            Error::UnknownArchitecture {
                major: 6,
                minor: 1,
                ..
            }
        ));
        assert!(props_for_name("Radeon").is_none());
    }

    #[test]
    fn geforce_names() {
        for n in [
            "NVIDIA GeForce RTX 5090",
            "RTX 5090",
            "RTX 4090 D",
            "rtx 3080 ti",
        ] {
            assert!(is_geforce(n), "{n}");
        }
        for n in [
            "NVIDIA RTX 6000 Ada Generation",
            "NVIDIA RTX A6000",
            "NVIDIA RTX PRO 6000 Blackwell",
            "NVIDIA H100",
        ] {
            assert!(!is_geforce(n), "{n}");
        }
    }
}
