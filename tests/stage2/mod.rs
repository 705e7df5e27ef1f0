//! Stage 2 analysis through the public API, on the trimmed fixtures in tests/fixtures/stage2.

use std::path::Path;

use llmprof::vendor::analyze::{analyze_ncu, analyze_nsys};

const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/stage2");

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
        md.contains("| 1 | cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm"),
        "{md}"
    );
    let md =
        analyze_ncu(&Path::new(FIX).join("ncu/rtx5090"), false, Some("RTX 5090")).expect("ncu md");
    assert!(md.contains("## Roofline"), "{md}");
    assert!(md.contains("### GPU time by bound"), "{md}");
}
