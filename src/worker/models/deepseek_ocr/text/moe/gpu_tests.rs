//! GPU-only tests of the MoE's CUDA kernels (routing, combine) against libtorch; run with
//! `cargo test -- --ignored on_a_gpu` on the GPU machine.
use super::{load, unsort, MoeDispatch};
use crate::ffi::kernels;
use crate::models::deepseek_ocr::checkpoint::weights::{Part, Weights};
use llmprof::model::deepseek_ocr::arch::ArchConfig;
use llmprof::region::NoopObserver;
use tch::{Device, Kind, Tensor};

/// The inverse of the permutation `order` [S]: the sorted position of each slot, as `slot_pos`
/// must hold it.
fn inverse_permutation(order: &Tensor) -> Tensor {
    let s = order.size()[0];
    let positions = Tensor::arange(s, (Kind::Int64, order.device()));
    Tensor::zeros([s], (Kind::Int64, order.device())).index_put(&[Some(order)], &positions, false)
}

/// The router's sort of `r` against libtorch's: slots sorted stably by their expert ids, each
/// slot's token (`per_token` slots a token), the inverse permutation, the gathered rows of `x`
/// and the group ends over `experts` ids.
fn assert_sorted_by_expert(r: &kernels::MoeRouting, x: &Tensor, per_token: i64, experts: i64) {
    let dev = x.device();
    let n = x.size()[0];
    let flat = r.ids.reshape([-1]);
    let order = flat.argsort_stable(true, 0, false);
    assert!(r.order.equal(&order), "n {n}: slot order differs");
    assert!(r.slot_token.equal(&order.floor_divide_scalar(per_token)));
    assert!(
        r.sorted_x.equal(&x.index_select(0, &r.slot_token)),
        "n {n}: sorted rows differ from x's rows in slot order"
    );
    let counts = Tensor::zeros([experts], (Kind::Int64, dev)).scatter_add(
        0,
        &flat,
        &Tensor::ones([n * per_token], (Kind::Int64, dev)),
    );
    assert!(
        r.group_ends.equal(&counts.cumsum(0, Kind::Int)),
        "n {n}: group ends"
    );
    // The inverse permutation the combine reads.
    assert!(
        r.slot_pos.equal(&inverse_permutation(&r.order)),
        "n {n}: slot_pos is not the inverse of order"
    );
}

/// The routing kernels against softmax + top-k + the stable expert sort in libtorch, on the
/// GPU, 64 experts, top-6: the one-block router at decode sizes (1 and 4 tokens: the gather of
/// the expert inputs in the kernel, from rows it read into shared memory, and 4 rows of 7,168
/// too wide for that, from global memory; 5 and 170 tokens: an index_select after, up to 1,020
/// slots) and the many-block router at prefill sizes (171 tokens, just above; a 914-token page;
/// 32 such pages).
#[test]
#[ignore = "needs a CUDA GPU and a build with llmprof's kernels: cargo test -- --ignored on the GPU machine"]
fn routing_kernel_equals_libtorch_routing_on_a_gpu() {
    assert!(tch::Cuda::is_available(), "no CUDA device");
    let dev = Device::Cuda(0);
    let (e, k, scaling) = (64i64, 6i64, 2.5);
    for (n, hidden) in [
        (1i64, 1280i64),
        (4, 1280),
        (4, 7168),
        (5, 1280),
        (170, 1280),
        (171, 1280),
        (914, 1280),
        (32 * 914, 1280),
    ] {
        let logits = Tensor::randn([n, e], (Kind::Float, dev)) * 3.0;
        let x = Tensor::randn([n, hidden], (Kind::BFloat16, dev));
        let r = kernels::moe_route(&logits, &x, k, 0, scaling).unwrap();
        // Sorted, as the kernel returns them (the libtorch route leaves them unsorted; the
        // combine does not depend on the order).
        let (w, idx) = logits.softmax(-1, Kind::Float).topk(k, -1, true, true);
        let host = |t: &Tensor| Vec::<i64>::try_from(&t.reshape([-1]).to_device(Device::Cpu));
        assert!(
            r.ids.equal(&idx),
            "n {n}: expert ids differ: kernel {:?} libtorch {:?} logits {:?}",
            host(&r.ids),
            host(&idx),
            Vec::<f32>::try_from(&logits.get(0).to_device(Device::Cpu))
        );
        // Relative: the softmax sums 64 exponentials in another order (≤ 64 ulp apart).
        let want = w * scaling;
        let dw = ((&r.weights - &want).abs() / want.abs())
            .max()
            .double_value(&[]);
        assert!(
            dw < 64.0 * f64::from(f32::EPSILON),
            "n {n}: weights differ by {dw} (relative)"
        );
        assert_sorted_by_expert(&r, &x, k, e);
    }
}

