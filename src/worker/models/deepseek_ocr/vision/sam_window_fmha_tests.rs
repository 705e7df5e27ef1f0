//! Tests of SAM's windowed attention in the Hopper kernel (`model.optim.sam_window_fmha_kernel`,
//! `csrc/kernels/sm90a/sam_window_fmha.cu`).
use super::sam_attention::tests::{
    attention_on, folded_and_kernel_errors_timed, kernels_gpu, rel_err, weights, FOLDED_KERNELS,
};
use super::sam_attention::SamOptim;
use super::sam_window_fmha::WindowBiases;
use crate::ffi::kernels_gemm::{sam_global_attention_on, sam_window_fmha_fits};
use crate::models::layers::basic::Linear;
use tch::{Device, Kind, Tensor};

/// The biases the kernel runs with: the qkv Linear's q bias kept and its k and v biases zero,
/// W_p·b_v added to the projection's bias; with them, attention over zero-padded windows equals
/// attention over windows padded with the Linear's bias (the softmax ignores a shift common to a
/// row, and a row's weights sum to one). Checked on the CPU with one window of 2 real and 2
/// padded tokens.
#[test]
fn moved_biases_make_zero_padding_equal_bias_padding() {
    let r = |s: &[i64]| Tensor::randn(s, (Kind::Double, Device::Cpu));
    let c = 4;
    let qkv = Linear {
        weight: r(&[3 * c, c]),
        bias: Some(r(&[3 * c])),
    };
    let proj = Linear {
        weight: r(&[c, c]),
        bias: Some(r(&[c])),
    };
    let b = WindowBiases::new(&qkv, &proj).unwrap();
    let (qkv_bias, proj_bias) = b.parts();
    let zero_bias = qkv_bias.narrow(0, c, 2 * c);
    assert!(zero_bias.eq(0.0).all().int64_value(&[]) == 1);
    assert!(qkv_bias
        .narrow(0, 0, c)
        .equal(&qkv.bias.as_ref().unwrap().narrow(0, 0, c)));
    let x = Tensor::cat(
        &[
            r(&[2, c]),
            Tensor::zeros([2, c], (Kind::Double, Device::Cpu)),
        ],
        0,
    );
    // SAM: the padded tokens' q, k, v are the Linear's bias.
    let attend = |qkv_out: &Tensor| {
        let (q, k, v) = (
            qkv_out.narrow(1, 0, c),
            qkv_out.narrow(1, c, c),
            qkv_out.narrow(1, 2 * c, c),
        );
        q.matmul(&k.tr()).softmax(-1, Kind::Double).matmul(&v)
    };
    let want = proj.forward(&attend(&qkv.forward(&x).unwrap())).unwrap();
    // The kernel: padded tokens read as zero from the Linear without its k and v biases.
    let moved = x.f_linear(&qkv.weight, Some(&qkv_bias)).unwrap();
    let _ = moved.narrow(0, 2, 2).zero_();
    let got = attend(&moved)
        .f_linear(&proj.weight, Some(&proj_bias))
        .unwrap();
    let real = |t: &Tensor| t.narrow(0, 0, 2);
    let diff = (real(&got) - real(&want)).abs().max().double_value(&[]);
    assert!(diff < 1e-9, "{diff:e}: {got} {want}");
}

/// What the kernel takes: bf16, heads of 64, SAM's 14×14 windows; never a CPU tensor.
#[test]
fn the_kernel_takes_bf16_heads_of_64_in_14_windows_only_on_a_hopper_gpu() {
    let cpu = Tensor::zeros([1, 64, 64, 768], (Kind::BFloat16, Device::Cpu));
    assert!(!sam_window_fmha_fits(&cpu, 12, (14, 14)));
    if !tch::Cuda::is_available() || !sam_global_attention_on(Device::Cuda(0)) {
        return;
    }
    let y =
        |h: i64, w: i64, c: i64, kind: Kind| Tensor::zeros([2, h, w, c], (kind, Device::Cuda(0)));
    assert!(sam_window_fmha_fits(
        &y(64, 64, 768, Kind::BFloat16),
        12,
        (14, 14)
    ));
    assert!(sam_window_fmha_fits(
        &y(30, 17, 128, Kind::BFloat16),
        2,
        (14, 14)
    ));
    assert!(!sam_window_fmha_fits(
        &y(64, 64, 768, Kind::BFloat16),
        12,
        (16, 16)
    ));
    assert!(!sam_window_fmha_fits(
        &y(64, 64, 768, Kind::BFloat16),
        12,
        (64, 64)
    ));
    assert!(!sam_window_fmha_fits(
        &y(64, 64, 768, Kind::Float),
        12,
        (14, 14)
    ));
    assert!(!sam_window_fmha_fits(
        &y(64, 64, 768, Kind::BFloat16),
        24,
        (14, 14)
    ));
}

