//! Tensor-parallel slices of a dense decoder (docs/design/tensor-parallel.md §2, Megatron's
//! layout): rank k of N keeps the k-th contiguous block of the attention heads (q/k/v rows,
//! o_proj columns), of the MLP width (gate/up rows, down columns; every expert the same way,
//! the router whole) and of the vocabulary (embedding and lm_head rows); norms stay whole. The
//! decoder sums the row-parallel outputs and the embedding over the ranks and gathers the logits
//! (`layers::decoder`). Multi-head latent attention splits by heads as well: q (or q_b) and
//! kv_b rows, o_proj columns; the latent projection (q_a, kv_a with the shared RoPE key), its
//! norms and so the compressed cache stay whole on every rank.
use anyhow::{ensure, Result};
use llmprof::model::dense::DenseArch;
use tch::Tensor;

/// Refuses a world size that does not divide what it must split (the front end's check).
pub fn check(a: &DenseArch, world: i64) -> Result<()> {
    llmprof::model::dense::tensor_parallel::check(a, world).map_err(anyhow::Error::msg)
}

/// This rank's architecture: heads, K/V heads and MLP widths ÷ N (the vocabulary stays whole:
/// the decoder offsets the rank's rows).
pub fn arch_of_rank(a: &DenseArch, world: i64) -> DenseArch {
    let mut r = a.clone();
    r.num_attention_heads /= world;
    r.num_key_value_heads /= world;
    r.intermediate_size /= world;
    if let Some(m) = &mut r.moe {
        m.expert_intermediate_size /= world;
        m.shared_intermediate_size /= world;
    }
    r
}

/// How a tensor splits.
enum Split {
    Whole,
    /// Rows (dim 0) in N blocks, each of the listed parts apart (packed q/k/v, gate/up).
    Rows(Vec<i64>),
    /// Columns (dim 1).
    Cols,
}

fn split_of(name: &str, a: &DenseArch) -> Split {
    let (q, kv) = (
        a.num_attention_heads * a.head_dim,
        a.num_key_value_heads * a.head_dim,
    );
    let ends = |s: &str| name.ends_with(s);
    if ends("qkv_proj.weight") {
        Split::Rows(vec![q, kv, kv])
    } else if ends("gate_up_proj.weight") {
        let half = a.intermediate_size;
        Split::Rows(vec![half, half])
    } else if [
        "q_proj.",
        "k_proj.",
        "v_proj.",
        "gate_proj.",
        "up_proj.",
        ".w1.",
        ".w3.",
        // Multi-head latent attention: per-head rows of the up-projections.
        "q_b_proj.",
        "kv_b_proj.",
    ]
    .iter()
    .any(|p| name.contains(p))
        || ends("embed_tokens.weight")
        || name == "lm_head.weight"
    {
        Split::Rows(Vec::new())
    } else if ends("o_proj.weight") || ends("down_proj.weight") || ends(".w2.weight") {
        Split::Cols
    } else {
        Split::Whole
    }
}

/// The rank's slice of every tensor of the full checkpoint `tensors` (the tests' reference: runs
/// cut each tensor as it is read or drawn).
#[cfg(test)]
pub fn slice(
    tensors: &std::collections::HashMap<String, Tensor>,
    a: &DenseArch,
    rank: i64,
    world: i64,
) -> Result<std::collections::HashMap<String, Tensor>> {
    tensors
        .iter()
        .map(|(name, t)| Ok((name.clone(), slice_one(name, t, a, (rank, world))?)))
        .collect()
}

/// The rank's slice of tensor `name` (whole where it is not split).
pub fn slice_one(
    name: &str,
    t: &Tensor,
    a: &DenseArch,
    (rank, world): (i64, i64),
) -> Result<Tensor> {
    let block = |t: &Tensor, dim: i64, at: i64, len: i64| -> Result<Tensor> {
        ensure!(
            len % world == 0,
            "{len} rows of {name} do not split into {world}"
        );
        let n = len / world;
        // A copy, not a view: a view would keep the whole tensor's storage alive.
        Ok(t.f_narrow_copy(dim, at + rank * n, n)?)
    };
    Ok(match split_of(name, a) {
        Split::Whole => t.shallow_clone(),
        Split::Cols => block(t, 1, 0, t.size()[1])?,
        Split::Rows(parts) if parts.is_empty() => block(t, 0, 0, t.size()[0])?,
        Split::Rows(parts) => {
            let mut at = 0;
            let mut pieces = Vec::new();
            for len in parts {
                pieces.push(block(t, 0, at, len)?);
                at += len;
            }
            Tensor::f_cat(&pieces, 0)?
        }
    })
}
