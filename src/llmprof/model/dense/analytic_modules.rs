//! A dense decoder's decode step module by module (model/module_work.rs): every layer's
//! attention modules and SwiGLU MLP, the embedding lookup, the final norm and lm_head. The
//! modules' FLOPs add up to `analytic::decode_step_flops` over the batch, and their weight and KV
//! bytes to `analytic::decode_step_bytes` (tests).
use super::arch::DenseArch;
use crate::model::module_work::{
    attention_work, expected_distinct_experts, moe_work, swiglu_work, LayerShape, ModuleWork,
    MoeDims,
};

/// One decode step of `batch` rows, each attending to `context_len` keys (itself included).
pub fn decode_step_work(
    a: &DenseArch,
    context_len: i64,
    batch: i64,
    dtype_bytes: u64,
) -> Vec<ModuleWork> {
    let b = dtype_bytes as f64;
    let (h, v) = (a.hidden_size as f64, a.vocab_size as f64);
    let t = batch as f64;
    let shape = LayerShape {
        hidden: h,
        q: (a.num_attention_heads * a.head_dim) as f64,
        kv: (a.num_key_value_heads * a.head_dim) as f64,
        rows: t,
        context: context_len as f64,
        dtype_bytes: b,
        qkv_bias: a.attention_bias,
    };
    let top = |module: &str, flops: f64, weights: f64, act: f64| ModuleWork {
        module: module.to_string(),
        index: None,
        flops,
        weight_bytes: weights * b,
        activation_bytes: act * b,
        kv_bytes: 0.0,
    };
    // A tied table is read once, by lm_head; an untied one only at the batch's rows.
    let embedding_rows = if a.tie_word_embeddings {
        0.0
    } else {
        batch.min(a.vocab_size) as f64 * h
    };
    let mut out = vec![top("embed", 0.0, embedding_rows, t * h)];
    for layer in 0..a.num_hidden_layers as u32 {
        // A sliding layer attends to its window only.
        let shape = LayerShape {
            context: a.keys_seen(layer as i64, context_len as f64),
            ..shape
        };
        let mut attention = match &a.mla {
            Some(m) => m.layer_work(&shape, a.num_attention_heads, layer),
            None => attention_work(&shape, layer),
        };
        if a.qk_norm {
            // Qwen3's q and k norms ([head_dim] each) run with the projections.
            add_weights(
                &mut attention,
                "layer.attention.qkv",
                2.0 * a.head_dim as f64 * b,
            );
        }
        if a.sandwich.is_some() {
            // Gemma's norm of the attention output runs after o_proj and is charged to it.
            add_weights(&mut attention, "layer.attention.o_proj", h * b);
        }
        out.extend(attention);
        match &a.moe {
            Some(m) if m.in_layer(layer as i64) => {
                let (e, k) = (m.num_experts as f64, m.num_experts_per_tok as f64);
                let mut moe = moe_work(
                    &shape,
                    layer,
                    &MoeDims {
                        shared_as_experts: false,
                        experts: e,
                        top_k: k,
                        expert_ffn: m.expert_intermediate_size as f64,
                        distinct: expected_distinct_experts(e, k, batch),
                        shared_ffn: (m.shared_intermediate_size > 0)
                            .then_some(m.shared_intermediate_size as f64),
                    },
                );
                if m.scoring == super::Scoring::Sigmoid {
                    // The score correction bias [E] is read with the router.
                    add_weights(&mut moe, "layer.moe.router", e * b);
                }
                out.extend(moe)
            }
            _ => {
                let mut mlp = swiglu_work(&shape, a.intermediate_size as f64, "layer.mlp", layer);
                if a.sandwich.is_some() {
                    // Gemma's norm of the MLP output runs after down and is charged to it.
                    add_weights(&mut mlp, "layer.mlp.down", h * b);
                }
                out.extend(mlp);
            }
        }
    }
    out.push(top("final_norm", 0.0, h, 2.0 * t * h));
    out.push(top("lm_head", 2.0 * t * h * v, v * h, t * (h + v)));
    out
}

/// Adds `bytes` of weights to `module` among `work` (a small weight that runs with it).
fn add_weights(work: &mut [ModuleWork], module: &str, bytes: f64) {
    if let Some(w) = work.iter_mut().find(|w| w.module == module) {
        w.weight_bytes += bytes;
    }
}

#[cfg(test)]
mod tests {
    use super::super::analytic::{decode_step_bytes, decode_step_flops};
    use super::*;

    fn presets() -> Vec<(&'static str, DenseArch)> {
        let conf = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../conf/model/dense_decoder/arch");
        ["qwen2_5_0_5b", "qwen2_5_7b", "llama3_1_8b", "qwen3_0_6b"]
            .into_iter()
            .map(|p| {
                let text = std::fs::read_to_string(conf.join(format!("{p}.yaml"))).unwrap();
                (p, serde_yaml::from_str(&text).unwrap())
            })
            // The mixtures of experts (from their released config.json).
            .chain(
                [
                    "mixtral_8x7b",
                    "qwen3_30b_a3b",
                    "deepseek_v2_lite",
                    "deepseek_v3",
                    "gemma3_1b",
                    "phi3_mini_4k",
                ]
                .map(|p| (p, super::super::tests::preset(p))),
            )
            .collect()
    }

    #[test]
    fn sums_match_the_step_totals() {
        for (name, a) in presets() {
            for (context, batch) in [(1i64, 1i64), (1000, 1), (300, 32)] {
                let m = decode_step_work(&a, context, batch, 2);
                let flops: f64 = m.iter().map(|w| w.flops).sum();
                let want = decode_step_flops(&a, context).total() * batch as f64;
                assert!(
                    (flops / want - 1.0).abs() < 1e-12,
                    "{name}: {flops} vs {want}"
                );
                let bytes: f64 = m.iter().map(ModuleWork::step_bytes).sum();
                let want = decode_step_bytes(&a, context, batch, 2).total();
                assert!(
                    (bytes / want - 1.0).abs() < 1e-12,
                    "{name}: {bytes} vs {want}"
                );
                let layers = m.iter().filter_map(|w| w.index).max().unwrap() + 1;
                assert_eq!(layers as i64, a.num_hidden_layers, "{name}");
            }
        }
    }

    #[test]
    fn llama_3_1_8b_modules_read_what_their_weights_hold() {
        let (_, a) = presets()
            .into_iter()
            .find(|(n, _)| *n == "llama3_1_8b")
            .unwrap();
        let m = decode_step_work(&a, 1000, 1, 2);
        let get = |module: &str| {
            m.iter()
                .find(|w| w.module == module && w.index == Some(0))
                .unwrap()
        };
        // q 4096 + k 1024 + v 1024 outputs of 4096 inputs, bf16: 50.3 MB per layer, no bias.
        assert_eq!(
            get("layer.attention.qkv").weight_bytes,
            4096.0 * 6144.0 * 2.0
        );
        // The core reads the whole cache of its layer: 1000 keys × (K + V) 2 × 1024 × 2 B.
        assert_eq!(
            get("layer.attention.core").kv_bytes,
            1000.0 * 2.0 * 1024.0 * 2.0
        );
        assert_eq!(get("layer.mlp.down").weight_bytes, 14336.0 * 4096.0 * 2.0);
        // At batch 1 the step is bound by its bytes: every weight module's floor is its bytes.
        let qkv = get("layer.attention.qkv");
        let floor = qkv.floor_s(989.4e12, 3.35e12);
        let bytes = qkv.weight_bytes + qkv.activation_bytes;
        assert!((floor - bytes / 3.35e12).abs() < 1e-15);
    }
}
