//! GPU tests of SAM's global attention in the Hopper kernel
//! (`model.optim.sam_global_attention_kernel`, `csrc/kernels/sm90a/sam_global_attention.cu`).
use super::sam_attention::tests::{
    attention_on, folded_and_kernel_errors_timed, kernels_gpu, rel_err, weights, FOLDED_KERNELS,
};
use super::sam_attention::SamOptim;
use crate::ffi::kernels_gemm::{sam_global_attention_fits, sam_global_attention_on};
use tch::{Kind, Tensor};

/// What the kernel takes: bf16 qkv of a square grid it is built for, heads of 64, contiguous;
/// never a CPU tensor.
#[test]
fn the_kernel_takes_bf16_heads_of_64_on_its_grids_only_on_a_hopper_gpu() {
    let cpu = Tensor::zeros([1, 64, 64, 3 * 768], (Kind::BFloat16, tch::Device::Cpu));
    assert!(!sam_global_attention_fits(&cpu, 12));
    if !tch::Cuda::is_available() || !sam_global_attention_on(tch::Device::Cuda(0)) {
        return;
    }
    let dev = tch::Device::Cuda(0);
    let qkv =
        |b: i64, h: i64, w: i64, c3: i64, kind: Kind| Tensor::zeros([b, h, w, c3], (kind, dev));
    for grid in [32, 40, 64, 80] {
        assert!(sam_global_attention_fits(
            &qkv(2, grid, grid, 3 * 768, Kind::BFloat16),
            12
        ));
    }
    assert!(!sam_global_attention_fits(
        &qkv(1, 14, 14, 3 * 768, Kind::BFloat16),
        12
    ));
    assert!(!sam_global_attention_fits(
        &qkv(1, 64, 40, 3 * 768, Kind::BFloat16),
        12
    ));
    assert!(!sam_global_attention_fits(
        &qkv(1, 64, 64, 3 * 768, Kind::Float),
        12
    ));
    assert!(!sam_global_attention_fits(
        &qkv(1, 64, 64, 3 * 768, Kind::BFloat16),
        24
    ));
}

/// The kernel against the fp32 reference on every grid it is built for (one and two grid rows a
/// key tile, a partial last query tile at 40 and 80): SAM's width (768 channels, 12 heads) and
/// two heads of 64, resized tables; no further from the reference than the folded path in bf16
/// (cuDNN over q′·k′), doubled. fp32 keeps the folded path, bit for bit.
#[test]
#[ignore = "needs a Hopper GPU and a build with llmprof's kernels: cargo test -- --ignored on the GPU machine"]
fn global_kernel_is_as_accurate_as_the_folded_path_on_a_gpu() {
    let dev = kernels_gpu();
    assert!(
        sam_global_attention_on(dev),
        "not a compute capability 9.0 GPU, or no Hopper kernels"
    );
    let kernel = SamOptim {
        global_kernel: true,
        ..FOLDED_KERNELS
    };
    for (b, grid, c, heads) in [
        (2i64, 64i64, 768i64, 12i64),
        (3, 40, 768, 12),
        (2, 32, 128, 2),
        (1, 80, 128, 2),
    ] {
        let y = Tensor::randn([b, grid, grid, c], (Kind::Float, dev));
        let yb = y.to_kind(Kind::BFloat16);
        let w = weights(c, heads, 27);
        let reference = attention_on(&w, heads, SamOptim::default(), Kind::Float, dev);
        let want = reference.forward_block(&y, 0).unwrap();
        let old = attention_on(&w, heads, FOLDED_KERNELS, Kind::BFloat16, dev);
        let new = attention_on(&w, heads, kernel, Kind::BFloat16, dev);
        let got = new.forward_block(&yb, 0).unwrap();
        assert_eq!(got.size(), vec![b, grid, grid, c]);
        let e_old = rel_err(&old.forward_block(&yb, 0).unwrap(), &want);
        let e_new = rel_err(&got, &want);
        assert!(
            e_old > 1e-4 && e_new <= 2.0 * e_old,
            "grid {grid} c {c}: kernel {e_new:.3e}, folded {e_old:.3e}"
        );
    }
    let w = weights(128, 2, 27);
    let y = Tensor::randn([1, 32, 32, 128], (Kind::Float, dev));
    let got = attention_on(&w, 2, kernel, Kind::Float, dev)
        .forward_block(&y, 0)
        .unwrap();
    let want = attention_on(&w, 2, FOLDED_KERNELS, Kind::Float, dev)
        .forward_block(&y, 0)
        .unwrap();
    assert!(got.equal(&want), "fp32 differs from the folded path");
}

/// The kernel at SAM's batch-8 shapes (8 global views of 64×64 tokens; 48 crops of 40×40, the
/// last query tile of each half empty), 768 channels, 12 heads, the real table length: as in
/// [`global_kernel_is_as_accurate_as_the_folded_path_on_a_gpu`], no further from the fp32
/// reference than the folded path in bf16, doubled. It also prints the milliseconds per
/// attention block (qkv Linear, attention, projection) of both paths, 20 calls after 3
/// warm-ups (shown with --nocapture; reports/performance-history.md, session 16, quotes them).
#[test]
#[ignore = "needs a Hopper GPU and a build with llmprof's kernels: cargo test -- --ignored on the GPU machine"]
fn global_kernel_at_sam_batch_8_shapes_on_a_gpu() {
    let dev = kernels_gpu();
    let w = weights(768, 12, 127);
    let reference = attention_on(&w, 12, SamOptim::default(), Kind::Float, dev);
    let kernel = SamOptim {
        global_kernel: true,
        ..FOLDED_KERNELS
    };
    for (b, grid) in [(8i64, 64i64), (48, 40)] {
        let y = Tensor::randn([b, grid, grid, 768], (Kind::Float, dev));
        let (e_old, e_new) =
            folded_and_kernel_errors_timed(&w, kernel, &reference, &y, 0, "global attention");
        assert!(
            e_old > 1e-4 && e_new <= 2.0 * e_old,
            "b{b} grid {grid}: kernel {e_new:.3e}, folded {e_old:.3e}"
        );
    }
}