/// The kernel against the fp32 reference: SAM's grids (64×64, 40×40: windows cut by the grid's
/// edge), a grid a window wide and one smaller than a window, SAM's width and two heads of 64;
/// no further from the reference than the folded path in bf16 (cuDNN over q′·k′), doubled. fp32
/// keeps the folded path, bit for bit.
#[test]
#[ignore = "needs a Hopper GPU and a build with llmprof's kernels: cargo test -- --ignored on the GPU machine"]
fn window_fmha_is_as_accurate_as_the_folded_path_on_a_gpu() {
    let dev = kernels_gpu();
    assert!(
        sam_global_attention_on(dev),
        "not a compute capability 9.0 GPU, or no Hopper kernels"
    );
    let kernel = SamOptim {
        window_fmha: true,
        ..FOLDED_KERNELS
    };
    for (b, h, w, c, heads) in [
        (2i64, 64i64, 64i64, 768i64, 12i64),
        (3, 40, 40, 768, 12),
        (2, 14, 28, 128, 2),
        (1, 9, 23, 128, 2),
    ] {
        let y = Tensor::randn([b, h, w, c], (Kind::Float, dev));
        let yb = y.to_kind(Kind::BFloat16);
        assert!(sam_window_fmha_fits(&yb, heads, (14, 14)), "{h}x{w} c {c}");
        let wts = weights(c, heads, 27);
        let reference = attention_on(&wts, heads, SamOptim::default(), Kind::Float, dev);
        let want = reference.forward_block(&y, 14).unwrap();
        let old = attention_on(&wts, heads, FOLDED_KERNELS, Kind::BFloat16, dev);
        let new = attention_on(&wts, heads, kernel, Kind::BFloat16, dev);
        let got = new.forward_block(&yb, 14).unwrap();
        assert_eq!(got.size(), vec![b, h, w, c]);
        let folded = old.forward_block(&yb, 14).unwrap();
        // The kernel ran, not the folded path (their bf16 roundings differ).
        assert!(!got.equal(&folded), "{h}x{w} c {c}: the folded path ran");
        let (e_old, e_new) = (rel_err(&folded, &want), rel_err(&got, &want));
        assert!(
            e_old > 1e-4 && e_new <= 2.0 * e_old,
            "{h}x{w} c {c}: kernel {e_new:.3e}, folded {e_old:.3e}"
        );
    }
    let wts = weights(128, 2, 27);
    let y = Tensor::randn([1, 20, 20, 128], (Kind::Float, dev));
    let got = attention_on(&wts, 2, kernel, Kind::Float, dev)
        .forward_block(&y, 14)
        .unwrap();
    let want = attention_on(&wts, 2, FOLDED_KERNELS, Kind::Float, dev)
        .forward_block(&y, 14)
        .unwrap();
    assert!(got.equal(&want), "fp32 differs from the folded path");
}

/// The kernel at SAM's batch-8 shapes (8 global views of 64×64 tokens, 48 crops of 40×40),
/// 768 channels, 12 heads: accuracy as above, and the milliseconds per attention block (qkv
/// Linear, attention, projection; the folded path's windows merged back to the grid) of both
/// paths, 20 calls after 3 warm-ups (shown with --nocapture; reports/performance-history.md,
/// session 17).
#[test]
#[ignore = "needs a Hopper GPU and a build with llmprof's kernels: cargo test -- --ignored on the GPU machine"]
fn window_fmha_at_sam_batch_8_shapes_on_a_gpu() {
    let dev = kernels_gpu();
    let wts = weights(768, 12, 27);
    let reference = attention_on(&wts, 12, SamOptim::default(), Kind::Float, dev);
    let kernel = SamOptim {
        window_fmha: true,
        ..FOLDED_KERNELS
    };
    for (b, grid) in [(8i64, 64i64), (48, 40)] {
        let y = Tensor::randn([b, grid, grid, 768], (Kind::Float, dev));
        assert!(
            sam_window_fmha_fits(&y.to_kind(Kind::BFloat16), 12, (14, 14)),
            "b{b} grid {grid}"
        );
        let (e_old, e_new) =
            folded_and_kernel_errors_timed(&wts, kernel, &reference, &y, 14, "windowed attention");
        assert!(
            e_old > 1e-4 && e_new <= 2.0 * e_old,
            "b{b} grid {grid}: kernel {e_new:.3e}, folded {e_old:.3e}"
        );
    }
}
