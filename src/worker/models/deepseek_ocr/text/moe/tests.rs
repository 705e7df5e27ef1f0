//! The MoE's dispatches against each other and the plain formula.
use super::*;
use crate::models::deepseek_ocr::checkpoint::weights::{Part, Weights};
use llmprof::model::deepseek_ocr::arch::ArchConfig;
use llmprof::region::NoopObserver;
use tch::{Device, Kind, Tensor};

/// Per-token loop over experts, router recomputed on the host (softmax, sort, no renorm).
fn naive(w: &Weights, layer: i64, cfg: &ArchConfig, x: &Tensor) -> Tensor {
    let d = &cfg.decoder;
    let p = format!("model.layers.{layer}.mlp");
    let gate = w.get(&format!("{p}.gate.weight")).unwrap();
    let (n, _) = x.size2().unwrap();
    let mut rows = Vec::new();
    for t in 0..n {
        let xt = x.get(t).unsqueeze(0); // (1, h)
        let logits = Vec::<f32>::try_from(&xt.matmul(&gate.tr()).view([-1])).unwrap();
        let m = logits.iter().cloned().fold(f32::MIN, f32::max);
        let z: f32 = logits.iter().map(|l| (l - m).exp()).sum();
        let mut probs: Vec<(usize, f32)> = logits
            .iter()
            .map(|l| (l - m).exp() / z)
            .enumerate()
            .collect();
        probs.sort_by(|a, b| b.1.partial_cmp(&a.1).unwrap());
        let mut acc = Tensor::zeros([1, d.hidden_size], (Kind::Float, Device::Cpu));
        for &(e, pr) in probs.iter().take(d.num_experts_per_tok as usize) {
            let ep = format!("{p}.experts.{e}");
            let g = w.get(&format!("{ep}.gate_proj.weight")).unwrap();
            let u = w.get(&format!("{ep}.up_proj.weight")).unwrap();
            let dn = w.get(&format!("{ep}.down_proj.weight")).unwrap();
            let o = (xt.matmul(&g.tr()).silu() * xt.matmul(&u.tr())).matmul(&dn.tr());
            acc += o * (pr as f64);
        }
        let sp = format!("{p}.shared_experts");
        let g = w.get(&format!("{sp}.gate_proj.weight")).unwrap();
        let u = w.get(&format!("{sp}.up_proj.weight")).unwrap();
        let dn = w.get(&format!("{sp}.down_proj.weight")).unwrap();
        acc += (xt.matmul(&g.tr()).silu() * xt.matmul(&u.tr())).matmul(&dn.tr());
        rows.push(acc);
    }
    Tensor::cat(&rows, 0)
}

#[test]
fn moe_matches_naive_loop_for_every_dispatch() {
    let cfg = ArchConfig::tiny();
    let w = Weights::synthetic(&cfg, &[Part::Decoder], 3, Device::Cpu, Kind::Float).unwrap();
    let x = Tensor::randn([2, 5, cfg.decoder.hidden_size], (Kind::Float, Device::Cpu));
    let want = naive(&w, 1, &cfg, &x.view([10, -1]));
    for fused in [false, true] {
        let mut moe = load(&w.root().sub("model.layers.1.mlp"), &cfg.decoder, fused).unwrap();
        for d in [
            MoeDispatch::Sorted,
            MoeDispatch::Gathered,
            MoeDispatch::Grouped,
            MoeDispatch::Auto,
        ] {
            moe.dispatch = d;
            let got = moe.forward(&x, &NoopObserver).unwrap().view([10, -1]);
            let err = (&got - &want).abs().max().double_value(&[]);
            assert!(err < 1e-4, "{d:?} fused={fused}: max abs err {err}");
        }
    }
    let moe = load(&w.root().sub("model.layers.1.mlp"), &cfg.decoder, false).unwrap();
    // Not renormalised: routed weights sum to < 1 with 2 of 8 experts.
    let (wts, _) = moe.route(&x.view([10, -1])).unwrap();
    let max_sum = wts
        .sum_dim_intlist(1, false, Kind::Float)
        .max()
        .double_value(&[]);
    assert!(
        max_sum < 0.999,
        "top-k weights look renormalised: {max_sum}"
    );
}

#[test]
fn every_dispatch_marks_router_routing_experts_combine_shared() {
    use crate::test_util::ModuleRecorder;
    use llmprof::model::deepseek_ocr::analytic_modules::{MOE, MOE_MODULES, MOE_NORM};
    use llmprof::model::module_work::LAYER;
    use llmprof::region::RegionObserver;
    let cfg = ArchConfig::tiny();
    let w = Weights::synthetic(&cfg, &[Part::Decoder], 3, Device::Cpu, Kind::Float).unwrap();
    let x = Tensor::randn([2, 5, cfg.decoder.hidden_size], (Kind::Float, Device::Cpu));
    // Every module of the MoE but the norm before it (the decoder's layer marks that one).
    let mut want: Vec<&str> = MOE_MODULES
        .iter()
        .filter(|m| ![MOE, MOE_NORM].contains(m))
        .map(|m| m.name())
        .collect();
    want.sort_unstable();
    for fused in [false, true] {
        let mut moe = load(&w.root().sub("model.layers.1.mlp"), &cfg.decoder, fused).unwrap();
        for d in [
            MoeDispatch::Sorted,
            MoeDispatch::Gathered,
            MoeDispatch::Grouped,
        ] {
            moe.dispatch = d;
            let rec = ModuleRecorder::default();
            let got = {
                let _layer = rec.enter_module(LAYER, Some(1));
                let _moe = rec.enter_module(MOE, None);
                moe.forward(&x, &rec).unwrap()
            };
            assert!(got.equal(&moe.forward(&x, &NoopObserver).unwrap()), "{d:?}");
            assert!(
                rec.misplaced.borrow().is_empty(),
                "{d:?}: {:?}",
                rec.misplaced.borrow()
            );
            let mut marked: Vec<String> = rec
                .paths
                .borrow()
                .iter()
                .filter_map(|p| p.strip_prefix("module:layer[1].moe.").map(str::to_string))
                .collect();
            marked.sort_unstable();
            marked.dedup();
            assert_eq!(marked, want, "{d:?} fused={fused}");
        }
    }
}
