//! DeepSeek-OCR's decode step module by module (model/module_work.rs): the shared attention
//! modules in every layer, the dense SwiGLU MLP of the first `first_k_dense_replace` layers, and
//! the mixture of experts of the others (norm, router, routing, the routed experts' gate/up,
//! activation and down, the weighted combine, the shared experts), plus the embedding lookup, the
//! final norm and lm_head. Routed experts read the expected distinct experts of the batch
//! (analytic_bytes.rs); their FLOPs are top-k per token. The modules' FLOPs add up to
//! `analytic::decode_step_flops` over the batch, their weight and KV bytes to
//! `analytic_bytes::decode_step_bytes` (tests).
use super::analytic_bytes::expected_distinct_experts;
use super::arch::ArchConfig;
use crate::model::module_work::{
    attention_work, moe_work, swiglu_work, LayerShape, ModuleWork, MoeDims,
};

pub use crate::model::module_work::{
    COMBINE, EXPERTS_ACT, EXPERTS_DOWN, EXPERTS_GATE_UP, MOE, MOE_MODULES, MOE_NORM, ROUTER,
    ROUTING, SHARED_EXPERTS,
};

/// One decode step of `batch` rows, each attending to `context_len` keys (itself included);
/// `shared_as_experts`: the step runs the shared experts as experts of the grouped GEMMs
/// (`model.optim.moe_shared_experts_fused`), so their work is the routed experts' modules'.
pub fn decode_step_work(
    cfg: &ArchConfig,
    context_len: i64,
    batch: i64,
    dtype_bytes: u64,
    shared_as_experts: bool,
) -> Vec<ModuleWork> {
    let d = &cfg.decoder;
    let b = dtype_bytes as f64;
    let (h, v, t) = (d.hidden_size as f64, d.vocab_size as f64, batch as f64);
    let shape = LayerShape {
        hidden: h,
        q: (d.num_attention_heads * d.head_dim) as f64,
        kv: (d.num_key_value_heads * d.head_dim) as f64,
        rows: t,
        context: context_len as f64,
        dtype_bytes: b,
        qkv_bias: false,
    };
    let work = |module: &str, index: Option<u32>, flops: f64, weights: f64, act: f64| ModuleWork {
        module: module.to_string(),
        index,
        flops,
        weight_bytes: weights * b,
        activation_bytes: act * b,
        kv_bytes: 0.0,
    };
    let (e, k) = (d.n_routed_experts as f64, d.num_experts_per_tok as f64);
    let f = d.moe_intermediate_size as f64;
    let distinct = expected_distinct_experts(cfg, batch);
    let mut out = vec![work(
        "embed",
        None,
        0.0,
        batch.min(d.vocab_size) as f64 * h,
        t * h,
    )];
    for layer in 0..d.num_hidden_layers as u32 {
        out.extend(attention_work(&shape, layer));
        if (layer as i64) < d.first_k_dense_replace {
            out.extend(swiglu_work(
                &shape,
                d.intermediate_size as f64,
                "layer.mlp",
                layer,
            ));
            continue;
        }
        out.extend(moe_work(
            &shape,
            layer,
            &MoeDims {
                experts: e,
                top_k: k,
                expert_ffn: f,
                distinct,
                shared_ffn: Some(cfg.shared_intermediate() as f64),
                shared_as_experts,
            },
        ));
    }
    out.push(work("final_norm", None, 0.0, h, 2.0 * t * h));
    out.push(work("lm_head", None, 2.0 * t * h * v, v * h, t * (h + v)));
    out
}

#[cfg(test)]
mod tests {
    use super::super::analytic::decode_step_flops;
    use super::super::analytic_bytes::decode_step_bytes;
    use super::*;

    #[test]
    fn sums_match_the_step_totals() {
        for cfg in [
            ArchConfig::deepseek_ocr(),
            ArchConfig::tiny(),
            ArchConfig::deepseek_ocr2(),
        ] {
            for (context, batch) in [(1i64, 1i64), (1000, 1), (1300, 32)] {
                let m = decode_step_work(&cfg, context, batch, 2, false);
                let flops: f64 = m.iter().map(|w| w.flops).sum();
                let want = decode_step_flops(&cfg, context).total() * batch as f64;
                assert!((flops / want - 1.0).abs() < 1e-12, "{flops} vs {want}");
                let bytes: f64 = m.iter().map(ModuleWork::step_bytes).sum();
                let want = decode_step_bytes(&cfg, context, batch, 2).total();
                assert!((bytes / want - 1.0).abs() < 1e-12, "{bytes} vs {want}");
            }
        }
    }

    #[test]
    fn the_first_layer_is_dense_and_the_others_route() {
        let cfg = ArchConfig::deepseek_ocr();
        let m = decode_step_work(&cfg, 1000, 1, 2, false);
        let kinds = |layer: u32| -> Vec<&str> {
            m.iter()
                .filter(|w| w.index == Some(layer))
                .map(|w| w.module.as_str())
                .collect()
        };
        assert!(kinds(0).contains(&"layer.mlp.gate_up") && !kinds(0).contains(&"layer.moe.router"));
        assert!(kinds(1).contains(&"layer.moe.router") && !kinds(1).contains(&"layer.mlp.gate_up"));
        // Batch 1 routes to 6 experts: gate_up reads 6 × 2 × 1280 × 896 bf16 weights.
        let gate_up = m
            .iter()
            .find(|w| w.module == "layer.moe.experts_gate_up" && w.index == Some(1))
            .unwrap();
        assert!((gate_up.weight_bytes - 6.0 * 2.0 * 1280.0 * 896.0 * 2.0).abs() < 1e-3);
        let tree = [crate::model::module_work::DECODER_MODULES, MOE_MODULES];
        crate::region::check_modules(&tree).unwrap();
        super::super::REGIONS.check().unwrap();
    }
}