/// A token whose router logits are NaN (a NaN hidden row) must not break the sort: both routers
/// rank NaN highest, as torch.topk does, so every slot gets an expert below 64 and a sorted row.
#[test]
#[ignore = "needs a CUDA GPU and a build with llmprof's kernels: cargo test -- --ignored on the GPU machine"]
fn routing_kernels_keep_a_nan_token_in_range_on_a_gpu() {
    assert!(tch::Cuda::is_available(), "no CUDA device");
    let dev = Device::Cuda(0);
    let (e, k) = (64i64, 6i64);
    for n in [1i64, 4, 914] {
        let logits = Tensor::randn([n, e], (Kind::Float, dev));
        let _ = logits.get(0).fill_(f64::NAN);
        let x = Tensor::randn([n, 1280], (Kind::BFloat16, dev));
        let r = kernels::moe_route(&logits, &x, k, 0, 1.0).unwrap();
        let ids = r.ids.reshape([-1]);
        assert!(
            bool::try_from(ids.ge(0).logical_and(&ids.lt(e)).all()).unwrap(),
            "n {n}: expert ids out of range"
        );
        let pos = inverse_permutation(&r.order);
        assert!(
            r.slot_pos.equal(&pos),
            "n {n}: slot_pos is not the inverse of order"
        );
        let sorted = r.order.sort(0, false).0;
        assert!(
            sorted.equal(&Tensor::arange(n * k, (Kind::Int64, dev))),
            "n {n}: order is not a permutation of the slots"
        );
        let ends = Vec::<i32>::try_from(&r.group_ends.to_device(Device::Cpu)).unwrap();
        assert_eq!(*ends.last().unwrap() as i64, n * k, "n {n}: group ends");
    }
}

/// The router-logits kernel against the fp32 GEMM of x cast to fp32, within what adding the
/// hidden products in another order can move a sum (hidden·ε₃₂ of the sum of magnitudes).
#[test]
#[ignore = "needs a CUDA GPU and a build with llmprof's kernels: cargo test -- --ignored on the GPU machine"]
fn router_logits_kernel_matches_the_fp32_gemm_on_a_gpu() {
    assert!(tch::Cuda::is_available(), "no CUDA device");
    let dev = Device::Cuda(0);
    let (e, h) = (64i64, 1280i64);
    let w = Tensor::randn([e, h], (Kind::Float, dev)) * 0.02;
    for n in [1i64, 32, 600] {
        let x = Tensor::randn([n, h], (Kind::BFloat16, dev));
        let got = kernels::router_logits(&x, &w).unwrap();
        let x32 = x.to_kind(Kind::Float);
        let want = x32.linear::<Tensor>(&w, None);
        let bound =
            x32.abs().linear::<Tensor>(&w.abs(), None) * (h as f64 * f64::from(f32::EPSILON));
        let over = (&got - &want)
            .abs()
            .gt_tensor(&bound)
            .sum(Kind::Int64)
            .int64_value(&[]);
        assert_eq!(
            over, 0,
            "n {n}: {over} logits differ by more than the reordering bound"
        );
    }
}

