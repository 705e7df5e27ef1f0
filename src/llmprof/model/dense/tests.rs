//! The analytic counts of each preset against hand computations from its real config.json.
use super::analytic::*;
use super::arch::DenseArch;
use super::hand_counts::hand;

/// The architecture of released model `name` from its config.json values
/// (tests/fixtures/released_configs/<name>.json, their sources in that folder's README; the
/// presets' YAML holds the same numbers, which tests/front_end checks).
pub(crate) fn preset(name: &str) -> DenseArch {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/released_configs")
        .join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    DenseArch::from_hf_config(&serde_json::from_str(&text).unwrap()).unwrap()
}

#[test]
fn analytic_counts_match_hand_computation_for_each_real_config() {
    for name in [
        "qwen2_5_0_5b",
        "qwen2_5_7b",
        "llama3_1_8b",
        "qwen3_0_6b",
        "mistral_7b_v0_3",
        "mixtral_8x7b",
        "qwen3_30b_a3b",
        "phi3_mini_4k",
        "gemma3_1b",
        "deepseek_v2_lite",
        "deepseek_v3",
        "llama3_1_70b",
    ] {
        let a = preset(name);
        let h = hand(name);
        assert_eq!(
            linear_flops_per_token(&a).total(),
            h.linear_per_token,
            "{name}"
        );
        assert_eq!(lm_head_flops(&a), h.lm_head, "{name}");
        assert_eq!(params(&a).total(), h.params, "{name}");
        // Keys seen summed over the layers, as a share of L: a sliding layer's at most W.
        let l = a.num_hidden_layers as f64;
        let share = |full: f64, windowed: f64| match h.window {
            Some((_, sliding)) => ((l - sliding) * full + sliding * windowed) / l,
            None => full,
        };
        let w = h.window.map_or(f64::INFINITY, |w| w.0);
        // Decode at c keys: linear + 4·q·L·c + lm_head.
        let c = 1000.0;
        assert_eq!(
            decode_step_flops(&a, 1000).total(),
            h.linear_per_token + h.attention_per_key * share(c, c.min(w)) + h.lm_head,
            "{name}"
        );
        // Prefill of S tokens, logits at the last: S·linear + attention over S(S+1)/2 keys
        // (W(W+1)/2 + (S − W)·W on a sliding layer) + lm_head.
        for s in [512.0, 2048.0] {
            let windowed = if s > w {
                w * (w + 1.0) / 2.0 + (s - w) * w
            } else {
                s * (s + 1.0) / 2.0
            };
            assert_eq!(
                prefill_flops(&a, s as i64, 1).total(),
                s * h.linear_per_token
                    + h.attention_per_key * share(s * (s + 1.0) / 2.0, windowed)
                    + h.lm_head,
                "{name}"
            );
        }
    }
}

#[test]
fn decode_bytes_count_a_tied_head_once_and_gqa_kv() {
    // Qwen2.5-0.5B in bf16, batch 1 at 100 keys: weights = every parameter once (the tied
    // matrix read by lm_head, no separate embedding rows), KV = 2·L·kv·2 bytes per key.
    let a = preset("qwen2_5_0_5b");
    let b = decode_step_bytes(&a, 100, 1, 2);
    assert_eq!(b.embedding_rows, 0.0);
    assert_eq!(b.layer_weights + b.lm_head, 2.0 * 494_032_768.0);
    assert_eq!(kv_bytes_per_token(&a, 2), 2 * 24 * 128 * 2);
    assert_eq!(b.kv_read, 100.0 * 12_288.0);
    // Untied Llama: the lm_head and one embedding row per batch row.
    let l = preset("llama3_1_8b");
    let lb = decode_step_bytes(&l, 10, 4, 2);
    assert_eq!(lb.embedding_rows, 4.0 * 4096.0 * 2.0);
    assert_eq!(
        lb.layer_weights + lb.lm_head,
        2.0 * (8_030_261_248.0 - 128_256.0 * 4096.0)
    );
}

#[test]
fn config_json_reading_and_validation() {
    let l = preset("llama3_1_8b");
    assert_eq!(l.head_dim, 128);
    assert_eq!(l.group_size(), 4);
    assert!(!l.attention_bias && l.rope_scaling.is_some());
    // Qwen2 has q/k/v bias without an attention_bias key.
    assert!(preset("qwen2_5_7b").attention_bias);
    let tiny = preset("qwen2_5_0_5b").tiny();
    tiny.validate().unwrap();
    assert!(tiny.attention_bias && tiny.tie_word_embeddings && tiny.group_size() > 1);
    let mut bad = l.clone();
    bad.num_key_value_heads = 5;
    assert!(format!("{}", bad.validate().unwrap_err()).contains("num_key_value_heads=5"));
    let mut bad = l;
    bad.rope_scaling.as_mut().unwrap().rope_type = "yarn".into();
    assert!(format!("{}", bad.validate().unwrap_err()).contains("yarn"));
}

