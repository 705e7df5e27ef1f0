//! A tensor-parallel run's ranks side by side (#45): each rank's report reduced to the figures
//! that show a straggler (prefill and decode step p50, the collectives' share of the step), the
//! slowest rank and the spread. Pure: the caller reads each rank's measurements.
use super::super::metrics::RunReport;
use super::super::metrics_ranks::{RankRow, RanksInfo};
use crate::region::COMMUNICATION;

/// The stage whose p50 ranks the ranks.
const STEP: &str = "decode_step";

/// The ranks' reports, rank 0 first → the `tensor_parallel` section; `None` for fewer than two.
pub fn info(reports: &[RunReport]) -> Option<RanksInfo> {
    if reports.len() < 2 {
        return None;
    }
    let ranks: Vec<RankRow> = reports.iter().enumerate().map(|(k, r)| row(k, r)).collect();
    let key = |r: &RankRow| r.decode_step_p50_ms.or(r.e2e_p50_ms).unwrap_or(0.0);
    let slowest = ranks
        .iter()
        .max_by(|a, b| key(a).total_cmp(&key(b)))
        .map_or(0, |r| r.rank);
    let steps: Vec<f64> = ranks.iter().filter_map(|r| r.decode_step_p50_ms).collect();
    let spread_pct = match (
        steps.iter().copied().reduce(f64::min),
        steps.iter().copied().reduce(f64::max),
    ) {
        (Some(lo), Some(hi)) if lo > 0.0 && steps.len() == ranks.len() => {
            Some((hi - lo) / lo * 100.0)
        }
        _ => None,
    };
    Some(RanksInfo {
        world: reports.len(),
        ranks,
        slowest_rank: slowest,
        spread_pct,
    })
}

fn row(rank: usize, r: &RunReport) -> RankRow {
    let p50 = |stage: &str| r.stages.get(stage).map(|s| s.p50_ms);
    let step = r.modules.as_ref().and_then(|m| m.stages.get(STEP));
    let comm: Vec<_> = step
        .map(|s| {
            s.kinds
                .iter()
                .filter(|k| k.module.rsplit('.').next() == Some(COMMUNICATION.name()))
                .collect()
        })
        .unwrap_or_default();
    let (comm_ms, comm_share) = match step {
        Some(_) => (
            Some(comm.iter().map(|k| k.ms_per_run).sum()),
            Some(comm.iter().map(|k| k.share).sum()),
        ),
        None => (None, None),
    };
    RankRow {
        rank,
        gpu: r.setup.gpu.clone(),
        prefill_p50_ms: p50("prefill"),
        decode_step_p50_ms: p50(STEP),
        e2e_p50_ms: p50(super::E2E),
        communication_ms_per_step: comm_ms,
        communication_share: comm_share,
        peak_allocated_gib: r.memory.as_ref().map(|m| m.peak_allocated_gib),
    }
}
