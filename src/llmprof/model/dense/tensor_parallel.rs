//! Whether a dense decoder splits over `runtime.tensor_parallel` ranks (the worker's
//! models::dense::shard slices it; docs/design/tensor-parallel.md §2): the attention heads, the
//! K/V heads, the MLP and expert widths and the vocabulary must divide evenly. Multi-head latent
//! attention splits by its heads too (each rank keeps the shared latent projection and cache
//! whole).
use super::DenseArch;

/// Refuses a world size that does not divide what it must split.
pub fn check(a: &DenseArch, world: i64) -> Result<(), String> {
    if world < 1 {
        return Err(format!("runtime.tensor_parallel={world} must be >= 1"));
    }
    let mut parts = vec![
        ("num_attention_heads", a.num_attention_heads),
        ("num_key_value_heads", a.num_key_value_heads),
        ("intermediate_size", a.intermediate_size),
        ("vocab_size", a.vocab_size),
    ];
    if let Some(m) = &a.moe {
        parts.push(("the experts' intermediate size", m.expert_intermediate_size));
        if m.shared_intermediate_size > 0 {
            parts.push(("the shared experts' width", m.shared_intermediate_size));
        }
    }
    for (what, n) in parts {
        if n % world != 0 {
            return Err(format!(
                "runtime.tensor_parallel={world} does not divide {what}={n}\n  fix: a runtime.tensor_parallel that divides {what}"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Llama-3.1-70B's released configuration (the 70B-class model of #45) splits over 2, 4 and 8
    /// ranks and not over 16 (8 K/V heads) or 3; a world below one is refused.
    #[test]
    fn llama_70b_splits_over_a_nodes_gpus() {
        let a = super::super::tests::preset("llama3_1_70b");
        for world in [1, 2, 4, 8] {
            assert_eq!(check(&a, world), Ok(()), "{world}");
        }
        let e = check(&a, 16).unwrap_err();
        assert!(e.contains("does not divide num_key_value_heads=8"), "{e}");
        let e = check(&a, 3).unwrap_err();
        assert!(e.contains("does not divide num_attention_heads=64"), "{e}");
        assert!(check(&a, 0).is_err());
    }
}
