//! What a mixture-of-experts layer is (layers/moe.rs): its router and experts' shape, and a
//! checkpoint's names below it.
use super::moe_router::RouterShape;
use llmprof::model::dense::{GroupLimit, Scoring};

/// What the router and the experts are.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MoeShape {
    /// Routed experts.
    pub experts: i64,
    /// Experts per token.
    pub top_k: i64,
    /// The top-k probabilities divided by their sum (Mixtral; Qwen3-MoE's `norm_topk_prob`).
    pub norm_topk_prob: bool,
    /// Routed weights × this (DeepSeek's `routed_scaling_factor`; 1 elsewhere).
    pub scaling: f64,
    /// Shared experts under `shared_experts` (DeepSeek).
    pub shared: bool,
    /// Softmax or sigmoid scores (sigmoid: with the router's `e_score_correction_bias`).
    pub scoring: Scoring,
    /// Top-k within the best groups of experts only.
    pub group_limit: Option<GroupLimit>,
}

impl MoeShape {
    /// What its router computes.
    pub fn router(&self) -> RouterShape {
        RouterShape {
            top_k: self.top_k,
            norm_topk_prob: self.norm_topk_prob,
            scaling: self.scaling,
            scoring: self.scoring,
            group_limit: self.group_limit,
        }
    }

    /// Softmax routing over all experts, greedy top-k: every MoE but DeepSeek-V2/V3's grouped
    /// and sigmoid ones (a family with those sets them on top).
    pub fn greedy(
        experts: i64,
        top_k: i64,
        norm_topk_prob: bool,
        scaling: f64,
        shared: bool,
    ) -> Self {
        MoeShape {
            experts,
            top_k,
            norm_topk_prob,
            scaling,
            shared,
            scoring: Scoring::Softmax,
            group_limit: None,
        }
    }
}

/// A checkpoint's names below the MoE: the router's weight and each expert's three projections
/// (`experts.{e}.<gate>.weight`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExpertNames {
    pub router: &'static str,
    pub gate: &'static str,
    pub up: &'static str,
    pub down: &'static str,
}

/// DeepSeek's and Qwen3-MoE's names (`mlp.gate`, `mlp.experts.{e}.gate_proj` ...).
pub const HF_EXPERT_NAMES: ExpertNames = ExpertNames {
    router: "gate.weight",
    gate: "gate_proj",
    up: "up_proj",
    down: "down_proj",
};