#[test]
fn transformers_5_rope_parameters_are_read() {
    // transformers 5 saves Llama 3's RoPE as `rope_parameters` (and under the `rope_scaling`
    // name) with `rope_theta` inside, and no top-level `rope_theta`; Qwen2's default RoPE as
    // `{"rope_type": "default", "rope_theta": ...}`.
    let scaling = serde_json::json!({
        "rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
        "high_freq_factor": 4.0, "original_max_position_embeddings": 8192
    });
    let mut cfg = serde_json::json!({
        "model_type": "llama", "vocab_size": 128256, "hidden_size": 4096,
        "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 8, "rms_norm_eps": 1e-5, "max_position_embeddings": 131072,
        "bos_token_id": 128000, "eos_token_id": 128001,
        "rope_parameters": scaling, "rope_scaling": scaling
    });
    let a = DenseArch::from_hf_config(&cfg).expect("llama3");
    assert_eq!(a.rope_theta, 500000.0);
    let s = a.rope_scaling.expect("scaling");
    assert_eq!((s.rope_type.as_str(), s.factor), ("llama3", 8.0));
    cfg["rope_parameters"] = serde_json::json!({"rope_type": "default", "rope_theta": 1e6});
    cfg.as_object_mut().expect("object").remove("rope_scaling");
    let q = DenseArch::from_hf_config(&cfg).expect("default rope");
    assert_eq!((q.rope_theta, q.rope_scaling), (1e6, None));
}

#[test]
fn sliding_windows_are_read_where_the_model_type_applies_them() {
    let base = |extra: serde_json::Value| {
        let mut v = serde_json::json!({
            "vocab_size": 512, "hidden_size": 64, "intermediate_size": 128,
            "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
            "max_position_embeddings": 2048, "bos_token_id": 1, "eos_token_id": 2});
        v.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let a = DenseArch::from_hf_config(&v).unwrap();
        a.sliding_window.map(|w| (w, a.sliding_layers()))
    };
    assert_eq!(
        base(serde_json::json!({"model_type": "mistral", "sliding_window": 4096})),
        Some((4096, vec![0, 1]))
    );
    assert_eq!(
        base(serde_json::json!({"model_type": "mistral", "sliding_window": null})),
        None
    );
    // Qwen2/3 carry a window but apply it only with use_sliding_window, from max_window_layers
    // on (transformers' default 28: here every layer attends over the whole context);
    // Qwen3-MoE has no max_window_layers: every layer slides.
    assert_eq!(
        base(serde_json::json!({"model_type": "qwen3", "sliding_window": 4096})),
        None
    );
    assert_eq!(
        base(
            serde_json::json!({"model_type": "qwen2", "sliding_window": 4096,
            "use_sliding_window": true, "max_window_layers": 1})
        ),
        Some((4096, vec![1]))
    );
    assert_eq!(
        base(
            serde_json::json!({"model_type": "qwen3", "sliding_window": 4096,
            "use_sliding_window": true})
        ),
        None
    );
    assert_eq!(
        base(
            serde_json::json!({"model_type": "qwen3_moe", "sliding_window": 4096,
            "use_sliding_window": true, "max_window_layers": 2, "num_experts": 8,
            "num_experts_per_tok": 2, "moe_intermediate_size": 32})
        ),
        Some((4096, vec![0, 1]))
    );
    assert_eq!(
        base(serde_json::json!({"model_type": "llama", "sliding_window": 4096})),
        None
    );
}

#[test]
fn rope_on_part_of_each_head_is_refused_by_name() {
    let v = serde_json::json!({
        "model_type": "phi3", "vocab_size": 512, "hidden_size": 64, "intermediate_size": 128,
        "num_hidden_layers": 2, "num_attention_heads": 4, "max_position_embeddings": 2048,
        "bos_token_id": 1, "eos_token_id": 2,
        "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0,
            "partial_rotary_factor": 0.5}});
    let err = format!("{:#}", DenseArch::from_hf_config(&v).unwrap_err());
    assert!(err.contains("partial_rotary_factor=0.5"), "{err}");
    let mut full = v.clone();
    full["rope_parameters"]["partial_rotary_factor"] = 1.0.into();
    let a = DenseArch::from_hf_config(&full).unwrap();
    assert!(a.packed_projections && a.rope_scaling.is_none());
}

