//! A mixture of SwiGLU experts in place of the MLP (Mixtral, Qwen3-MoE, DeepSeek-V2/V3), as
//! config.json states it: how many experts, how many per token, each one's width, how the router
//! scores and picks them (softmax or sigmoid, group-limited), whether the top-k weights are
//! renormalised and scaled, the shared experts, which layers keep a dense MLP, and the
//! checkpoint's names.
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
    /// Always-on shared experts as one SwiGLU of this width under `shared_experts` (DeepSeek:
    /// n_shared_experts × moe_intermediate_size); 0: none.
    #[serde(default)]
    pub shared_intermediate_size: i64,
    /// Routed weights × this (DeepSeek's `routed_scaling_factor`).
    #[serde(default = "one")]
    pub routed_scaling_factor: f64,
    /// How router logits become scores.
    #[serde(default)]
    pub scoring: Scoring,
    /// Top-k only within the best groups of experts (DeepSeek-V2's group_limited_greedy, V3).
    #[serde(default)]
    pub group_limit: Option<GroupLimit>,
}

fn one() -> f64 {
    1.0
}

/// How the router turns logits into scores.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scoring {
    /// Softmax over the experts (Mixtral, Qwen3-MoE, DeepSeek-V2).
    #[default]
    Softmax,
    /// A sigmoid per expert; the choice adds `e_score_correction_bias`, the weights do not
    /// (DeepSeek-V3).
    Sigmoid,
}

/// Experts in `groups` equal groups; each token picks its `top_groups` best groups, then its
/// top-k among their experts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupLimit {
    pub groups: i64,
    pub top_groups: i64,
    pub group_score: GroupScore,
}

/// A group's score.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupScore {
    /// Its best expert's score (DeepSeek-V2); the other groups' scores become 0.
    Max,
    /// The sum of its two best (bias-corrected) scores (DeepSeek-V3); the other groups' become −∞.
    Top2Sum,
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
        ensure!(
            self.shared_intermediate_size >= 0,
            "moe.shared_intermediate_size must be >= 0"
        );
        if let Some(g) = &self.group_limit {
            ensure!(
                g.groups > 0 && self.num_experts % g.groups == 0,
                "moe.group_limit.groups={} must divide num_experts={}",
                g.groups,
                self.num_experts
            );
            let size = self.num_experts / g.groups;
            ensure!(
                (1..=g.groups).contains(&g.top_groups),
                "moe.group_limit.top_groups={} must be in 1..={}",
                g.top_groups,
                g.groups
            );
            ensure!(
                g.group_score != GroupScore::Top2Sum || size >= 2,
                "moe.group_limit: scoring a group by its two best experts needs >= 2 experts a group (have {size})"
            );
            ensure!(
                self.num_experts_per_tok <= g.top_groups * size,
                "moe.num_experts_per_tok={} exceeds the {} experts of the top_groups={} groups",
                self.num_experts_per_tok,
                g.top_groups * size,
                g.top_groups
            );
        }
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
                ..DenseMoe::routing_defaults()
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
                ..DenseMoe::routing_defaults()
            }),
            "deepseek_v2" | "deepseek_v3" => {
                let experts = int("n_routed_experts")?; // null: a dense model
                let width = int("moe_intermediate_size").unwrap_or(0);
                let v3 = model_type == "deepseek_v3";
                let groups = int("n_group").unwrap_or(1);
                let top_groups = int("topk_group").unwrap_or(groups);
                let method = v.get("topk_method").and_then(|x| x.as_str());
                let group_limit = match (v3, method) {
                    (true, _) => Some(GroupScore::Top2Sum),
                    (false, Some("group_limited_greedy")) => Some(GroupScore::Max),
                    _ => None,
                }
                .map(|group_score| GroupLimit {
                    groups,
                    top_groups,
                    group_score,
                });
                Some(DenseMoe {
                    num_experts: experts,
                    num_experts_per_tok: int("num_experts_per_tok").unwrap_or(1),
                    expert_intermediate_size: width,
                    // transformers' DeepSeek-V2 router never renormalises.
                    norm_topk_prob: v3
                        && v.get("norm_topk_prob")
                            .and_then(|x| x.as_bool())
                            .unwrap_or(true),
                    sparse_step: 1,
                    dense_layers: (0..int("first_k_dense_replace").unwrap_or(0)).collect(),
                    names: MoeNames::Hf,
                    shared_intermediate_size: int("n_shared_experts").unwrap_or(0) * width,
                    routed_scaling_factor: v
                        .get("routed_scaling_factor")
                        .and_then(|x| x.as_f64())
                        .unwrap_or(1.0),
                    scoring: if v3 {
                        Scoring::Sigmoid
                    } else {
                        Scoring::Softmax
                    },
                    group_limit,
                })
            }
            _ => None,
        }
    }

    /// Softmax routing, no shared experts, no scaling, no groups.
    fn routing_defaults() -> DenseMoe {
        DenseMoe {
            num_experts: 0,
            num_experts_per_tok: 0,
            expert_intermediate_size: 0,
            norm_topk_prob: false,
            sparse_step: 1,
            dense_layers: Vec::new(),
            names: MoeNames::Hf,
            shared_intermediate_size: 0,
            routed_scaling_factor: 1.0,
            scoring: Scoring::Softmax,
            group_limit: None,
        }
    }

    /// The same structure at tiny dimensions (at most 8 experts, 32 wide, the dense layers
    /// among the first two; groups of two experts where the router groups them).
    pub fn tiny(&self) -> DenseMoe {
        let experts = self.num_experts.min(8);
        let group_limit = self.group_limit.map(|g| GroupLimit {
            groups: 4,
            top_groups: g.top_groups.min(2),
            ..g
        });
        let reach = group_limit.map_or(experts, |g| g.top_groups * experts / g.groups);
        DenseMoe {
            num_experts: experts,
            num_experts_per_tok: self.num_experts_per_tok.min(reach),
            expert_intermediate_size: 32,
            shared_intermediate_size: if self.shared_intermediate_size > 0 {
                32
            } else {
                0
            },
            group_limit,
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
