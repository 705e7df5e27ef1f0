//! Several ranks side by side: each rank's communication share and idle time, and per step the
//! slowest rank and the straggler. In a collective every rank waits for the last one to arrive,
//! so step durations come out alike and the waiting shows up as communication time; the
//! straggler is the rank that computed the longest in the step (and so waited least), the spread
//! is how much longer it computed than the rank that computed least. Pure.
use std::collections::BTreeMap;

use super::analysis::{TraceAnalysis, SCHEMA};

/// One rank over its whole trace, in microseconds (summed over its devices).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RankSummary {
    pub rank: u64,
    pub window_us: f64,
    pub computation_us: f64,
    pub communication_us: f64,
    /// communication ÷ window.
    pub communication_share: f64,
    pub idle_us: f64,
    pub steps: u64,
    /// Mean host duration of its steps (0 without steps).
    pub mean_step_us: f64,
}

/// One step across the ranks that have it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StepAcrossRanks {
    pub step: u64,
    /// Per rank (in `ranks` order of the ranks that have this step): host duration.
    pub host_us: BTreeMap<u64, f64>,
    /// Per rank: computation time of the step's GPU work.
    pub computation_us: BTreeMap<u64, f64>,
    /// The rank whose step took longest on the host (none when all are within 1 %).
    pub slowest_rank: Option<u64>,
    /// The rank that computed longest (none when all are within 1 %).
    pub straggler_rank: Option<u64>,
    /// Longest − shortest computation.
    pub computation_spread_us: f64,
    /// Longest − shortest host duration.
    pub host_spread_us: f64,
}

/// The cross-rank view.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AcrossRanks {
    pub ranks: Vec<RankSummary>,
    pub steps: Vec<StepAcrossRanks>,
    /// The rank that was the straggler in most steps, with that count.
    pub usual_straggler: Option<(u64, u64)>,
}

/// Ranks closer than this share of the largest value have no slowest one.
pub const TIE: f64 = 0.01;

/// The rank with the largest value; `None` when all are within [`TIE`] of it (no rank stands
/// out: identical ranks, or steps without GPU work).
fn argmax(map: &BTreeMap<u64, f64>) -> Option<u64> {
    let (rank, max) = map
        .iter()
        .max_by(|a, b| a.1.total_cmp(b.1).then(b.0.cmp(a.0)))?;
    (spread(map) > TIE * max.abs()).then_some(*rank)
}

fn spread(map: &BTreeMap<u64, f64>) -> f64 {
    let max = map.values().copied().fold(f64::MIN, f64::max);
    let min = map.values().copied().fold(f64::MAX, f64::min);
    if map.is_empty() {
        0.0
    } else {
        max - min
    }
}

/// `ranks`: (rank, its analysis), in rank order.
pub fn across(ranks: &[(u64, &TraceAnalysis)]) -> AcrossRanks {
    let summaries = ranks
        .iter()
        .map(|(rank, a)| {
            let sum =
                |f: fn(&super::timeline::Breakdown) -> f64| a.timeline.iter().map(f).sum::<f64>();
            let window = sum(|d| d.window_us);
            let communication = sum(|d| d.communication_us);
            let steps = a.iterations.len() as u64;
            RankSummary {
                rank: *rank,
                window_us: window,
                computation_us: sum(|d| d.computation_us),
                communication_us: communication,
                communication_share: if window > 0.0 {
                    communication / window
                } else {
                    0.0
                },
                idle_us: sum(|d| d.idle_us),
                steps,
                mean_step_us: if steps == 0 {
                    0.0
                } else {
                    a.iterations.iter().map(|i| i.host_us).sum::<f64>() / steps as f64
                },
            }
        })
        .collect();
    /// Per rank: host duration, computation.
    type PerRank = (BTreeMap<u64, f64>, BTreeMap<u64, f64>);
    let mut by_step: BTreeMap<u64, PerRank> = BTreeMap::new();
    for (rank, a) in ranks {
        for it in &a.iterations {
            let e = by_step.entry(it.step).or_default();
            e.0.insert(*rank, it.host_us);
            e.1.insert(*rank, it.computation_us());
        }
    }
    let steps: Vec<StepAcrossRanks> = by_step
        .into_iter()
        .filter(|(_, (host, _))| host.len() > 1)
        .map(|(step, (host, compute))| StepAcrossRanks {
            step,
            slowest_rank: argmax(&host),
            straggler_rank: argmax(&compute),
            computation_spread_us: spread(&compute),
            host_spread_us: spread(&host),
            host_us: host,
            computation_us: compute,
        })
        .collect();
    let mut counts: BTreeMap<u64, u64> = BTreeMap::new();
    for rank in steps.iter().filter_map(|s| s.straggler_rank) {
        *counts.entry(rank).or_default() += 1;
    }
    let usual_straggler = counts
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)));
    AcrossRanks {
        ranks: summaries,
        steps,
        usual_straggler,
    }
}

/// One rank's analysis, its rank first (`ranks[]` of the JSON).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RankAnalysis {
    pub rank: u64,
    #[serde(flatten)]
    pub analysis: TraceAnalysis,
}

/// Several ranks: each one's analysis and the view across them.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MultiRankAnalysis {
    pub schema: String,
    pub ranks: Vec<RankAnalysis>,
    pub across_ranks: AcrossRanks,
}

/// What `analyze trace` produced: one trace, or several ranks. Read back with
/// [`Analysed::from_json`] (an untagged derive cannot read the rank-keyed maps).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(untagged)]
pub enum Analysed {
    Ranks(MultiRankAnalysis),
    One(Box<TraceAnalysis>),
}

impl Analysed {
    /// Reads analysis.json: several ranks when it has `ranks`, else one trace.
    pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        let value: serde_json::Value = serde_json::from_str(text)?;
        if value.get("ranks").is_some() {
            Ok(Analysed::Ranks(serde_json::from_value(value)?))
        } else {
            Ok(Analysed::One(Box::new(serde_json::from_value(value)?)))
        }
    }

    /// `ranks` in rank order (one entry: a single trace).
    pub fn from_ranks(mut ranks: Vec<RankAnalysis>) -> Self {
        if ranks.len() == 1 {
            return Analysed::One(Box::new(ranks.remove(0).analysis));
        }
        ranks.sort_by_key(|r| r.rank);
        let view = across(
            &ranks
                .iter()
                .map(|r| (r.rank, &r.analysis))
                .collect::<Vec<_>>(),
        );
        Analysed::Ranks(MultiRankAnalysis {
            schema: SCHEMA.to_string(),
            ranks,
            across_ranks: view,
        })
    }

    /// (rank, analysis) of every trace, in rank order.
    pub fn traces(&self) -> Vec<(Option<u64>, &TraceAnalysis)> {
        match self {
            Analysed::One(a) => vec![(a.source.rank, a)],
            Analysed::Ranks(m) => m
                .ranks
                .iter()
                .map(|r| (Some(r.rank), &r.analysis))
                .collect(),
        }
    }
}