#[test]
fn gemma3_reads_its_layer_pattern_and_refuses_what_is_not_implemented() {
    let a = preset("gemma3_1b");
    let s = a.sandwich.as_ref().expect("gemma's structure");
    // Every sixth layer is global (5, 11, 17, 23); the others local with RoPE base 10,000.
    assert_eq!(s.local_layers.len(), 22);
    assert!(![5, 11, 17, 23].iter().any(|i| s.local_layers.contains(i)));
    assert_eq!((s.local_rope_theta, a.rope_theta), (10_000.0, 1_000_000.0));
    assert_eq!(a.sliding_window, Some(512));
    assert!(a.qk_norm);
    // 1B scales scores by 1/√256 = 1/√head_dim: no query factor; 27B's 1/√168 with head_dim 128
    // is a factor √(128/168) on each query.
    assert_eq!((s.query_pre_attn_scalar, s.query_factor(256)), (None, 1.0));
    let mut big = serde_json::to_value(s).unwrap();
    big["query_pre_attn_scalar"] = serde_json::json!(168.0);
    let big: super::gemma::Sandwich = serde_json::from_value(big).unwrap();
    assert!((big.query_factor(128) - (128f64 / 168.0).sqrt()).abs() < 1e-15);
    let base = serde_json::json!({
        "model_type": "gemma3_text", "vocab_size": 512, "hidden_size": 64,
        "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
        "head_dim": 16, "max_position_embeddings": 2048, "bos_token_id": 2, "eos_token_id": 1});
    for (key, value, says) in [
        (
            "final_logit_softcapping",
            serde_json::json!(30.0),
            "soft-capping",
        ),
        (
            "rope_scaling",
            serde_json::json!({"rope_type": "yarn", "factor": 8.0}),
            "RoPE scaling yarn of the global layers is not implemented",
        ),
    ] {
        let mut v = base.clone();
        v[key] = value;
        let err = format!("{:#}", DenseArch::from_hf_config(&v).unwrap_err());
        assert!(err.contains(says), "{key}: {err}");
    }
    // Gemma 3 4B to 27B: the global layers' RoPE linearly scaled ×8 (released config.json form).
    let mut v = base.clone();
    v["rope_scaling"] = serde_json::json!({"rope_type": "linear", "factor": 8.0});
    let a = DenseArch::from_hf_config(&v).unwrap();
    assert_eq!(a.sandwich.unwrap().global_rope_factor, Some(8.0));
    assert_eq!(a.rope_scaling, None);
}

#[test]
fn deepseek_configs_read_their_mla_routing_and_yarn() {
    let lite = preset("deepseek_v2_lite");
    let mla = lite.mla.as_ref().unwrap();
    assert_eq!((mla.q_lora_rank, mla.latent_width()), (None, 576));
    assert!(mla.rope_interleave && lite.head_dim == 64 && lite.rope_scaling.is_none());
    let moe = lite.moe.as_ref().unwrap();
    assert_eq!(moe.dense_layers, vec![0]);
    assert_eq!(moe.shared_intermediate_size, 2 * 1408);
    assert!(moe.group_limit.is_none() && !moe.norm_topk_prob);
    assert_eq!(moe.scoring, super::Scoring::Softmax);
    // The cache holds one latent + RoPE key per token and layer: 27·576·2 bytes in bf16.
    assert_eq!(kv_bytes_per_token(&lite, 2), 27 * 576 * 2);
    // YaRN (factor 40, mscale = mscale_all_dim = 0.707): cos/sin unscaled, the softmax scale
    // × (0.1·0.707·ln 40 + 1)².
    let y = mla.yarn.as_ref().unwrap();
    assert_eq!(y.attention_factor(), 1.0);
    let m = 0.1 * 0.707 * 40f64.ln() + 1.0;
    assert!((mla.softmax_scale() - m * m / 192f64.sqrt()).abs() < 1e-15);
    // 64 RoPE dims at θ 10⁴ from 4096 positions: the correction dims are
    // 64·ln(4096/(32·2π))/(2·ln 10⁴) = 10.47 → 10 and 64·ln(4096/2π)/(2·ln 10⁴) = 22.51 → 23;
    // frequencies up to 10 are kept, from 23 on ÷ 40, between them blended linearly.
    let f = y.inv_freq(64, 1e4);
    let base = |i: i64| 1e4f64.powf(-2.0 * i as f64 / 64.0);
    assert!((f[0] - 1.0).abs() < 1e-15 && (f[10] - base(10)).abs() < 1e-15);
    assert!((f[31] - base(31) / 40.0).abs() < 1e-18);
    let ramp = 6.0 / 13.0;
    assert!((f[16] - (base(16) / 40.0 * ramp + base(16) * (1.0 - ramp))).abs() < 1e-15);

    let v3 = preset("deepseek_v3");
    let moe = v3.moe.as_ref().unwrap();
    assert_eq!(moe.dense_layers, vec![0, 1, 2]);
    assert_eq!(moe.scoring, super::Scoring::Sigmoid);
    assert_eq!(
        moe.group_limit,
        Some(super::GroupLimit {
            groups: 8,
            top_groups: 4,
            group_score: super::GroupScore::Top2Sum
        })
    );
    assert!(moe.norm_topk_prob && moe.routed_scaling_factor == 2.5);
    assert_eq!(v3.mla.as_ref().unwrap().q_lora_rank, Some(1536));
    // The tiny forms keep the structure and validate.
    for a in [lite, v3] {
        let t = a.tiny();
        t.validate().unwrap();
        assert!(t.mla.is_some() && t.moe.as_ref().unwrap().shared_intermediate_size > 0);
    }
}

#[test]
fn a_bad_group_limit_is_refused_by_name() {
    let mut a = preset("deepseek_v3");
    a.moe.as_mut().unwrap().group_limit.as_mut().unwrap().groups = 7;
    let e = a.validate().unwrap_err().to_string();
    assert!(e.contains("groups=7 must divide num_experts=256"), "{e}");
}
