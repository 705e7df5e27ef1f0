//! The official HF checkpoint layout of a decoder of this family (Qwen2, Qwen3, Llama, Mistral,
//! Phi-3, Gemma 3, with experts Mixtral and Qwen3-MoE, with MLA DeepSeek-V2/V3):
//! every tensor's name and shape from the architecture, loading a checkpoint folder (sharded
//! with `model.safetensors.index.json` or not) checked against it, and seeded synthetic tensors
//! under the same names.
use crate::checkpoint::tensors::{read_checked_kept, TensorSpec};
use anyhow::Result;
use llmprof::model::dense::{DenseArch, Mla, MoeNames, Scoring};
use std::collections::HashMap;
use std::path::Path;
use tch::{Device, Kind, Tensor};

/// Every tensor under its official name, in checkpoint order.
pub fn expected_tensors(a: &DenseArch) -> Vec<TensorSpec> {
    let (h, q, kv, f) = (
        a.hidden_size,
        a.num_attention_heads * a.head_dim,
        a.num_key_value_heads * a.head_dim,
        a.intermediate_size,
    );
    let mut v = Vec::new();
    let mut add = |name: String, shape: &[i64]| {
        v.push(TensorSpec {
            name,
            shape: shape.to_vec(),
        })
    };
    add("model.embed_tokens.weight".into(), &[a.vocab_size, h]);
    for i in 0..a.num_hidden_layers {
        let p = format!("model.layers.{i}");
        add(format!("{p}.input_layernorm.weight"), &[h]);
        add(format!("{p}.post_attention_layernorm.weight"), &[h]);
        if a.sandwich.is_some() {
            add(format!("{p}.pre_feedforward_layernorm.weight"), &[h]);
            add(format!("{p}.post_feedforward_layernorm.weight"), &[h]);
        }
        if let Some(m) = &a.mla {
            for (name, shape) in mla_tensors(m, h, a.num_attention_heads) {
                add(format!("{p}.self_attn.{name}"), &shape);
            }
        } else if a.packed_projections {
            add(format!("{p}.self_attn.qkv_proj.weight"), &[q + 2 * kv, h]);
        } else {
            for (n, rows) in [("q_proj", q), ("k_proj", kv), ("v_proj", kv)] {
                add(format!("{p}.self_attn.{n}.weight"), &[rows, h]);
                if a.attention_bias {
                    add(format!("{p}.self_attn.{n}.bias"), &[rows]);
                }
            }
        }
        if a.qk_norm {
            add(format!("{p}.self_attn.q_norm.weight"), &[a.head_dim]);
            add(format!("{p}.self_attn.k_norm.weight"), &[a.head_dim]);
        }
        if a.mla.is_none() {
            add(format!("{p}.self_attn.o_proj.weight"), &[h, q]);
        }
        match &a.moe {
            Some(m) if m.in_layer(i) => {
                let (e, fe) = (m.num_experts, m.expert_intermediate_size);
                let (at, [gate, up, down]) = moe_names(m.names);
                add(format!("{p}.{at}.gate.weight"), &[e, h]);
                if m.scoring == Scoring::Sigmoid {
                    add(format!("{p}.{at}.gate.e_score_correction_bias"), &[e]);
                }
                if m.shared_intermediate_size > 0 {
                    let (sp, fs) = (
                        format!("{p}.{at}.shared_experts"),
                        m.shared_intermediate_size,
                    );
                    add(format!("{sp}.gate_proj.weight"), &[fs, h]);
                    add(format!("{sp}.up_proj.weight"), &[fs, h]);
                    add(format!("{sp}.down_proj.weight"), &[h, fs]);
                }
                for x in 0..e {
                    let ep = format!("{p}.{at}.experts.{x}");
                    add(format!("{ep}.{gate}.weight"), &[fe, h]);
                    add(format!("{ep}.{up}.weight"), &[fe, h]);
                    add(format!("{ep}.{down}.weight"), &[h, fe]);
                }
            }
            _ if a.packed_projections => {
                add(format!("{p}.mlp.gate_up_proj.weight"), &[2 * f, h]);
                add(format!("{p}.mlp.down_proj.weight"), &[h, f]);
            }
            _ => {
                add(format!("{p}.mlp.gate_proj.weight"), &[f, h]);
                add(format!("{p}.mlp.up_proj.weight"), &[f, h]);
                add(format!("{p}.mlp.down_proj.weight"), &[h, f]);
            }
        }
    }
    add("model.norm.weight".into(), &[h]);
    if !a.tie_word_embeddings {
        add("lm_head.weight".into(), &[a.vocab_size, h]);
    }
    v
}

