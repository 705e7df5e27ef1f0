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
    // Step times include the waits inside the collectives, so they come out alike on every rank:
    // the work outside them says which rank the others wait for.
    let by_work = ranks
        .iter()
        .all(|r| r.work_outside_communication_ms.is_some());
    let (compared, figure): (&str, fn(&RankRow) -> Option<f64>) = if by_work {
        ("work_outside_communication", |r| {
            r.work_outside_communication_ms
        })
    } else {
        ("decode_step_p50", |r| r.decode_step_p50_ms)
    };
    let slowest = ranks
        .iter()
        .max_by(|a, b| {
            let key = |r: &RankRow| figure(r).unwrap_or(0.0);
            key(a).total_cmp(&key(b))
        })
        .map_or(0, |r| r.rank);
    let values: Vec<f64> = ranks.iter().filter_map(figure).collect();
    let spread_pct = match (
        values.iter().copied().reduce(f64::min),
        values.iter().copied().reduce(f64::max),
    ) {
        (Some(lo), Some(hi)) if lo > 0.0 && values.len() == ranks.len() => {
            Some((hi - lo) / lo * 100.0)
        }
        _ => None,
    };
    Some(RanksInfo {
        world: reports.len(),
        ranks,
        slowest_rank: slowest,
        compared: compared.into(),
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
    // No communication row (none attributed, or no breakdown): unknown, not zero.
    let (comm_ms, comm_share) = match comm.is_empty() {
        true => (None, None),
        false => (
            Some(comm.iter().map(|k| k.ms_per_run).sum::<f64>()),
            Some(comm.iter().map(|k| k.share).sum()),
        ),
    };
    RankRow {
        rank,
        gpu: r.setup.gpu.clone(),
        prefill_p50_ms: p50("prefill"),
        decode_step_p50_ms: p50(STEP),
        e2e_p50_ms: p50(super::E2E),
        communication_ms_per_step: comm_ms,
        communication_share: comm_share,
        work_outside_communication_ms: step.zip(comm_ms).map(|(s, c)| s.work_ms - c),
        peak_allocated_gib: r.memory.as_ref().map(|m| m.peak_allocated_gib),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::metrics_modules::test_fixtures::{kind, stage};
    use crate::report::metrics_modules::ModulesInfo;

    /// A rank whose decode step is `step_ms` at p50, with a breakdown of `work_ms` per step of
    /// which `comm_ms` in the collectives (none: no breakdown).
    fn rank(step_ms: f64, breakdown: Option<(f64, f64)>) -> RunReport {
        let mut r: RunReport = serde_json::from_str(include_str!(
            "../../../../tests/fixtures/runs/stage1_cpu/metrics.json"
        ))
        .unwrap();
        r.stages.get_mut(STEP).expect("a decode step").p50_ms = step_ms;
        r.modules = breakdown.map(|(work_ms, comm_ms)| ModulesInfo {
            source: Default::default(),
            mapping: Default::default(),
            unmatched_share: 0.0,
            stages: [(
                STEP.to_string(),
                stage(
                    work_ms,
                    vec![
                        kind("layer.mlp.down", work_ms - comm_ms - 0.5),
                        kind("lm_head", 0.5),
                    ]
                    .into_iter()
                    .chain((comm_ms > 0.0).then(|| kind("layer.mlp.communication", comm_ms)))
                    .collect(),
                ),
            )]
            .into(),
        });
        r
    }

    #[test]
    fn the_straggler_is_the_rank_with_the_most_work_outside_the_collectives() {
        // Step times alike (each includes the wait for the others); rank 1 works 4.5 ms outside
        // its collectives and waits 0.5, rank 0 works 3 and waits 2: rank 1 is the straggler.
        let t = info(&[rank(5.0, Some((5.0, 2.0))), rank(5.02, Some((5.0, 0.5)))]).unwrap();
        assert_eq!((t.world, t.slowest_rank), (2, 1));
        assert_eq!(t.compared, "work_outside_communication");
        assert!((t.spread_pct.unwrap() - 50.0).abs() < 1e-9);
        assert_eq!(t.ranks[0].communication_ms_per_step, Some(2.0));
        assert_eq!(t.ranks[1].work_outside_communication_ms, Some(4.5));
        // Without a breakdown on every rank: by the step's p50, and communication unknown.
        let t = info(&[rank(5.0, None), rank(6.0, Some((5.0, 1.0)))]).unwrap();
        assert_eq!(
            (t.slowest_rank, t.compared.as_str()),
            (1, "decode_step_p50")
        );
        assert!((t.spread_pct.unwrap() - 20.0).abs() < 1e-9);
        assert_eq!(t.ranks[0].communication_ms_per_step, None);
        // A breakdown with no communication row: unknown, not zero.
        let t = info(&[rank(5.0, Some((5.0, 0.0))), rank(5.0, Some((5.0, 0.0)))]).unwrap();
        assert_eq!(t.ranks[0].communication_ms_per_step, None);
        assert_eq!(t.compared, "decode_step_p50");
        // One rank: no section.
        assert!(info(&[rank(5.0, None)]).is_none());
    }
}
