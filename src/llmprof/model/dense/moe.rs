//! A mixture of SwiGLU experts in place of the MLP (Mixtral, Qwen3-MoE), as config.json states
//! it: how many experts, how many per token, each one's width, whether the top-k weights are
//! renormalised, which layers keep a dense MLP, and the checkpoint's names.
use anyhow::{ensure, Result};
use serde::{Deserialize, Serialize};

/// The names of a checkpoint's MoE tensors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MoeNames {
    /// Mixtral: `block_sparse_moe.gate`, `block_sparse_moe.experts.{e}.w1/w3/w2` (gate/up/down).
    Mixtral,
    /// Qwen3-MoE: `mlp.gate`, `mlp.experts.{e}.gate_proj/up_proj/down_proj`.
    Hf,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DenseMoe {
    /// Routed experts (Mixtral's `num_local_experts`, Qwen3-MoE's `num_experts`).
    pub num_experts: i64,
    pub num_experts_per_tok: i64,
    /// Each expert's SwiGLU width (Mixtral's `intermediate_size`, Qwen3-MoE's
    /// `moe_intermediate_size`).
    pub expert_intermediate_size: i64,
    /// The top-k probabilities divided by their sum (Mixtral always, Qwen3-MoE's
    /// `norm_topk_prob`).
    pub norm_topk_prob: bool,
    /// Every `sparse_step`-th layer has the experts (Qwen3-MoE's `decoder_sparse_step`; 1: all).
    pub sparse_step: i64,
    /// Layers that keep a dense MLP of `intermediate_size` (Qwen3-MoE's `mlp_only_layers`).
    #[serde(default)]
    pub dense_layers: Vec<i64>,
    pub names: MoeNames,
}

impl DenseMoe {
    pub fn validate(&self) -> Result<()> {
        ensure!(self.num_experts > 0, "moe.num_experts must be > 0");
        ensure!(
            (1..=self.num_experts).contains(&self.num_experts_per_tok),
            "moe.num_experts_per_tok={} must be in 1..={}",
            self.num_experts_per_tok,
            self.num_experts
        );
        ensure!(
            self.expert_intermediate_size > 0,
            "moe.expert_intermediate_size must be > 0"
        );
        ensure!(self.sparse_step > 0, "moe.sparse_step must be > 0");
        Ok(())
    }

    /// Whether layer `i` has the experts (else a dense MLP).
    pub fn in_layer(&self, i: i64) -> bool {
        !self.dense_layers.contains(&i) && (i + 1) % self.sparse_step == 0
    }

    /// The MoE config.json of `model_type` describes, if it has one.
    pub fn from_hf_config(v: &serde_json::Value, model_type: &str) -> Option<DenseMoe> {
        let int = |k: &str| v.get(k).and_then(|x| x.as_i64());
        match model_type {
            "mixtral" => Some(DenseMoe {
                num_experts: int("num_local_experts").unwrap_or(8),
                num_experts_per_tok: int("num_experts_per_tok").unwrap_or(2),
                expert_intermediate_size: int("intermediate_size").unwrap_or(0),
                norm_topk_prob: true,
                sparse_step: 1,
                dense_layers: Vec::new(),
                names: MoeNames::Mixtral,
            }),
            "qwen3_moe" => Some(DenseMoe {
                // Released configs say num_experts; transformers 5 writes num_local_experts.
                num_experts: int("num_experts")
                    .or_else(|| int("num_local_experts"))
                    .unwrap_or(128),
                num_experts_per_tok: int("num_experts_per_tok").unwrap_or(8),
                expert_intermediate_size: int("moe_intermediate_size").unwrap_or(0),
                norm_topk_prob: v
                    .get("norm_topk_prob")
                    .and_then(|x| x.as_bool())
                    .unwrap_or(false),
                sparse_step: int("decoder_sparse_step").unwrap_or(1),
                dense_layers: v
                    .get("mlp_only_layers")
                    .and_then(|x| x.as_array())
                    .map(|a| a.iter().filter_map(|x| x.as_i64()).collect())
                    .unwrap_or_default(),
                names: MoeNames::Hf,
            }),
            _ => None,
        }
    }

    /// The same structure at tiny dimensions (at most 8 experts, 32 wide, the dense layers
    /// among the first two).
    pub fn tiny(&self) -> DenseMoe {
        let experts = self.num_experts.min(8);
        DenseMoe {
            num_experts: experts,
            num_experts_per_tok: self.num_experts_per_tok.min(experts),
            expert_intermediate_size: 32,
            dense_layers: self
                .dense_layers
                .iter()
                .copied()
                .filter(|&i| i < 2)
                .collect(),
            ..self.clone()
        }
    }
}
