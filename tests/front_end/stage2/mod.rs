//! Stage 2 analysis through the public API, on the trimmed fixtures in tests/fixtures/stage2.

use std::path::Path;

use llmprof::nsight::analyze::{analyze_ncu, analyze_nsys};

const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/stage2");

#[test]
fn analyze_entry_points_render_markdown() {
    let md = analyze_nsys(
        &Path::new(FIX).join("nsys/projector_cuda_gpu_kern_sum.csv"),
        false,
    )
    .expect("nsys md");
    assert!(
        md.contains("## projector_cuda_gpu_kern_sum.csv (cuda_gpu_kern_sum)"),
        "{md}"
    );
    assert!(
        md.contains("| 1 | Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm"),
        "{md}"
    );
    let md =
        analyze_ncu(&Path::new(FIX).join("ncu/rtx5090"), false, Some("RTX 5090")).expect("ncu md");
    assert!(md.contains("## Roofline"), "{md}");
    assert!(md.contains("### GPU time by bound"), "{md}");
}

/// Our own capture (reports/gpu-runs.md §4): llmprof stage2 on an H100, ncu 2025.3.1, the decode
/// step's lm_head GEMV. It must read the whole head once: 1280 × 129280 bf16 weights (spec §6).
#[test]
fn own_h100_capture_lm_head_reads_its_weights_once() {
    let dir = Path::new(FIX).join("ncu-h100-llmprof");
    let json = analyze_ncu(&dir, true, None).expect("ncu json");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let kernels = v["kernels"].as_array().unwrap();
    assert_eq!(kernels.len(), 2);
    let head = kernels
        .iter()
        .find(|k| {
            k["kernel_name"]
                .as_str()
                .unwrap()
                .starts_with("nvjet_sm90_tst_384x8")
        })
        .expect("lm_head kernel");
    let weights = 1280.0 * 129_280.0 * 2.0;
    let read = head["dram_read_bytes"].as_f64().unwrap();
    assert!(
        (read / weights - 1.0).abs() < 0.01,
        "read {read} vs head {weights}"
    );
    assert_eq!(head["duration_ns"].as_f64().unwrap(), 120_032.0);
    assert_eq!(head["bound"].as_str().unwrap(), "memory_bound");
    let gemv = kernels
        .iter()
        .find(|k| {
            k["kernel_name"]
                .as_str()
                .unwrap()
                .starts_with("nvjet_sm90_tst_64x8")
        })
        .expect("projection GEMV");
    // A batch-1 GEMV: intensity far below the H100's bf16 ridge (~320 FLOP/byte).
    assert!(gemv["arithmetic_intensity"].as_f64().unwrap() < 20.0);
}
