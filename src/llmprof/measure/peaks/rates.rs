//! Dense FLOP per clock per SM of each GPU architecture (chip family), the factor that turns an SM
//! count and an SM clock into peak FLOP/s. Each entry cites the NVIDIA document whose figures it
//! reproduces; the clocks those figures use live in the per-SKU table (`peaks::sku`).

use serde::Serialize;

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

/// Dense FLOP per clock per SM. Tensor rates are with FP32 accumulate on full-rate parts
/// (data-centre and professional boards); `geforce_half_rate` halves every tensor rate with FP32
/// accumulate (FP16, BF16, TF32, FP8) on GeForce boards, as NVIDIA's GeForce tables list them.
pub struct PerSm {
    pub fp32: f64,
    pub tensor_fp16: f64,
    pub tensor_bf16: Option<f64>,
    pub tensor_tf32: Option<f64>,
    pub tensor_fp8: Option<f64>,
    pub geforce_half_rate: bool,
    pub source: &'static str,
}

// Each entry: FLOP/clk/SM = the cited TFLOP/s ÷ (SMs × the clock of the figure), rounded to the
// power of two it equals to within 1 %.
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
    source: "NVIDIA Ada GPU Architecture whitepaper, Appendix A, GeForce RTX 4090 table: 128 SMs, 2520 MHz: FP32 82.6 TFLOPS, FP16 Tensor 330.3 with FP16 accumulate / 165.2 with FP32 accumulate, TF32 82.6, FP8 330.3 with FP32 accumulate; NVIDIA L40S datasheet (full rate): 142 SMs, 2520 MHz: TF32 183, FP8 733 dense",
};
const HOPPER: PerSm = PerSm {
    fp32: 256.0,
    tensor_fp16: 4096.0,
    tensor_bf16: Some(4096.0),
    tensor_tf32: Some(2048.0),
    tensor_fp8: Some(8192.0),
    geforce_half_rate: false,
    source: "NVIDIA H100 Tensor Core GPU Architecture whitepaper, Table 3 (A100 vs H100): H100 SXM5, 132 SMs: FP32 66.9 (at 1980 MHz); FP16/BF16 989.4, TF32 494.7, FP8 1978.9 TFLOPS dense (at 1830 MHz)",
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
    // GeForce GB20x halves FP32-accumulate tensor rates and TF32 in NVIDIA's tables, as Ada does.
    // (mma.sync microbenchmarks on zeros measure FP32-accumulate BF16 at ~1.77× the listed rate,
    // main-horse.github.io/posts/5090-mm-perf; the table keeps NVIDIA's figures, the convention.)
    geforce_half_rate: true,
    source: "NVIDIA RTX Blackwell GPU Architecture whitepaper, Appendix A, GeForce RTX 5090 table: 170 SMs, 2407 MHz: FP32 104.8 TFLOPS; FP16/BF16 Tensor with FP32 accumulate 209.5 dense (419 with FP16 accumulate); TF32 104.8; FP8 with FP32 accumulate 419 dense",
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

    /// This architecture's per-SM rates.
    pub fn per_sm(self) -> &'static PerSm {
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
