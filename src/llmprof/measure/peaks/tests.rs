//! Peaks against NVIDIA's datasheet figures, through the production path: the properties NVML and
//! the CUDA runtime report (name, compute capability, SM count, NVML's maximum clocks).

use super::*;
use crate::dtype::Dtype;

fn within(got: f64, want: f64, pct: f64) -> bool {
    ((got - want) / want).abs() * 100.0 <= pct
}

/// What NVML + CUDA report: `max_sm` is NVML's maximum SM clock, which must not matter.
fn nvml(name: &str, cc: (u32, u32), sms: u32, max_sm: f64, mem: f64, bits: u32) -> GpuProps {
    GpuProps {
        name: name.into(),
        compute_capability: Some(cc),
        sm_count: Some(sms),
        max_sm_clock_mhz: Some(max_sm),
        max_mem_clock_mhz: Some(mem),
        memory_bus_width_bits: Some(bits),
        ..GpuProps::default()
    }
}

/// Datasheet dense figures: TFLOP/s for fp32, tf32, bf16 (= fp16), fp8; TB/s for DRAM.
struct Sheet {
    fp32: f64,
    tf32: f64,
    bf16: f64,
    fp8: Option<f64>,
    dram_tb_s: f64,
}

fn check(props: GpuProps, want: Sheet) {
    let name = props.name.clone();
    let (p, source) = resolve(Ok(props), None, "NVML and the CUDA runtime").expect("resolves");
    let t = |v: f64| v / 1e12;
    let ok = |got: f64, want: f64, what: &str| {
        assert!(
            within(got, want, 2.0),
            "{name} {what}: {got:.2} vs datasheet {want}"
        )
    };
    ok(t(p.fp32_flops_per_s), want.fp32, "fp32");
    ok(t(p.tf32_flops_per_s.expect("tf32")), want.tf32, "tf32");
    ok(t(p.bf16_flops_per_s.expect("bf16")), want.bf16, "bf16");
    ok(t(p.fp16_flops_per_s), want.bf16, "fp16");
    ok(t(p.dense_flops_per_s(Dtype::Bf16)), want.bf16, "dense bf16");
    match want.fp8 {
        Some(f) => ok(t(p.fp8_flops_per_s.expect("fp8")), f, "fp8"),
        None => assert_eq!(p.fp8_flops_per_s, None, "{name} has no fp8"),
    }
    ok(t(p.dram_bytes_per_s), want.dram_tb_s, "DRAM");
    assert_eq!(p.sm_clock_source, ClockSource::SkuTable, "{name}");
    assert!(source.contains("datasheet peaks"), "{source}");
}

#[test]
fn hopper_datasheet_figures_from_what_nvml_reports() {
    // H100 SXM5 datasheet / whitepaper Table 3: FP32 66.9, TF32 494.7, BF16 989.4, FP8 1978.9
    // TFLOP/s dense, 3.35 TB/s. NVML reports a 1980 MHz maximum SM clock, 2619 MHz memory.
    let h100 = nvml("NVIDIA H100 80GB HBM3", (9, 0), 132, 1980.0, 2619.0, 5120);
    let sheet = |dram| Sheet {
        fp32: 66.9,
        tf32: 494.7,
        bf16: 989.4,
        fp8: Some(1978.9),
        dram_tb_s: dram,
    };
    check(h100, sheet(3.35));
    // H200 datasheet: the H100 SXM's compute, 4.8 TB/s (NVML: 3201 MHz on 6016 bits).
    check(
        nvml("NVIDIA H200", (9, 0), 132, 1980.0, 3201.0, 6016),
        sheet(4.8),
    );
    // H100 PCIe datasheet: FP32 51.2, TF32 378, BF16 756, FP8 1513 TFLOP/s dense, 2.0 TB/s.
    check(
        nvml("NVIDIA H100 PCIe", (9, 0), 114, 1755.0, 1593.0, 5120),
        Sheet {
            fp32: 51.2,
            tf32: 378.0,
            bf16: 756.0,
            fp8: Some(1513.0),
            dram_tb_s: 2.0,
        },
    );
}

#[test]
fn ampere_and_ada_datasheet_figures() {
    // A100 whitepaper Table 1 / datasheet: FP32 19.5, TF32 156, BF16 312; 1555 / 2039 GB/s.
    let a100 = |name: &str, mem: f64, dram: f64| {
        check(
            nvml(name, (8, 0), 108, 1410.0, mem, 5120),
            Sheet {
                fp32: 19.5,
                tf32: 156.0,
                bf16: 312.0,
                fp8: None,
                dram_tb_s: dram,
            },
        )
    };
    a100("NVIDIA A100-SXM4-40GB", 1215.0, 1.555);
    a100("NVIDIA A100-SXM4-80GB", 1593.0, 2.039);
    // L40S datasheet: FP32 91.6, TF32 183, BF16 362.05 dense (733 is sparse), FP8 733, 864 GB/s.
    check(
        nvml("NVIDIA L40S", (8, 9), 142, 2520.0, 9001.0, 384),
        Sheet {
            fp32: 91.6,
            tf32: 183.0,
            bf16: 362.05,
            fp8: Some(733.0),
            dram_tb_s: 0.864,
        },
    );
}

