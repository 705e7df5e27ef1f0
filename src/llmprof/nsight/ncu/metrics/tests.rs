//! Roofline inputs derived from the recorded ncu exports (tests/fixtures/stage2/ncu).
use super::*;
use crate::nsight::ncu::parse::{parse, KernelRecord};

const DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/fixtures/stage2/ncu"
);

fn merged(dir: &str) -> KernelRecord {
    let mut rec: Option<KernelRecord> = None;
    for f in [
        "ncu.metrics.csv",
        "ncu.details.csv",
        "ncu.section_SpeedOfLight_RooflineChart.csv",
    ] {
        let file = std::fs::File::open(format!("{DIR}/{dir}/{f}")).expect("fixture");
        let (_, mut recs) = parse(file).expect("parses");
        let r = recs.remove(0);
        match rec.as_mut() {
            Some(a) => a.merge(r),
            None => rec = Some(r),
        }
    }
    rec.expect("three files")
}

#[test]
fn gemv_is_about_one_flop_per_byte() {
    // kernel_0001 (cuBLAS bf16 GEMV, fp32 FFMA, no tensor ops): 2.33 Mbyte read, 0 written;
    // FFMA 83.00 + FADD 2.07 inst/cycle at 2.14 GHz over 6.46 us ≈ 2.3 MFLOP ⇒ ≈ 1 FLOP/byte.
    let m = derive(&merged("rtx5090/kernel_0001_gemv"));
    assert_eq!(m.dram_bytes, Some(2.33e6));
    assert_eq!(m.flops.get(&Precision::TensorBf16), Some(&0.0));
    assert_eq!(m.dominant_precision, Some(Precision::Fp32));
    assert_eq!(m.sm_throughput_pct, Some(9.61));
    assert_eq!(m.dram_throughput_pct, Some(20.52));
    assert_eq!(m.achieved_occupancy_pct, Some(11.68));
    let ai = m.arithmetic_intensity.expect("intensity");
    assert!((0.5..2.0).contains(&ai), "GEMV intensity {ai}");
}

#[test]
fn gemm_is_hundreds_of_flops_per_byte() {
    // kernel_0003 (CUTLASS bf16 tensor-op GEMM): 603,979,776 bf16→fp32 tensor ops, 2.64 Mbyte read.
    let m = derive(&merged("rtx5090/kernel_0003_gemm"));
    assert_eq!(m.flops.get(&Precision::TensorBf16), Some(&603_979_776.0));
    assert_eq!(m.dominant_precision, Some(Precision::TensorBf16));
    let ai = m.arithmetic_intensity.expect("intensity");
    assert!((100.0..1000.0).contains(&ai), "GEMM intensity {ai}");
    // kernel_0005: 17,666,408,448 tensor ops over 11.14 Mbyte read + 512 byte written.
    let m = derive(&merged("rtx5090/kernel_0005_gemm"));
    assert_eq!(m.dram_bytes, Some(11.14e6 + 512.0));
    let ai = m.arithmetic_intensity.expect("intensity");
    assert!(ai > 1000.0, "large GEMM intensity {ai}");
    // No raw clock counters in these exports: SpeedOfLight's SM / DRAM Frequency.
    assert_eq!(m.sm_clock_hz, Some(2.00e9));
    assert_eq!(m.dram_clock_hz, Some(13.78e9));
}

#[test]
fn metrics_csv_alone_is_a_lower_bound() {
    let file = std::fs::File::open(format!("{DIR}/rtx5090/kernel_0003_gemm/ncu.metrics.csv"))
        .expect("fixture");
    let (_, recs) = parse(file).expect("parses");
    let m = derive(&recs[0]);
    assert_eq!(m.total_flops, Some(603_979_776.0));
    assert!(
        m.missing["flops"].contains("lower bound"),
        "{:?}",
        m.missing
    );
    assert_eq!(m.achieved_occupancy_pct, None);
}

#[test]
fn h200_raw_tensor_busy_without_tensor_counters() {
    // ncu_raw.csv: bf16 8192³ nvjet GEMM, tensor pipe 93.32 % busy, no sm__ops_path_tensor_*.
    let file = std::fs::File::open(format!("{DIR}/h200/ncu_raw.csv")).expect("fixture");
    let (_, recs) = parse(file).expect("parses");
    let m = derive(&recs[0]);
    assert_eq!(m.duration_ns, Some(1_656_768.0));
    assert_eq!(m.tensor_pipe_pct, Some(93.32));
    assert_eq!(m.sm_throughput_pct, Some(93.32));
    assert_eq!(m.dram_throughput_pct, Some(17.61));
    assert_eq!(m.achieved_occupancy_pct, Some(14.78));
    assert_eq!(m.flops.get(&Precision::Fp32), Some(&0.0));
    assert_eq!(m.total_flops, None);
    assert_eq!(m.arithmetic_intensity, None);
    assert!(
        m.missing["flops"].contains("tensor pipe 93.3 % busy"),
        "{:?}",
        m.missing
    );
    // 847,457,024,761.46 byte/s × 1,656,768 ns
    let bytes = m.dram_bytes.expect("from rate × duration");
    assert!((bytes - 847_457_024_761.46 * 1_656_768e-9).abs() < 1.0);
    assert_eq!(m.dram_read_bytes, None);
    assert_eq!(m.nvtx_range.as_deref(), Some("matmul-loop"));
    // ncu locked the clocks: the kernel ran at 1336 MHz, not NVML's 1980 MHz maximum.
    assert_eq!(m.sm_clock_hz, Some(1_335_883_058.48));
    assert_eq!(m.dram_clock_hz, Some(3_199_427_640.64));
}

/// Every ncu CSV under the fixtures, recursively.
fn fixture_csvs() -> Vec<std::path::PathBuf> {
    let root = std::path::Path::new(DIR).join("..");
    crate::nsight::csv_input::csv_files(&root).expect("fixtures")
}

#[test]
fn the_analysis_filter_keeps_everything_derive_reads() {
    use crate::nsight::ncu::analysis::{cuda_clock_rate_mhz, gpu_props_from_record};
    use crate::nsight::ncu::parse::parse_with;
    let mut compared = 0;
    for path in fixture_csvs() {
        let Ok((_, full)) = parse(std::fs::File::open(&path).expect("fixture")) else {
            continue; // nsys
        };
        let (_, kept) =
            parse_with(std::fs::File::open(&path).expect("fixture"), is_used).expect("parses");
        assert_eq!(full.len(), kept.len(), "{}", path.display());
        for (f, k) in full.iter().zip(&kept) {
            assert_eq!(derive(f), derive(k), "{}", path.display());
            assert_eq!(
                gpu_props_from_record(f).map(|p| format!("{p:?}")),
                gpu_props_from_record(k).map(|p| format!("{p:?}")),
                "{}",
                path.display()
            );
            assert_eq!(cuda_clock_rate_mhz(f), cuda_clock_rate_mhz(k));
            assert!(k.metrics.len() <= 60, "{} kept", k.metrics.len());
            compared += 1;
        }
    }
    assert!(compared >= 10, "{compared}");
}