/// The combine kernel against the libtorch combine it replaces (unsort, fp32 weighted sum,
/// rounding, + shared experts), in bf16 at decode sizes (the element kernel) and prefill sizes
/// (600 and 2,000 tokens: the vector kernel), with and without shared experts. The sums may add
/// in another order, so a rounding may go the other way: values may differ by one bf16 ulp of the
/// routed sum and one of the result.
#[test]
#[ignore = "needs a CUDA GPU and a build with llmprof's kernels: cargo test -- --ignored on the GPU machine"]
fn combine_kernel_equals_libtorch_combine_on_a_gpu() {
    assert!(tch::Cuda::is_available(), "no CUDA device");
    let dev = Device::Cuda(0);
    let (e, k, h) = (64i64, 6i64, 1280i64);
    for (n, with_shared) in [(1i64, true), (32, true), (600, false), (2000, true)] {
        let logits = Tensor::randn([n, e], (Kind::Float, dev)) * 3.0;
        let x = Tensor::randn([n, h], (Kind::BFloat16, dev));
        let r = kernels::moe_route(&logits, &x, k, 0, 2.5).unwrap();
        let sorted = Tensor::randn([n * k, h], (Kind::BFloat16, dev));
        let shared = with_shared.then(|| Tensor::randn([n, h], (Kind::BFloat16, dev)));
        let got = kernels::moe_combine(&sorted, &r.slot_pos, &r.weights, shared.as_ref()).unwrap();
        let per_slot = unsort(&sorted, &r.order, n, k, h).unwrap();
        let mut want = (per_slot.to_kind(Kind::Float) * r.weights.unsqueeze(-1))
            .sum_dim_intlist(1, false, Kind::Float)
            .to_kind(Kind::BFloat16);
        if let Some(s) = &shared {
            want += s;
        }
        let (g, w) = (got.to_kind(Kind::Float), want.to_kind(Kind::Float));
        let diff = (&g - &w).abs();
        // Allowed: what adding the k fp32 products in another order can move the sum (k·ε₃₂ of
        // the sum of their magnitudes), then one bf16 ulp where that sum is rounded (≤ 2^-7 of
        // it, so of the magnitudes) and one where the shared experts' output is added (≤ 2^-7
        // of the result). The middle term matters where the shared output cancels the routed
        // sum.
        let magnitudes = (per_slot.to_kind(Kind::Float) * r.weights.unsqueeze(-1))
            .abs()
            .sum_dim_intlist(1, false, Kind::Float);
        let per_magnitude = 2f64.powi(-7) + k as f64 * f64::from(f32::EPSILON);
        let bound = w.abs() * 2f64.powi(-7) + magnitudes * per_magnitude;
        let over = diff.gt_tensor(&bound).sum(Kind::Int64).int64_value(&[]);
        let differ = diff.gt(0.0).sum(Kind::Int64).int64_value(&[]);
        assert_eq!(
            over, 0,
            "n {n}: {over} values differ by more than two bf16 roundings plus the reordering error"
        );
        assert!(
            differ * 100 <= n * h,
            "n {n}: {differ} of {} values differ (rounding order alone moves < 1 %)",
            n * h
        );
    }
}

/// DeepSeek-OCR's tiny architecture with seeded bf16 decoder weights on the GPU (layer 1 is a
/// MoE, under `model.layers.1.mlp`).
fn tiny_decoder_on_a_gpu() -> (ArchConfig, Weights) {
    assert!(tch::Cuda::is_available(), "no CUDA device");
    let cfg = ArchConfig::tiny();
    let w = Weights::synthetic(&cfg, &[Part::Decoder], 5, Device::Cuda(0), Kind::BFloat16).unwrap();
    (cfg, w)
}

/// A whole MoE layer with the routing kernels and the combine kernel against the same layer
/// with the libtorch combine, at a decode size (the one-block router) and at a prefill size (the
/// many-block router).
#[test]
#[ignore = "needs a CUDA GPU and a build with llmprof's kernels: cargo test -- --ignored on the GPU machine"]
fn moe_layer_with_the_combine_kernel_matches_the_libtorch_combine_on_a_gpu() {
    let (cfg, w) = tiny_decoder_on_a_gpu();
    let vs = w.root().sub("model.layers.1.mlp");
    let (dev, h) = (Device::Cuda(0), cfg.decoder.hidden_size);
    let k = cfg.decoder.num_experts_per_tok;
    for n in [3i64, 4000 / k] {
        let x = Tensor::randn([1, n, h], (Kind::BFloat16, dev));
        let run = |combine_kernel: bool| {
            let mut moe = load(&vs, &cfg.decoder, true).unwrap();
            moe.dispatch = MoeDispatch::Grouped;
            moe.routing_kernel = true;
            moe.combine_kernel = combine_kernel;
            moe.forward(&x, &NoopObserver).unwrap().to_kind(Kind::Float)
        };
        let (got, want) = (run(true), run(false));
        assert_eq!(got.size(), want.size());
        let diff = (&got - &want).abs();
        // Only the order of the k fp32 additions and so a rounding may differ: a value moves by
        // at most about one bf16 ulp of the largest values; a wrong row moves it by O(1).
        let scale = want.abs().max().double_value(&[]);
        let worst = diff.max().double_value(&[]);
        assert!(
            worst <= scale * 2f64.powi(-6),
            "n {n}: largest difference {worst} against values up to {scale}"
        );
        let differ = diff.gt(0.0).sum(Kind::Int64).int64_value(&[]);
        assert!(
            differ * 100 <= n * h,
            "n {n}: {differ} of {} values differ (rounding order alone moves < 1 %)",
            n * h
        );
    }
}