#[test]
fn geforce_datasheet_figures_ignore_nvmls_maximum_clock() {
    // NVML's maximum SM clock on GeForce boards is 20–25 % above the rated boost (issue #12); the
    // values here stand for that and must not change the peaks.
    // Ada whitepaper Appendix A, RTX 4090: FP32 82.6; BF16 with FP32 accumulate 165.2 dense (330.3
    // with FP16 accumulate); TF32 82.6; FP8 with FP32 accumulate 330.3; 1008 GB/s.
    check(
        nvml("NVIDIA GeForce RTX 4090", (8, 9), 128, 3105.0, 10501.0, 384),
        Sheet {
            fp32: 82.6,
            tf32: 82.6,
            bf16: 165.2,
            fp8: Some(330.3),
            dram_tb_s: 1.008,
        },
    );
    // RTX Blackwell whitepaper Appendix A, RTX 5090: FP32 104.8; BF16 with FP32 accumulate 209.5
    // dense; TF32 104.8; FP8 with FP32 accumulate 419; 1792 GB/s.
    check(
        nvml(
            "NVIDIA GeForce RTX 5090",
            (12, 0),
            170,
            3090.0,
            14001.0,
            512,
        ),
        Sheet {
            fp32: 104.8,
            tf32: 104.8,
            bf16: 209.5,
            fp8: Some(419.0),
            dram_tb_s: 1.792,
        },
    );
}

#[test]
fn names_alone_give_the_same_peaks() {
    for (short, nvml_props) in [
        (
            "H100 SXM",
            nvml("NVIDIA H100 80GB HBM3", (9, 0), 132, 1980.0, 2619.0, 5120),
        ),
        (
            "RTX 5090",
            nvml(
                "NVIDIA GeForce RTX 5090",
                (12, 0),
                170,
                3090.0,
                14001.0,
                512,
            ),
        ),
    ] {
        let by_name = derive(&props_for_name(short).expect("known")).expect("peaks");
        let by_nvml = derive(&nvml_props).expect("peaks");
        assert_eq!(by_name.bf16_flops_per_s, by_nvml.bf16_flops_per_s);
        assert_eq!(by_name.dram_bytes_per_s, by_nvml.dram_bytes_per_s);
    }
}

#[test]
fn peaks_at_a_measured_clock_scale_linearly() {
    let p = derive(&props_for_name("H200").expect("known")).expect("hopper");
    assert_eq!((p.sm_clock_mhz, p.tensor_clock_mhz), (1980.0, 1830.0));
    // ncu measured the H200 GEMM at 1336 MHz (tests/fixtures/stage2/ncu/h200/ncu_raw.csv).
    let at = p.at_sm_clock(1336.0).expect("positive clock");
    let bf16 = at.bf16_flops_per_s.expect("bf16");
    assert!((bf16 - 132.0 * 4096.0 * 1336e6).abs() < 1e3, "{bf16}");
    assert!((at.fp32_flops_per_s - 132.0 * 256.0 * 1336e6).abs() < 1e3);
    assert_eq!(
        (at.sm_clock_mhz, at.tensor_clock_mhz),
        (1336.0, 1336.0),
        "both clocks are the measured one"
    );
    assert_eq!(at.sm_clock_source, ClockSource::Measured);
    assert_eq!(at.dram_bytes_per_s, p.dram_bytes_per_s);
    assert!(p.at_sm_clock(0.0).is_none() && p.at_sm_clock(f64::NAN).is_none());
    // The DRAM roof at ncu's measured 3199.4 MHz on 6016 bits: 4.81 TB/s.
    let d = p.at_dram_clock(3199.4).expect("positive clock");
    assert!(within(d.dram_bytes_per_s, 3199.4e6 * 2.0 * 752.0, 1e-9));
    assert_eq!(d.bf16_flops_per_s, p.bf16_flops_per_s);
    let both = p.at_clocks(Some(1336.0), None);
    assert_eq!(both.dram_clock_source, ClockSource::SkuTable);
    assert_eq!(both.bf16_flops_per_s, at.bf16_flops_per_s);
    // The report builder's window peak: the datasheet peak × window clock ÷ tensor clock.
    let window = p
        .at_sm_clock(1755.0)
        .expect("clock")
        .dense_flops_per_s(Dtype::Bf16);
    assert!(within(window, 989.4e12 * 1755.0 / 1830.0, 0.1), "{window}");
}

#[test]
fn unknown_boards_need_the_cuda_clock_rate_never_nvmls_maximum() {
    let l4 = nvml("NVIDIA L4", (8, 9), 58, 2040.0, 6251.0, 192);
    let err = derive(&l4).expect_err("not in the SKU table");
    assert!(matches!(err, Error::NoRatedClock { .. }), "{err}");
    let (p, source) = resolve(Ok(l4), Some(2040.0), "NVML").expect("CUDA clock rate");
    assert_eq!(p.sm_clock_source, ClockSource::CudaClockRate);
    assert_eq!(p.dram_clock_source, ClockSource::MaxMemoryClock);
    assert!(within(
        p.bf16_flops_per_s.expect("bf16"),
        58.0 * 1024.0 * 2040e6,
        1e-9
    ));
    assert!(
        source.contains("CUDA clock-rate attribute 2040 MHz"),
        "{source}"
    );
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
