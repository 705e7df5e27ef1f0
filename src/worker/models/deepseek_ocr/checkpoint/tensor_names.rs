//! The official checkpoint layout (docs/deepseek-ocr.md §6, §10): every tensor's name and shape,
//! by loadable part (SAM, the encoder after it, projector, decoder), from the architecture.
use llmprof::model::deepseek_ocr::arch::ArchConfig;

/// A group of tensors that can be loaded on its own (e.g. decoder-only or SAM-only files).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Part {
    /// `model.embed_tokens`, `model.layers.*`, `model.norm`, `lm_head`.
    Decoder,
    /// `model.sam_model.*`.
    Sam,
    /// The encoder after SAM: CLIP-L `model.vision_model.*` (DeepSeek-OCR), or the query encoder
    /// `model.qwen2_model.*` (DeepSeek-OCR-2).
    Encoder,
    /// `model.projector.*`, `model.image_newline` (DeepSeek-OCR only), `model.view_seperator`.
    Projector,
}

impl Part {
    pub const ALL: [Part; 4] = [Part::Decoder, Part::Sam, Part::Encoder, Part::Projector];
}

pub use crate::checkpoint::tensors::TensorSpec;

/// Every tensor of `part` under its official name (docs/deepseek-ocr.md §6), in checkpoint order.
pub fn expected_tensors(cfg: &ArchConfig, part: Part) -> Vec<TensorSpec> {
    let mut v = Vec::new();
    let mut add = |name: String, shape: &[i64]| {
        v.push(TensorSpec {
            name,
            shape: shape.to_vec(),
        })
    };
    match part {
        Part::Decoder => {
            let d = &cfg.decoder;
            let (h, q, kv) = (
                d.hidden_size,
                d.num_attention_heads * d.head_dim,
                d.num_key_value_heads * d.head_dim,
            );
            add("model.embed_tokens.weight".into(), &[d.vocab_size, h]);
            for i in 0..d.num_hidden_layers {
                let p = format!("model.layers.{i}");
                add(format!("{p}.input_layernorm.weight"), &[h]);
                add(format!("{p}.post_attention_layernorm.weight"), &[h]);
                add(format!("{p}.self_attn.q_proj.weight"), &[q, h]);
                add(format!("{p}.self_attn.k_proj.weight"), &[kv, h]);
                add(format!("{p}.self_attn.v_proj.weight"), &[kv, h]);
                add(format!("{p}.self_attn.o_proj.weight"), &[h, q]);
                if i < d.first_k_dense_replace {
                    let f = d.intermediate_size;
                    add(format!("{p}.mlp.gate_proj.weight"), &[f, h]);
                    add(format!("{p}.mlp.up_proj.weight"), &[f, h]);
                    add(format!("{p}.mlp.down_proj.weight"), &[h, f]);
                } else {
                    let f = d.moe_intermediate_size;
                    add(format!("{p}.mlp.gate.weight"), &[d.n_routed_experts, h]);
                    for e in 0..d.n_routed_experts {
                        add(format!("{p}.mlp.experts.{e}.gate_proj.weight"), &[f, h]);
                        add(format!("{p}.mlp.experts.{e}.up_proj.weight"), &[f, h]);
                        add(format!("{p}.mlp.experts.{e}.down_proj.weight"), &[h, f]);
                    }
                    if d.n_shared_experts > 0 {
                        let fs = cfg.shared_intermediate();
                        add(format!("{p}.mlp.shared_experts.gate_proj.weight"), &[fs, h]);
                        add(format!("{p}.mlp.shared_experts.up_proj.weight"), &[fs, h]);
                        add(format!("{p}.mlp.shared_experts.down_proj.weight"), &[h, fs]);
                    }
                }
            }
            add("model.norm.weight".into(), &[h]);
            add("lm_head.weight".into(), &[d.vocab_size, h]);
        }
        Part::Sam => {
            let s = &cfg.sam;
            let (w, g, hd) = (s.width, cfg.sam_pos_grid(), s.width / s.heads);
            let p = "model.sam_model";
            add(
                format!("{p}.patch_embed.proj.weight"),
                &[w, 3, s.patch_size, s.patch_size],
            );
            add(format!("{p}.patch_embed.proj.bias"), &[w]);
            add(format!("{p}.pos_embed"), &[1, g, g, w]);
            for i in 0..s.depth {
                let b = format!("{p}.blocks.{i}");
                let l = if s.global_attn_indexes.contains(&i) {
                    g
                } else {
                    s.window_size
                };
                for n in ["norm1", "norm2"] {
                    add(format!("{b}.{n}.weight"), &[w]);
                    add(format!("{b}.{n}.bias"), &[w]);
                }
                add(format!("{b}.attn.qkv.weight"), &[3 * w, w]);
                add(format!("{b}.attn.qkv.bias"), &[3 * w]);
                add(format!("{b}.attn.proj.weight"), &[w, w]);
                add(format!("{b}.attn.proj.bias"), &[w]);
                add(format!("{b}.attn.rel_pos_h"), &[2 * l - 1, hd]);
                add(format!("{b}.attn.rel_pos_w"), &[2 * l - 1, hd]);
                add(format!("{b}.mlp.lin1.weight"), &[s.mlp_dim, w]);
                add(format!("{b}.mlp.lin1.bias"), &[s.mlp_dim]);
                add(format!("{b}.mlp.lin2.weight"), &[w, s.mlp_dim]);
                add(format!("{b}.mlp.lin2.bias"), &[w]);
            }
            let o = s.out_chans;
            add(format!("{p}.neck.0.weight"), &[o, w, 1, 1]);
            add(format!("{p}.neck.1.weight"), &[o]);
            add(format!("{p}.neck.1.bias"), &[o]);
            add(format!("{p}.neck.2.weight"), &[o, o, 3, 3]);
            add(format!("{p}.neck.3.weight"), &[o]);
            add(format!("{p}.neck.3.bias"), &[o]);
            let mut cin = o;
            for (k, &cout) in s.downsample_channels.iter().enumerate() {
                add(format!("{p}.net_{}.weight", k + 2), &[cout, cin, 3, 3]);
                cin = cout;
            }
        }
        Part::Encoder => {
            if let Some(c) = &cfg.clip {
                let (w, m) = (c.width, c.mlp_dim);
                let p = "model.vision_model";
                add(format!("{p}.embeddings.class_embedding"), &[w]);
                add(
                    format!("{p}.embeddings.patch_embedding.weight"),
                    &[w, 3, c.patch_size, c.patch_size],
                );
                add(
                    format!("{p}.embeddings.position_embedding.weight"),
                    &[c.num_positions, w],
                );
                add(format!("{p}.pre_layrnorm.weight"), &[w]);
                add(format!("{p}.pre_layrnorm.bias"), &[w]);
                for i in 0..c.layers {
                    let l = format!("{p}.transformer.layers.{i}");
                    for n in ["layer_norm1", "layer_norm2"] {
                        add(format!("{l}.{n}.weight"), &[w]);
                        add(format!("{l}.{n}.bias"), &[w]);
                    }
                    add(format!("{l}.self_attn.qkv_proj.weight"), &[3 * w, w]);
                    add(format!("{l}.self_attn.qkv_proj.bias"), &[3 * w]);
                    add(format!("{l}.self_attn.out_proj.weight"), &[w, w]);
                    add(format!("{l}.self_attn.out_proj.bias"), &[w]);
                    add(format!("{l}.mlp.fc1.weight"), &[m, w]);
                    add(format!("{l}.mlp.fc1.bias"), &[m]);
                    add(format!("{l}.mlp.fc2.weight"), &[w, m]);
                    add(format!("{l}.mlp.fc2.bias"), &[w]);
                }
            }
            if let Some(q) = &cfg.query_encoder {
                let h = q.hidden_size;
                let (qd, kv) = (
                    q.num_attention_heads * q.head_dim,
                    q.num_key_value_heads * q.head_dim,
                );
                let f = q.intermediate_size;
                let p = "model.qwen2_model.model.model";
                for i in 0..q.num_hidden_layers {
                    let l = format!("{p}.layers.{i}");
                    add(format!("{l}.self_attn.q_proj.weight"), &[qd, h]);
                    add(format!("{l}.self_attn.q_proj.bias"), &[qd]);
                    add(format!("{l}.self_attn.k_proj.weight"), &[kv, h]);
                    add(format!("{l}.self_attn.k_proj.bias"), &[kv]);
                    add(format!("{l}.self_attn.v_proj.weight"), &[kv, h]);
                    add(format!("{l}.self_attn.v_proj.bias"), &[kv]);
                    add(format!("{l}.self_attn.o_proj.weight"), &[h, qd]);
                    add(format!("{l}.mlp.gate_proj.weight"), &[f, h]);
                    add(format!("{l}.mlp.up_proj.weight"), &[f, h]);
                    add(format!("{l}.mlp.down_proj.weight"), &[h, f]);
                    add(format!("{l}.input_layernorm.weight"), &[h]);
                    add(format!("{l}.post_attention_layernorm.weight"), &[h]);
                }
                add(format!("{p}.norm.weight"), &[h]);
                for &side in &q.query_views {
                    let n = llmprof::model::deepseek_ocr::QueryEncoderConfig::queries(
                        side,
                        cfg.pixels_per_token(),
                    );
                    add(format!("model.qwen2_model.query_{side}.weight"), &[n, h]);
                }
            }
        }
        Part::Projector => {
            let (n, i) = (cfg.projector.n_embed, cfg.projector.input_dim);
            add("model.projector.layers.weight".into(), &[n, i]);
            add("model.projector.layers.bias".into(), &[n]);
            if cfg.clip.is_some() {
                add("model.image_newline".into(), &[n]);
            }
            add("model.view_seperator".into(), &[n]);
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use llmprof::model::deepseek_ocr::analytic_bytes::params_by_module;
    use std::collections::HashMap;

    fn tensor_sum(cfg: &ArchConfig, part: Part, prefix: &str) -> u64 {
        expected_tensors(cfg, part)
            .iter()
            .filter(|t| t.name.starts_with(prefix))
            .map(TensorSpec::numel)
            .sum::<i64>() as u64
    }

    /// Same sums as the checkpoint tensor list, for both constructors.
    #[test]
    fn sums_match_expected_tensors() {
        for cfg in [
            ArchConfig::deepseek_ocr(),
            ArchConfig::tiny(),
            ArchConfig::deepseek_ocr2(),
            ArchConfig::tiny_ocr2(),
        ] {
            let p = params_by_module(&cfg);
            assert_eq!(p.sam, tensor_sum(&cfg, Part::Sam, ""));
            assert_eq!(p.clip, tensor_sum(&cfg, Part::Encoder, ""));
            assert_eq!(p.projector, tensor_sum(&cfg, Part::Projector, ""));
            assert_eq!(p.decoder(), tensor_sum(&cfg, Part::Decoder, ""));
            for (i, l) in p.layers.iter().enumerate() {
                let layer = format!("model.layers.{i}.");
                assert_eq!(
                    l.total(),
                    tensor_sum(&cfg, Part::Decoder, &layer),
                    "layer {i}"
                );
                let attn = tensor_sum(&cfg, Part::Decoder, &format!("{layer}self_attn."));
                assert_eq!(l.attention, attn);
                let experts = tensor_sum(&cfg, Part::Decoder, &format!("{layer}mlp.experts."));
                assert_eq!(l.routed_experts, experts);
            }
            let rows: u64 = p.rows().iter().map(|(_, n)| n).sum();
            assert_eq!(rows, p.total());
        }
    }

    #[test]
    fn ocr2_layout_matches_the_released_index() {
        // DeepSeek-OCR-2's model.safetensors.index.json: 2,707 tensors (v1's 2,710 − 293 CLIP −
        // image_newline + 24·12 encoder tensors + norm + 2 query tables), 3,389,119,360 params.
        let cfg = ArchConfig::deepseek_ocr2();
        let all: HashMap<String, Vec<i64>> = Part::ALL
            .iter()
            .flat_map(|&p| expected_tensors(&cfg, p))
            .map(|t| (t.name, t.shape))
            .collect();
        assert_eq!(all.len(), 2_707);
        let total: i64 = all.values().map(|s| s.iter().product::<i64>()).sum();
        assert_eq!(total, 3_389_119_360);
        let q = "model.qwen2_model.model.model.layers.23.self_attn";
        assert_eq!(all[&format!("{q}.k_proj.weight")], vec![128, 896]);
        assert_eq!(all[&format!("{q}.q_proj.bias")], vec![896]);
        assert_eq!(all["model.qwen2_model.query_768.weight"], vec![144, 896]);
        assert_eq!(all["model.qwen2_model.query_1024.weight"], vec![256, 896]);
        assert_eq!(all["model.sam_model.net_3.weight"], vec![896, 512, 3, 3]);
        assert_eq!(all["model.projector.layers.weight"], vec![1280, 896]);
        assert!(!all.contains_key("model.image_newline"));
        assert!(!all.keys().any(|k| k.starts_with("model.vision_model.")));
    }

    #[test]
    fn official_layout_matches_spec_counts() {
        let cfg = ArchConfig::deepseek_ocr();
        let count = |p: Part| -> (usize, i64) {
            let v = expected_tensors(&cfg, p);
            (v.len(), v.iter().map(TensorSpec::numel).sum())
        };
        let (nd, pd) = count(Part::Decoder);
        let (ns, ps) = count(Part::Sam);
        let (nc, pc) = count(Part::Encoder);
        let (np, pp) = count(Part::Projector);
        // Spec §6 parameter table.
        assert_eq!(pd, 2_934_734_080);
        assert_eq!(ps, 95_569_152);
        assert_eq!(pc, 303_177_728);
        assert_eq!(pp, 2_625_280);
        assert_eq!(pd + ps + pc + pp, 3_336_106_240);
        assert_eq!(nd + ns + nc + np, 2_710);
        // Spot checks of names/shapes from §6.
        let all: HashMap<String, Vec<i64>> = Part::ALL
            .iter()
            .flat_map(|&p| expected_tensors(&cfg, p))
            .map(|t| (t.name, t.shape))
            .collect();
        assert_eq!(
            all["model.sam_model.blocks.2.attn.rel_pos_h"],
            vec![127, 64]
        );
        assert_eq!(all["model.sam_model.blocks.3.attn.rel_pos_w"], vec![27, 64]);
        assert_eq!(
            all["model.layers.11.mlp.experts.63.down_proj.weight"],
            vec![1280, 896]
        );
        assert_eq!(
            all["model.layers.1.mlp.shared_experts.gate_proj.weight"],
            vec![1792, 1280]
        );
        assert_eq!(all["model.layers.0.mlp.down_proj.weight"], vec![1280, 6848]);
        assert_eq!(all["model.sam_model.net_3.weight"], vec![1024, 512, 3, 3]);
        assert_eq!(all["model.vision_model.pre_layrnorm.bias"], vec![1024]);
        assert!(all.contains_key("model.view_seperator"));
        assert!(!all.contains_key("model.layers.0.mlp.gate.weight"));
    }
}
