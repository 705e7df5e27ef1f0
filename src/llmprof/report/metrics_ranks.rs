//! metrics.json's `tensor_parallel` section (#45): a tensor-parallel run's ranks side by side,
//! the slowest one and the spread between them. Rank 0's metrics.json carries it; each rank's own
//! measurements stay in its folder (`<run>/rank<k>`).
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RanksInfo {
    /// The ranks of the run (runtime.tensor_parallel).
    pub world: usize,
    /// Every rank, in rank order.
    pub ranks: Vec<RankRow>,
    /// The rank with the most GPU work per decode step outside its collectives (the one the
    /// others wait for: every rank's step time includes those waits, so step times come out
    /// alike); by the decode step's p50 where a rank has no module breakdown.
    pub slowest_rank: usize,
    /// What `slowest_rank` and `spread_pct` compare: `work_outside_communication` or
    /// `decode_step_p50`.
    pub compared: String,
    /// (slowest − fastest) ÷ fastest of the compared figure, in %.
    pub spread_pct: Option<f64>,
}

/// One rank's figures, from its own measurements.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RankRow {
    pub rank: usize,
    pub gpu: Option<String>,
    pub prefill_p50_ms: Option<f64>,
    pub decode_step_p50_ms: Option<f64>,
    pub e2e_p50_ms: Option<f64>,
    /// GPU time per decode step in the `communication` modules (its collectives and the waits
    /// inside them), from the rank's Kineto pass; absent without one.
    pub communication_ms_per_step: Option<f64>,
    /// That time's share of the step's GPU work.
    pub communication_share: Option<f64>,
    /// GPU work per decode step outside the collectives (the step's module time less
    /// communication): what this rank itself takes.
    pub work_outside_communication_ms: Option<f64>,
    pub peak_allocated_gib: Option<f64>,
}