/// The one-block router with the shared experts as slots: each token's k routed slots as
/// without them, then its shared slots (experts 64 and 65, weight 1), sorted with the rest.
#[test]
#[ignore = "needs a CUDA GPU and a build with llmprof's kernels: cargo test -- --ignored on the GPU machine"]
fn routing_kernel_appends_the_shared_experts_as_slots_on_a_gpu() {
    assert!(tch::Cuda::is_available(), "no CUDA device");
    let dev = Device::Cuda(0);
    let (e, k, s) = (64i64, 6i64, 2i64);
    for n in [1i64, 2, 4] {
        let logits = Tensor::randn([n, e], (Kind::Float, dev)) * 3.0;
        let x = Tensor::randn([n, 1280], (Kind::BFloat16, dev));
        let plain = kernels::moe_route(&logits, &x, k, 0, 2.5).unwrap();
        let r = kernels::moe_route(&logits, &x, k, s, 2.5).unwrap();
        assert!(r.ids.narrow(1, 0, k).equal(&plain.ids), "n {n}: routed ids");
        assert!(
            r.weights.narrow(1, 0, k).equal(&plain.weights),
            "n {n}: routed weights"
        );
        let shared_ids = Tensor::arange_start(e, e + s, (Kind::Int64, dev)).expand([n, s], false);
        assert!(
            r.ids.narrow(1, k, s).equal(&shared_ids),
            "n {n}: shared ids"
        );
        assert!(
            r.weights.narrow(1, k, s).eq(1.0).all().int64_value(&[]) == 1,
            "n {n}: shared weights"
        );
        assert_sorted_by_expert(&r, &x, k + s, e + s);
    }
}

/// A MoE layer with its shared experts run as experts of the grouped GEMVs against the same layer
/// running them as their own MLP, at 1 and 2 tokens (slots within the grouped GEMV). The shared
/// output is rounded once with the routed sum instead of on its own, so values move by a bf16
/// ulp or so; a wrong expert, weight or row moves them by O(1).
#[test]
#[ignore = "needs a CUDA GPU and a build with llmprof's kernels: cargo test -- --ignored on the GPU machine"]
fn moe_layer_with_shared_experts_as_slots_matches_the_shared_mlp_on_a_gpu() {
    let (cfg, w) = tiny_decoder_on_a_gpu();
    let vs = w.root().sub("model.layers.1.mlp");
    let (dev, h) = (Device::Cuda(0), cfg.decoder.hidden_size);
    for n in [1i64, 2] {
        let x = Tensor::randn([1, n, h], (Kind::BFloat16, dev));
        let run = |fused: bool| {
            let mut moe = load(&vs, &cfg.decoder, true).unwrap().with_gemv(true);
            moe.dispatch = MoeDispatch::Grouped;
            moe.routing_kernel = true;
            moe.combine_kernel = true;
            let moe = moe.with_shared_experts_fused(fused).unwrap();
            assert_eq!(
                moe.shared_as_slots(n).is_some(),
                fused,
                "n {n}: the path checked"
            );
            moe.forward(&x, &NoopObserver).unwrap().to_kind(Kind::Float)
        };
        let (got, want) = (run(true), run(false));
        assert_eq!(got.size(), want.size());
        let scale = want.abs().max().double_value(&[]);
        let worst = (&got - &want).abs().max().double_value(&[]);
        assert!(
            worst <= scale * 2f64.powi(-5),
            "n {n}: largest difference {worst} against values up to {scale}"
        );
    }
}
