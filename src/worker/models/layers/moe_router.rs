//! A mixture of experts' router (docs/deepseek-ocr.md §2; DeepSeek-V3): router logits in fp32,
//! softmax or sigmoid scores (sigmoid: the choice adds the `e_score_correction_bias`, the weights
//! do not), top-k over all experts or within each token's best groups of experts, the weights
//! renormalised where the model says so and × its routed scaling factor.
use crate::checkpoint::tensors::WeightPath;
use anyhow::Result;
use llmprof::model::dense::{GroupLimit, GroupScore, Scoring};
use tch::{Kind, Tensor};

/// What a router computes (the MoE's shape gives it: `MoeShape::router`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RouterShape {
    pub top_k: i64,
    pub norm_topk_prob: bool,
    pub scaling: f64,
    pub scoring: Scoring,
    pub group_limit: Option<GroupLimit>,
}

#[derive(Debug)]
pub struct Router {
    /// Router weight [E,H], kept in fp32 (docs/deepseek-ocr.md §2: logits computed in fp32).
    pub(super) gate_f32: Tensor,
    /// Added to the scores for the choice only (sigmoid scoring), fp32 [E].
    correction_bias: Option<Tensor>,
    scoring: Scoring,
    group_limit: Option<GroupLimit>,
    pub(super) top_k: i64,
    norm_topk_prob: bool,
    pub(super) scaling: f64,
}

impl Router {
    /// `vs` points at the layer's MoE; the router's weight is `weight_name`, its correction
    /// bias (sigmoid scoring) beside it.
    pub fn load(vs: &WeightPath, weight_name: &str, shape: RouterShape) -> Result<Self> {
        Ok(Router {
            gate_f32: vs.get(weight_name)?.f_to_kind(Kind::Float)?,
            correction_bias: match shape.scoring {
                Scoring::Sigmoid => {
                    let at = weight_name.trim_end_matches(".weight");
                    let bias = vs.get(&format!("{at}.e_score_correction_bias"))?;
                    Some(bias.f_to_kind(Kind::Float)?)
                }
                Scoring::Softmax => None,
            },
            scoring: shape.scoring,
            group_limit: shape.group_limit,
            top_k: shape.top_k,
            norm_topk_prob: shape.norm_topk_prob,
            scaling: shape.scaling,
        })
    }

    /// Router logits in fp32: x [N,H] → [N,E].
    pub fn logits(&self, xs: &Tensor) -> Result<Tensor> {
        Ok(xs
            .f_to_kind(Kind::Float)?
            .f_linear::<Tensor>(&self.gate_f32, None)?)
    }

    /// Whether llmprof's routing kernel computes this router: softmax over all experts, top-k
    /// weights not renormalised.
    pub fn kernel_computes_it(&self) -> bool {
        !self.norm_topk_prob && self.scoring == Scoring::Softmax && self.group_limit.is_none()
    }

    /// Scores of router `logits` [N,E], the top-k choice (bias-corrected, within the best
    /// groups where the model says so), their scores renormalised where it says so, ×
    /// routed_scaling_factor (`Moe::route`).
    pub fn top_k_of(&self, logits: &Tensor) -> Result<(Tensor, Tensor)> {
        let scores = match self.scoring {
            Scoring::Softmax => logits.f_softmax(-1, Kind::Float)?,
            Scoring::Sigmoid => logits.f_sigmoid()?,
        };
        let (w, idx) = if self.correction_bias.is_none() && self.group_limit.is_none() {
            scores.f_topk(self.top_k, -1, true, false)? // (n, k)
        } else {
            let choice = match &self.correction_bias {
                Some(b) => scores.f_add(b)?,
                None => scores.shallow_clone(),
            };
            let choice = match &self.group_limit {
                Some(g) => in_best_groups(&choice, g)?,
                None => choice,
            };
            let idx = choice.f_topk(self.top_k, -1, true, false)?.1;
            (scores.f_gather(-1, &idx, false)?, idx)
        };
        let w = match self.norm_topk_prob {
            true => w.f_div(&w.f_sum_dim_intlist(-1, true, Kind::Float)?)?,
            false => w,
        };
        let w = if self.scaling != 1.0 {
            w.f_mul_scalar(self.scaling)?
        } else {
            w
        };
        Ok((w, idx))
    }
}

/// `choice` [N,E] with the experts outside each row's `top_groups` best groups hidden: at 0
/// where a group scores by its best expert (DeepSeek-V2), at −∞ where by its two best (V3).
fn in_best_groups(choice: &Tensor, g: &GroupLimit) -> Result<Tensor> {
    let (n, e) = choice.size2()?;
    let grouped = choice.f_view([n, g.groups, e / g.groups])?;
    let (group_scores, hidden) = match g.group_score {
        GroupScore::Max => (grouped.f_amax(-1, false)?, 0.0),
        GroupScore::Top2Sum => (
            grouped
                .f_topk(2, -1, true, true)?
                .0
                .f_sum_dim_intlist(-1, false, Kind::Float)?,
            f64::NEG_INFINITY,
        ),
    }; // (n, groups)
    let best = group_scores.f_topk(g.top_groups, -1, true, false)?.1;
    let keep = group_scores
        .f_zeros_like()?
        .f_scatter_value(1, &best, 1.0)?
        .f_unsqueeze(-1)?
        .f_expand([n, g.groups, e / g.groups], false)?
        .f_reshape([n, e])?
        .f_eq(0.0)?; // true: hidden
    Ok(choice.f_masked_fill(&keep, hidden)?)
}
