//! llmprof's GEMV (ffi/kernels_gemv.rs) against libtorch and against the kernels it folds in: the
//! plain form at every row count it computes, the grouped form over a MoE step's slots, and the
//! form with the residual add and RMSNorm folded in (GPU tests, `--ignored`).
use super::kernels;
use super::kernels_gemv::*;
use tch::{Device, Kind, Tensor};

#[test]
fn only_small_bf16_or_fp16_calls_on_a_gpu_fit() {
    // On the CPU nothing fits, whatever the shapes.
    let x = Tensor::zeros([1, 1, 64], (Kind::BFloat16, Device::Cpu));
    let w = Tensor::zeros([32, 64], (Kind::BFloat16, Device::Cpu));
    assert!(!fits(&x, &w, None));
}

/// The folded add + RMSNorm against the add + RMSNorm kernel and then the GEMV: the sum and
/// the output bit for bit, in bf16 and fp16, with and without bias, at widths whose norm takes
/// one, two and four 16-byte vectors a thread (896, 1,280, 4,096, 8,192) and output counts
/// that are and are not multiples of a block's 16, in each load plan (a whole row at once,
/// whole groups with and without a serial tail, partial groups over 12,000 outputs: ≥ 4
/// blocks an SM up to 187 SMs), under both launch policies; a call of two
/// rows or a width over the norm's limit does not fit.
#[test]
#[ignore = "needs a CUDA GPU and a build with llmprof's kernels: cargo test -- --ignored on the GPU machine"]
fn gemv_with_the_add_rms_norm_folded_in_equals_the_two_kernels_on_a_gpu() {
    crate::ffi::kernels::with_each_launch_policy(|| {
        assert!(tch::Cuda::is_available(), "no CUDA device");
        let dev = Device::Cuda(0);
        for kind in [Kind::BFloat16, Kind::Half] {
            let shapes = [
                (1152i64, 896i64),
                (1000, 896),
                (3840, 1280),
                (6144, 4096),
                (1000, 3584),
                (12000, 4096),
                (37, 8192),
            ];
            for (n, k) in shapes {
                for with_bias in [false, true] {
                    let x = Tensor::randn([1, 1, k], (kind, dev));
                    let delta = Tensor::randn([1, 1, k], (kind, dev)) * 0.5;
                    let nw = Tensor::rand([k], (kind, dev)) + 0.5;
                    let w = Tensor::randn([n, k], (kind, dev)) / (k as f64).sqrt();
                    let b = with_bias.then(|| Tensor::randn([n], (kind, dev)));
                    assert!(add_rms_norm_fits(&x, &delta, &nw, &w, b.as_ref()));
                    let (sum, y) = add_rms_norm_linear(
                        (&x, &delta),
                        (&nw, 1e-6),
                        (&w, b.as_ref()),
                        GemvAct::None,
                    )
                    .unwrap();
                    let (want_sum, normed) = kernels::add_rms_norm(&x, &delta, &nw, 1e-6).unwrap();
                    let want = linear(&normed, &w, b.as_ref()).unwrap();
                    let what = format!("{kind:?} n {n} k {k} bias {with_bias}");
                    assert!(sum.equal(&want_sum), "{what}: sums differ");
                    assert!(y.equal(&want), "{what}: outputs differ");
                }
            }
            let (x2, nw) = (
                Tensor::zeros([2, 1, 4096], (kind, dev)),
                Tensor::ones([4096], (kind, dev)),
            );
            let w = Tensor::zeros([64, 4096], (kind, dev));
            assert!(!add_rms_norm_fits(&x2, &x2, &nw, &w, None));
            let (x, w) = (
                Tensor::zeros([1, 16384], (kind, dev)),
                Tensor::zeros([64, 16384], (kind, dev)),
            );
            let nw = Tensor::ones([16384], (kind, dev));
            assert!(!add_rms_norm_fits(&x, &x, &nw, &w, None));
        }
    });
}

