//! Analytic FLOPs (FLOP = 2 × multiply-accumulate), parameters and bytes of a dense decoder
//! (docs/models.md, "Analytic counts"). Per token and layer, with H = hidden_size,
//! q = heads·head_dim, kv = kv_heads·head_dim, F = intermediate_size, V = vocab_size:
//! - projections 2·H·(q + 2·kv) + 2·q·H (q/k/v/o; GQA shrinks k and v), biases not counted;
//! - SwiGLU MLP 3·2·H·F;
//! - attention core 4·q·c for a query that sees c keys (q·kᵀ and p·v over all query heads; a
//!   sliding layer's query sees at most its window: model/dense/window.rs);
//! - multi-head latent attention (DeepSeek) as it runs, absorbed: model/dense/mla.rs;
//! - lm_head 2·H·V per position whose logits are computed (prefill: the last one only).
//!
//! A tied lm_head is the embedding matrix: its parameters and bytes are counted once (under
//! `embed_tokens`), its FLOPs as usual.
use super::arch::DenseArch;
use serde::Serialize;

/// Matmul FLOPs of one token over all layers (lm_head excluded).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct LinearFlops {
    pub attention_proj: f64,
    pub mlp: f64,
}

impl LinearFlops {
    pub fn total(&self) -> f64 {
        self.attention_proj + self.mlp
    }
}

fn widths(a: &DenseArch) -> (f64, f64, f64) {
    (
        a.hidden_size as f64,
        (a.num_attention_heads * a.head_dim) as f64,
        (a.num_key_value_heads * a.head_dim) as f64,
    )
}

/// Layers with a dense MLP and layers with the experts.
fn mlp_layers(a: &DenseArch) -> (f64, f64) {
    let moe = match &a.moe {
        Some(m) => (0..a.num_hidden_layers).filter(|&i| m.in_layer(i)).count(),
        None => 0,
    } as f64;
    (a.num_hidden_layers as f64 - moe, moe)
}

/// One layer's attention matmul FLOPs per token outside the core.
fn attention_proj_flops(a: &DenseArch) -> f64 {
    let (h, q, kv) = widths(a);
    match &a.mla {
        Some(m) => m.projection_flops(a.hidden_size, a.num_attention_heads),
        None => 2.0 * h * (q + 2.0 * kv) + 2.0 * q * h,
    }
}

/// One layer's attention core FLOPs for one query token per key it sees.
pub fn core_flops_per_key(a: &DenseArch) -> f64 {
    match &a.mla {
        Some(m) => m.core_flops_per_key(a.num_attention_heads),
        None => 4.0 * widths(a).1,
    }
}

/// Matmul FLOPs of one token (all layers): a dense layer's SwiGLU 6·H·F; an MoE layer's router
/// 2·H·E, top-k experts k·6·H·F_e and shared experts 6·H·F_s.
pub fn linear_flops_per_token(a: &DenseArch) -> LinearFlops {
    let h = a.hidden_size as f64;
    let l = a.num_hidden_layers as f64;
    let (dense, moe) = mlp_layers(a);
    let experts = a.moe.as_ref().map_or(0.0, |m| {
        2.0 * h * m.num_experts as f64
            + m.num_experts_per_tok as f64 * 6.0 * h * m.expert_intermediate_size as f64
            + 6.0 * h * m.shared_intermediate_size as f64
    });
    LinearFlops {
        attention_proj: l * attention_proj_flops(a),
        mlp: dense * 3.0 * 2.0 * h * a.intermediate_size as f64 + moe * experts,
    }
}

/// Parameters of one MoE layer's experts, shared experts and router (with its score correction
/// bias under sigmoid scoring), and of those a step of `batch` rows reads (the expected
/// distinct experts); 0 without experts.
fn moe_layer_params(a: &DenseArch, batch: Option<i64>) -> f64 {
    a.moe.as_ref().map_or(0.0, |m| {
        let (e, k) = (m.num_experts as f64, m.num_experts_per_tok as f64);
        let read = match batch {
            Some(b) => crate::model::module_work::expected_distinct_experts(e, k, b),
            None => e,
        };
        let h = a.hidden_size as f64;
        let bias = if m.scoring == super::Scoring::Sigmoid {
            e
        } else {
            0.0
        };
        e * h
            + bias
            + read * 3.0 * h * m.expert_intermediate_size as f64
            + 3.0 * h * m.shared_intermediate_size as f64
    })
}

/// lm_head FLOPs for one position.
pub fn lm_head_flops(a: &DenseArch) -> f64 {
    2.0 * (a.hidden_size * a.vocab_size) as f64
}

/// FLOPs of one forward pass of `tokens` new tokens per row over a context that already held
/// `past` tokens, with logits at `logits_positions` positions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ForwardFlops {
    pub linear: LinearFlops,
    /// Causal attention core: Σ over the new tokens of 4·q·(keys seen), all layers.
    pub attention: f64,
    pub lm_head: f64,
}

impl ForwardFlops {
    pub fn total(&self) -> f64 {
        self.linear.total() + self.attention + self.lm_head
    }
}

