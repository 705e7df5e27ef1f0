//! The GEMV with SwiGLU folded in (`runtime.optim.gemv_swiglu`) against the GEMV and then the
//! SwiGLU kernel, bit for bit: its plain one-row form, the form with the residual add and
//! RMSNorm folded in too, and the grouped form over a MoE step's slots.
use super::kernels::{self, with_each_launch_policy};
use super::kernels_gemv::*;
use super::kernels_gemv_tests::slots_sorted_by_expert;
use tch::{Device, Kind, Tensor};

/// Fused gate/up widths (2f rows) and input widths covering each one-row form: DeepSeek-OCR's
/// dense layer (f 6,848 over 1,280: the short-row shape of 4 warps x 4 rows) and f 4,099 there (a
/// partial last block in that shape), Llama-3.1-8B's (f 14,336 over 4,096), a row read whole
/// (f 896 over 896), partial groups at few blocks (f 500 over 3,080), f not a multiple of a
/// block's 8 outputs (f 37 over 264), and a width whose folded norm takes four vectors a thread
/// (f 1,000 over 8,192, Llama-3.1-70B's hidden size).
const SHAPES: [(i64, i64); 7] = [
    (13696, 1280),
    (8198, 1280),
    (28672, 4096),
    (1792, 896),
    (1000, 3080),
    (74, 264),
    (2000, 8192),
];

#[test]
#[ignore = "needs a CUDA GPU and a build with llmprof's kernels: cargo test -- --ignored on the GPU machine"]
fn gemv_with_swiglu_equals_the_gemv_then_the_swiglu_kernel_on_a_gpu() {
    with_each_launch_policy(|| {
        assert!(tch::Cuda::is_available(), "no CUDA device");
        let dev = Device::Cuda(0);
        for kind in [Kind::BFloat16, Kind::Half] {
            for (n, k) in SHAPES {
                let what = format!("{kind:?} 2f {n} k {k}");
                let x = Tensor::randn([1, 1, k], (kind, dev));
                let w = Tensor::randn([n, k], (kind, dev)) / (k as f64).sqrt();
                assert!(swiglu_fits(&x, &w), "{what}");
                let got = linear_swiglu(&x, &w).unwrap();
                let want = kernels::silu_mul(&linear(&x, &w, None).unwrap()).unwrap();
                assert_eq!(got.size(), [1, 1, n / 2], "{what}");
                assert!(got.equal(&want), "{what}: outputs differ");
                let delta = Tensor::randn([1, 1, k], (kind, dev)) * 0.5;
                let nw = Tensor::rand([k], (kind, dev)) + 0.5;
                assert!(add_rms_norm_fits(&x, &delta, &nw, &w, None), "{what}");
                {
                    let (sum, y) =
                        add_rms_norm_linear((&x, &delta), (&nw, 1e-6), (&w, None), GemvAct::SwiGlu)
                            .unwrap();
                    let (want_sum, normed) = kernels::add_rms_norm(&x, &delta, &nw, 1e-6).unwrap();
                    let want = kernels::silu_mul(&linear(&normed, &w, None).unwrap()).unwrap();
                    assert!(sum.equal(&want_sum), "{what}: folded norm's sums differ");
                    assert!(y.equal(&want), "{what}: folded norm's outputs differ");
                }
            }
            // A bias is refused (the model's gate/up have none; the kernel reads none).
            let (x, w) = (
                Tensor::randn([1, 1, 896], (kind, dev)),
                Tensor::randn([1792, 896], (kind, dev)),
            );
            let b = Tensor::zeros([1792], (kind, dev));
            let err = add_rms_norm_linear(
                (&x, &x),
                (&b.narrow(0, 0, 896), 1e-6),
                (&w, Some(&b)),
                GemvAct::SwiGlu,
            )
            .unwrap_err();
            assert!(err.to_string().contains("takes no bias"), "{err}");
            // Two rows, or an odd number of weight rows, are not SwiGLU calls.
            let w = Tensor::zeros([64, 256], (kind, dev));
            assert!(!swiglu_fits(&Tensor::zeros([2, 256], (kind, dev)), &w));
            assert!(!swiglu_fits(
                &Tensor::zeros([1, 256], (kind, dev)),
                &Tensor::zeros([63, 256], (kind, dev))
            ));
        }
    });
}

/// The grouped form with SwiGLU against the grouped form and then the SwiGLU kernel, bit for
/// bit, at 1, 7 and 16 slots sorted by expert (gaps and an expert with several slots), at
/// DeepSeek-OCR's experts' gate/up (2f 1,792 over 1,280) and a width with a partial last group.
#[test]
#[ignore = "needs a CUDA GPU and a build with llmprof's kernels: cargo test -- --ignored on the GPU machine"]
fn grouped_gemv_with_swiglu_equals_the_grouped_gemv_then_the_swiglu_kernel_on_a_gpu() {
    with_each_launch_policy(|| {
        assert!(tch::Cuda::is_available(), "no CUDA device");
        let dev = Device::Cuda(0);
        let experts = 8i64;
        for kind in [Kind::BFloat16, Kind::Half] {
            for (n, k) in [(1792i64, 1280i64), (1792, 896), (80, 264)] {
                let w = Tensor::randn([experts, n, k], (kind, dev)) / (k as f64).sqrt();
                for slots in [1i64, 7, MAX_GROUPED_ROWS] {
                    let (_, ends) = slots_sorted_by_expert(slots, experts, dev);
                    let x = Tensor::randn([slots, k], (kind, dev));
                    let got = linear_grouped(&x, &w, &ends, GemvAct::SwiGlu).unwrap();
                    let want =
                        kernels::silu_mul(&linear_grouped(&x, &w, &ends, GemvAct::None).unwrap())
                            .unwrap();
                    assert_eq!(got.size(), [slots, n / 2]);
                    assert!(
                        got.equal(&want),
                        "{kind:?} {slots} slots, 2f {n}, k {k}: differ"
                    );
                }
            }
        }
    });
}