/// The grouped form against each slot's expert in fp32, slots sorted by expert as the
/// routing leaves them (experts without slots between, the last expert's group used, an
/// expert with two slots), at every slot count 1 ..= [`MAX_GROUPED_ROWS`], over 8 experts and
/// over 70 (the kernel finds a slot's expert 32 group ends at a time: experts on each side of
/// 32 and 64, and the last): within one rounding of the output of the largest value;
/// [`grouped_fits`] refuses 17 slots and int64 group ends.
#[test]
#[ignore = "needs a CUDA GPU and a build with llmprof's kernels: cargo test -- --ignored on the GPU machine"]
fn grouped_gemv_matches_each_slots_expert_on_a_gpu() {
    crate::ffi::kernels::with_each_launch_policy(|| {
        assert!(tch::Cuda::is_available(), "no CUDA device");
        let dev = Device::Cuda(0);
        let cases = [
            (8i64, (1792i64, 1280i64)),
            (8, (1280, 896)),
            (8, (40, 264)),
            (70, (1280, 896)),
        ];
        for (kind, tol) in [(Kind::BFloat16, 1.0 / 128.0), (Kind::Half, 1.0 / 1024.0)] {
            for (experts, (n, k)) in cases {
                let w = Tensor::randn([experts, n, k], (kind, dev)) / (k as f64).sqrt();
                for slots in 1..=MAX_GROUPED_ROWS {
                    let (of_slot, ends) = slots_sorted_by_expert(slots, experts, dev);
                    let x = Tensor::randn([slots, k], (kind, dev));
                    assert!(grouped_fits(&x, &w, &ends), "{kind:?} {slots} slots");
                    let got = linear_grouped(&x, &w, &ends, GemvAct::None)
                        .unwrap()
                        .to_kind(Kind::Float);
                    let want = Tensor::stack(
                        &of_slot
                            .iter()
                            .enumerate()
                            .map(|(s, &e)| {
                                x.get(s as i64)
                                    .to_kind(Kind::Float)
                                    .matmul(&w.get(e).to_kind(Kind::Float).tr())
                            })
                            .collect::<Vec<_>>(),
                        0,
                    );
                    let err = (&got - &want).abs().max().double_value(&[]);
                    let scale = want.abs().max().double_value(&[]);
                    assert!(
                        err <= tol * scale,
                        "{kind:?} {slots} slots, n {n}, k {k}: error {err} (scale {scale})"
                    );
                }
                let x17 = Tensor::zeros([MAX_GROUPED_ROWS + 1, k], (kind, dev));
                let ends = Tensor::zeros([experts], (Kind::Int, dev));
                assert!(!grouped_fits(&x17, &w, &ends));
                let x1 = Tensor::zeros([1, k], (kind, dev));
                assert!(!grouped_fits(&x1, &w, &ends.to_kind(Kind::Int64)));
            }
        }
    });
}

/// The kernel against libtorch's Linear in fp32 on the same bf16/fp16 operands, at every
/// row count 1 ..= 8 it computes and widths that are not multiples of the kernel's
/// 256-element step, with and without bias and with an output count that is not a multiple
/// of its 16 per block, in both block shapes (one row of 1,280 over 9,000 outputs takes the
/// short-row shape) and each load plan (rows of at most 2,048 at once; 3,080 over 12,000
/// outputs in partial groups, a partial last one; longer rows or fewer outputs in whole
/// groups, 3,080 over 1,000 with a serial tail): within one rounding of the output (2⁻⁷
/// relative for bf16, 2⁻¹⁰ fp16) of the largest value. [`fits`] gives it one row of at most
/// [`MAX_K`] only.
#[test]
#[ignore = "needs a CUDA GPU and a build with llmprof's kernels: cargo test -- --ignored on the GPU machine"]
fn gemv_matches_an_fp32_linear_on_a_gpu() {
    crate::ffi::kernels::with_each_launch_policy(|| {
        assert!(tch::Cuda::is_available(), "no CUDA device");
        let dev = Device::Cuda(0);
        for (kind, tol) in [(Kind::BFloat16, 1.0 / 128.0), (Kind::Half, 1.0 / 1024.0)] {
            for (n, k) in [
                (4096i64, 4096i64),
                (1000, 14336),
                (300, 28672),
                (9000, 1280),
                (12000, 3080),
                (1000, 3080),
                (37, 264),
                (6144, 8),
            ] {
                for rows in 1..=MAX_ROWS {
                    for with_bias in [false, true] {
                        let x = Tensor::randn([rows, 1, k], (kind, dev));
                        let w = Tensor::randn([n, k], (kind, dev)) / (k as f64).sqrt();
                        let b = with_bias.then(|| Tensor::randn([n], (kind, dev)));
                        assert_eq!(
                            fits(&x, &w, b.as_ref()),
                            rows <= TAKEN_ROWS && k <= MAX_K,
                            "{kind:?} {rows}x{k} by {n}"
                        );
                        let got = linear(&x, &w, b.as_ref()).unwrap().to_kind(Kind::Float);
                        let f = |t: &Tensor| t.to_kind(Kind::Float);
                        let want = f(&x).linear(&f(&w), b.as_ref().map(f).as_ref());
                        let err = (&got - &want).abs().max().double_value(&[]);
                        let scale = want.abs().max().double_value(&[]);
                        assert!(
                            err <= tol * scale,
                            "{kind:?} rows {rows}, n {n}, k {k}, bias {with_bias}: error {err} (scale {scale})"
                        );
                    }
                }
            }
        }
    });
}

/// Each of `slots` token slots' expert, sorted as the routing leaves them (slot s goes to expert
/// (s · 5 / 2) mod `experts`: gaps and repeats; over more than 32 experts, in turn, to experts
/// 0, 31, 32, 33, 33, 63, 64 and the last: each side of the kernel's 32-end chunks, a repeat,
/// the last expert), and the group ends [experts] int32 on `dev`.
pub(super) fn slots_sorted_by_expert(slots: i64, experts: i64, dev: Device) -> (Vec<i64>, Tensor) {
    let wide = [0, 31, 32, 33, 33, 63, 64, experts - 1];
    let mut of_slot: Vec<i64> = (0..slots)
        .map(|s| match experts > 32 {
            true => wide[s as usize % wide.len()] % experts,
            false => (s * 5 / 2) % experts,
        })
        .collect();
    of_slot.sort_unstable();
    let ends: Vec<i32> = (0..experts)
        .map(|e| of_slot.iter().filter(|&&x| x <= e).count() as i32)
        .collect();
    (of_slot, Tensor::from_slice(&ends).to_device(dev))
}