/// A layer's MLA tensors below `self_attn` (names and shapes as released).
fn mla_tensors(m: &Mla, h: i64, heads: i64) -> Vec<(&'static str, Vec<i64>)> {
    let q_out = heads * m.qk_head_dim();
    let mut v = match m.q_lora_rank {
        None => vec![("q_proj.weight", vec![q_out, h])],
        Some(r) => vec![
            ("q_a_proj.weight", vec![r, h]),
            ("q_a_layernorm.weight", vec![r]),
            ("q_b_proj.weight", vec![q_out, r]),
        ],
    };
    v.extend([
        ("kv_a_proj_with_mqa.weight", vec![m.latent_width(), h]),
        ("kv_a_layernorm.weight", vec![m.kv_lora_rank]),
        (
            "kv_b_proj.weight",
            vec![heads * (m.qk_nope_head_dim + m.v_head_dim), m.kv_lora_rank],
        ),
        ("o_proj.weight", vec![h, heads * m.v_head_dim]),
    ]);
    v
}

/// Where a layer's experts live and their projections' names (gate, up, down).
pub fn moe_names(names: MoeNames) -> (&'static str, [&'static str; 3]) {
    match names {
        MoeNames::Mixtral => ("block_sparse_moe", ["w1", "w3", "w2"]),
        MoeNames::Hf => ("mlp", ["gate_proj", "up_proj", "down_proj"]),
    }
}

/// Loads every expected tensor from the checkpoint file or folder `path`. A tied checkpoint may
/// still carry `lm_head.weight` (some exports do): it is accepted and ignored.
pub fn load(
    path: &Path,
    a: &DenseArch,
    device: Device,
    kind: Kind,
) -> Result<HashMap<String, Tensor>> {
    load_kept(path, a, (device, kind), &|_, t| Ok(t))
}

/// [`load`] with `keep(name, tensor)` applied to each tensor as it is read (on the CPU, before
/// the device): a tensor-parallel rank reads its slices with no more than one whole tensor at a
/// time beside them, so a checkpoint larger than one GPU loads on its ranks.
pub fn load_kept(
    path: &Path,
    a: &DenseArch,
    (device, kind): (Device, Kind),
    keep: &dyn Fn(&str, Tensor) -> Result<Tensor>,
) -> Result<HashMap<String, Tensor>> {
    let tied = a.tie_word_embeddings;
    read_checked_kept(
        path,
        &expected_tensors(a),
        (&|n| tied && n == "lm_head.weight", "dense decoder"),
        (device, kind),
        keep,
    )
}

/// Seeded random tensors with the official names and shapes (HF init: normal with std 0.02 for
/// weights and biases, norms 1); linear weights use 1/√fan_in so activations keep their scale.
pub fn synthetic(
    a: &DenseArch,
    seed: i64,
    device: Device,
    kind: Kind,
) -> Result<HashMap<String, Tensor>> {
    synthetic_kept(a, seed, (device, kind), |_, t| Ok(t))
}

/// [`synthetic`] with `keep(name, tensor)` applied to each tensor as it is drawn (a tensor-parallel
/// rank keeps its slice): the values are [`synthetic`]'s, and no more than one whole tensor
/// exists at a time beside what is kept.
pub fn synthetic_kept(
    a: &DenseArch,
    seed: i64,
    (device, kind): (Device, Kind),
    keep: impl Fn(&str, Tensor) -> Result<Tensor>,
) -> Result<HashMap<String, Tensor>> {
    tch::manual_seed(seed);
    let mut out = HashMap::new();
    for t in expected_tensors(a) {
        let x = if t.name.ends_with("norm.weight") {
            Tensor::f_ones(&t.shape, (Kind::Float, device))?
        } else {
            let std = if t.name == "model.embed_tokens.weight" {
                1.0
            } else if t.shape.len() == 2 {
                1.0 / (t.shape[1] as f64).sqrt()
            } else {
                0.02
            };
            Tensor::f_randn(&t.shape, (Kind::Float, device))?.f_mul_scalar(std)?
        };
        let x = keep(&t.name, x.f_to_kind(kind)?)?;
        crate::heartbeat::beat(|| format!("drawing the weights ({})", t.name));
        out.insert(t.name, x);
    }
    Ok(out)
}
