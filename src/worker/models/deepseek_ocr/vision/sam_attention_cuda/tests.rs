//! GPU tests of SAM attention's CUDA-kernel path ([`super`]): the kernels against the
//! reference, k′ buffer reuse, and windowed outputs read in place.
use super::super::sam_attention::tests::{attention_on, kernels_gpu, rel_err, weights};
use super::super::sam_attention::SamOptim;
use tch::{Device, Kind, Tensor};

/// The kernels against the libtorch formulation of the folded bias and the reference, on the
/// GPU, with the relative-position products from batched GEMMs and from one GEMM: a 9×7 grid
/// (windows of 4 need padding both ways), global layers with resized tables, heads of 64
/// channels (SAM's; 16-byte vectors) and of 12 (√d not a power of two; single elements in
/// bf16). fp32 with TF32 off within 1e-5; bf16 no further from fp32 than libtorch's bf16
/// folded-bias formulation, doubled.
#[test]
#[ignore = "needs a CUDA GPU and a build with llmprof's kernels: cargo test -- --ignored on the GPU machine"]
fn kernels_equal_the_reference_on_a_gpu() {
    let dev = kernels_gpu();
    let libtorch_fused = SamOptim {
        fused_rel_pos: true,
        fused_windows: true,
        ..SamOptim::default()
    };
    for (c, heads) in [(128, 2), (24, 2)] {
        let y = Tensor::randn([2, 9, 7, c], (Kind::Float, dev));
        let yb = y.to_kind(Kind::BFloat16);
        let w = weights(c, heads, 13);
        let reference = attention_on(&w, heads, SamOptim::default(), Kind::Float, dev);
        let bf16_libtorch = attention_on(&w, heads, libtorch_fused, Kind::BFloat16, dev);
        for (rel_pos_gemm, proj_in_windows) in [(false, false), (true, false), (true, true)] {
            let kernels = SamOptim {
                cuda_kernels: true,
                rel_pos_gemm,
                proj_in_windows,
                // The windowed projection needs it (forward_block merges its windows).
                add_layer_norm_kernel: proj_in_windows,
                ..libtorch_fused
            };
            let fast = attention_on(&w, heads, kernels, Kind::Float, dev);
            let fast_bf16 = attention_on(&w, heads, kernels, Kind::BFloat16, dev);
            for window in [0, 4] {
                let want = reference.forward_block(&y, window).unwrap();
                let got = fast.forward_block(&y, window).unwrap();
                assert_eq!(got.size(), vec![2, 9, 7, c]);
                let e = rel_err(&got, &want);
                assert!(
                    e < 1e-5,
                    "c {c} window {window} one GEMM {rel_pos_gemm}: {e}"
                );
                let e_lib = rel_err(&bf16_libtorch.forward_block(&yb, window).unwrap(), &want);
                let e_fast = rel_err(&fast_bf16.forward_block(&yb, window).unwrap(), &want);
                assert!(
                    e_lib > 1e-4 && e_fast <= 2.0 * e_lib,
                    "bf16, c {c} window {window} one GEMM {rel_pos_gemm}: {e_fast} vs libtorch {e_lib}"
                );
            }
        }
    }
}

/// Layers that reuse a pass's k′ buffer (only k written, the one-hot columns left from the
/// first layer of the shape) give exactly what a fresh pack gives: two attentions with
/// different weights after each other on one buffer, global and windowed, bf16 with heads
/// of 64 (16-byte vectors) and of 12 (single elements) and fp32; one buffer per shape is
/// kept.
#[test]
#[ignore = "needs a CUDA GPU and a build with llmprof's kernels: cargo test -- --ignored on the GPU machine"]
fn reused_key_buffers_equal_fresh_packs_on_a_gpu() {
    use super::KeyBuffers;
    assert!(tch::Cuda::is_available(), "no CUDA device");
    let dev = Device::Cuda(0);
    let kernels = SamOptim {
        cuda_kernels: true,
        fused_rel_pos: true,
        fused_windows: true,
        rel_pos_gemm: true,
        ..SamOptim::default()
    };
    for (kind, c, heads) in [
        (Kind::BFloat16, 128i64, 2i64),
        (Kind::BFloat16, 24, 2),
        (Kind::Float, 24, 2),
    ] {
        let y = Tensor::randn([2, 9, 7, c], (kind, dev));
        let layers = [
            attention_on(&weights(c, heads, 13), heads, kernels, kind, dev),
            attention_on(&weights(c, heads, 13), heads, kernels, kind, dev),
        ];
        let keys = KeyBuffers::default();
        for window in [0, 4, 0, 4] {
            for layer in &layers {
                let got = layer
                    .forward_block_out(&y, window, Some(&keys))
                    .unwrap()
                    .into_grid()
                    .unwrap();
                let want = layer.forward_block(&y, window).unwrap();
                assert!(got.equal(&want), "{kind:?} window {window}: differs");
            }
        }
        assert_eq!(keys.0.borrow().len(), 2, "one buffer per shape");
    }
}

/// A windowed attention output read in place by the add + LayerNorm kernel equals the grid
/// add bit for bit, and merging it gives the grid back exactly: a 9×7 grid in windows of 4
/// (padding rows in the windows hold garbage the kernel must not read), fp32 and bf16.
#[test]
#[ignore = "needs a CUDA GPU and a build with llmprof's kernels: cargo test -- --ignored on the GPU machine"]
fn windowed_rows_add_like_the_grid_on_a_gpu() {
    use super::super::sam_attention::window_partition;
    use super::AttnOut;
    use crate::models::layers::basic::LayerNorm;
    assert!(tch::Cuda::is_available(), "no CUDA device");
    let dev = Device::Cuda(0);
    for (kind, c) in [(Kind::Float, 256i64), (Kind::BFloat16, 768)] {
        let ln = LayerNorm {
            weight: Tensor::rand([c], (kind, dev)) + 0.5,
            bias: Tensor::randn([c], (kind, dev)) * 0.1,
            eps: 1e-6,
            add_kernel: true,
        };
        let x = Tensor::randn([2, 9, 7, c], (kind, dev));
        let delta = Tensor::randn([2, 9, 7, c], (kind, dev));
        let (windows, _) = window_partition(&delta, 4).unwrap(); // (2·6, 4, 4, c)
        let windows = windows.view([-1, 16, c]);
        // What padding rows hold must not matter: fill them with NaN.
        let pad = Tensor::ones([2, 9, 7, 1], (kind, dev));
        let (pad, _) = window_partition(&pad, 4).unwrap();
        let windows = windows.where_self(
            &pad.view([-1, 16, 1]).ne(0),
            &Tensor::from(f64::NAN).to_kind(kind).to_device(dev),
        );
        assert!(ln.add_kernel_takes(&x, &windows).unwrap());
        let (sum, out) = ln.add_windows_forward(&x, &windows, (4, 4)).unwrap();
        let (want_sum, want) = ln.add_forward(&x, &delta).unwrap();
        assert!(sum.equal(&want_sum), "{kind:?}: sums differ");
        assert!(out.equal(&want), "{kind:?}: norms differ");
        let grid = AttnOut::Windows {
            y: windows,
            grid: (9, 7),
            win: (4, 4),
        }
        .into_grid()
        .unwrap();
        assert!(
            grid.equal(&delta),
            "{kind:?}: merged windows differ from the grid"
        );
    }
}