/// Prefill of one prompt of `prompt_len` tokens, logits at `logits_positions` positions (ours: 1).
pub fn prefill_flops(a: &DenseArch, prompt_len: i64, logits_positions: i64) -> ForwardFlops {
    let s = prompt_len as f64;
    let lin = linear_flops_per_token(a);
    ForwardFlops {
        linear: LinearFlops {
            attention_proj: lin.attention_proj * s,
            mlp: lin.mlp * s,
        },
        attention: core_flops_per_key(a) * a.prefill_keys_all_layers(s),
        lm_head: logits_positions as f64 * lm_head_flops(a),
    }
}

/// One decode step of one sequence whose new token sees `context_len` keys (itself included).
pub fn decode_step_flops(a: &DenseArch, context_len: i64) -> ForwardFlops {
    ForwardFlops {
        linear: linear_flops_per_token(a),
        attention: core_flops_per_key(a) * a.keys_seen_all_layers(context_len as f64),
        lm_head: lm_head_flops(a),
    }
}

/// Parameters by module (they sum to the checkpoint's tensors).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ParamCounts {
    pub embed_tokens: u64,
    /// q/k/v/o weights and q/k/v biases, all layers.
    pub attention: u64,
    pub mlp: u64,
    /// Both norms of every layer (and Qwen3's q/k norms, MLA's latent norms) and the final norm.
    pub norms: u64,
    /// 0 when tied to the embedding.
    pub lm_head: u64,
}

impl ParamCounts {
    pub fn total(&self) -> u64 {
        self.embed_tokens + self.attention + self.mlp + self.norms + self.lm_head
    }
}

pub fn params(a: &DenseArch) -> ParamCounts {
    let (h, q, kv) = (
        a.hidden_size as u64,
        (a.num_attention_heads * a.head_dim) as u64,
        (a.num_key_value_heads * a.head_dim) as u64,
    );
    let l = a.num_hidden_layers as u64;
    let bias = if a.attention_bias { q + 2 * kv } else { 0 };
    let vh = a.vocab_size as u64 * h;
    let mla = a
        .mla
        .as_ref()
        .map(|m| m.weights(a.hidden_size, a.num_attention_heads));
    ParamCounts {
        embed_tokens: vh,
        attention: match &mla {
            Some(w) => l * w.matmul() as u64,
            None => l * (h * (q + 2 * kv) + q * h + bias),
        },
        mlp: {
            let (dense, moe) = mlp_layers(a);
            (dense * 3.0 * h as f64 * a.intermediate_size as f64 + moe * moe_layer_params(a, None))
                as u64
        },
        norms: (2 * l + 1) * h
            + if a.qk_norm {
                2 * l * a.head_dim as u64
            } else {
                0
            }
            + if a.sandwich.is_some() { 2 * l * h } else { 0 }
            + mla.map_or(0, |w| l * w.norms as u64),
        lm_head: if a.tie_word_embeddings { 0 } else { vh },
    }
}

/// KV cache bytes per token of one sequence (K and V, all layers; MLA's latent and RoPE key).
pub fn kv_bytes_per_token(a: &DenseArch, dtype_bytes: u64) -> u64 {
    let per_layer = match &a.mla {
        Some(m) => m.latent_width(),
        None => 2 * a.num_key_value_heads * a.head_dim,
    };
    (a.num_hidden_layers * per_layer) as u64 * dtype_bytes
}

/// Bytes one decode step of `batch` rows moves at `context_len` keys per row.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DecodeBytes {
    /// Every layer weight once (attention, MLP, norms).
    pub layer_weights: f64,
    /// The embedding rows looked up (untied), or nothing beyond the lm_head read (tied).
    pub embedding_rows: f64,
    /// The whole lm_head matrix (the embedding matrix when tied, counted here once).
    pub lm_head: f64,
    pub kv_read: f64,
    pub kv_write: f64,
}

impl DecodeBytes {
    pub fn total(&self) -> f64 {
        self.layer_weights + self.embedding_rows + self.lm_head + self.kv_read + self.kv_write
    }
}

pub fn decode_step_bytes(
    a: &DenseArch,
    context_len: i64,
    batch: i64,
    dtype_bytes: u64,
) -> DecodeBytes {
    let p = params(a);
    let b = dtype_bytes as f64;
    let kv = kv_bytes_per_token(a, dtype_bytes) as f64 * batch as f64;
    // The keys a step reads, averaged over the layers (sliding layers read their window only).
    let keys_read = a.keys_seen_all_layers(context_len as f64) / a.num_hidden_layers as f64;
    let vh = (a.vocab_size * a.hidden_size) as f64 * b;
    // An MoE layer reads the router and the experts the batch's rows reach.
    let (dense, moe) = mlp_layers(a);
    let mlp_read = dense * 3.0 * (a.hidden_size * a.intermediate_size) as f64
        + moe * moe_layer_params(a, Some(batch));
    DecodeBytes {
        layer_weights: ((p.attention + p.norms) as f64 + mlp_read) * b,
        embedding_rows: if a.tie_word_embeddings {
            0.0
        } else {
            batch.min(a.vocab_size) as f64 * a.hidden_size as f64 * b
        },
        lm_head: vh,
        // Every key the new token attends to (itself included) is read; its K/V is written.
        kv_read: kv * keys_read,
        kv_write: kv,
    }
}
