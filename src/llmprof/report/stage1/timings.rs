//! Region timings of stage 1: statistics per region over every timed request, the largest
//! coefficient of variation between repeats of one input, and throughput.
use crate::measure::stats::Summary;
use crate::region::DECODE_STEP;
use crate::report::measurements::TimedRequest;
use crate::report::metrics::{StageStats, Throughput};
use std::collections::BTreeMap;

/// The key of a request's end-to-end time (prefill + decode) in `region_ms`.
pub const E2E: &str = "e2e";

fn stats(values: &[f64]) -> Option<StageStats> {
    Summary::from_samples(values)
        .ok()
        .map(|s| StageStats::from(&s))
}

/// Every request's samples per region; decode steps pooled under `decode_step`.
fn samples_by_region<'a>(
    requests: impl Iterator<Item = &'a TimedRequest>,
) -> BTreeMap<String, Vec<f64>> {
    let mut out: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for t in requests {
        for (k, v) in &t.region_ms {
            out.entry(k.clone()).or_default().push(*v);
        }
        out.entry(DECODE_STEP.nvtx_name().into())
            .or_default()
            .extend(&t.step_ms);
    }
    out
}

/// Statistics per region over every timed request.
pub fn region_stats(requests: &[TimedRequest]) -> BTreeMap<String, StageStats> {
    samples_by_region(requests.iter())
        .iter()
        .filter_map(|(k, v)| stats(v).map(|s| (k.clone(), s)))
        .collect()
}

/// Per region, the largest CV over batches, each computed over that batch's repeats (different
/// inputs legitimately differ: other crop grids, other prompt lengths).
pub fn cv_within_input(requests: &[TimedRequest]) -> BTreeMap<String, f64> {
    let mut batches: BTreeMap<usize, Vec<&TimedRequest>> = BTreeMap::new();
    for t in requests {
        batches.entry(t.batch_index).or_default().push(t);
    }
    let mut worst: BTreeMap<String, f64> = BTreeMap::new();
    for repeats in batches.values() {
        for (k, v) in samples_by_region(repeats.iter().copied()) {
            if let Some(cv) = Summary::from_samples(&v).ok().and_then(|s| s.cv) {
                let e = worst.entry(k).or_insert(0.0);
                *e = e.max(cv);
            }
        }
    }
    worst
}

/// Output tokens over end-to-end time, per request and in aggregate; the decode rate per row is
/// 1000 ÷ the mean TPOT (`tpot_mean_ms`, from the serving metrics).
pub fn throughput(requests: &[TimedRequest], tpot_mean_ms: Option<f64>) -> Throughput {
    let output_tokens_total: u64 = requests.iter().map(|t| t.output_tokens as u64).sum();
    let e2e = |t: &TimedRequest| t.region_ms.get(E2E).copied();
    let e2e_total_ms: f64 = requests.iter().filter_map(e2e).sum();
    let per_request: Vec<f64> = requests
        .iter()
        .filter_map(|t| {
            let ms = e2e(t)?;
            let rows = t.rows.len().max(1) as f64;
            (ms > 0.0).then(|| t.output_tokens as f64 / rows / (ms / 1e3))
        })
        .collect();
    Throughput {
        output_tokens_total,
        tokens_per_s_per_request_mean: (!per_request.is_empty())
            .then(|| per_request.iter().sum::<f64>() / per_request.len() as f64),
        tokens_per_s_aggregate: (e2e_total_ms > 0.0)
            .then(|| output_tokens_total as f64 / (e2e_total_ms / 1e3)),
        decode_tokens_per_s: tpot_mean_ms.filter(|t| *t > 0.0).map(|t| 1000.0 / t),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A request of `rows` rows with the given region times and steps.
    pub fn request(
        batch: usize,
        repeat: u32,
        regions: &[(&str, f64)],
        steps: &[f64],
    ) -> TimedRequest {
        TimedRequest {
            batch_index: batch,
            repeat,
            rows: Vec::new(),
            region_ms: regions.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            step_ms: steps.to_vec(),
            token_ms: Vec::new(),
            output_tokens: steps.len() + 1,
            row_output_tokens: vec![steps.len() + 1],
            decode_steps: steps.len(),
            windows: Vec::new(),
            work: Default::default(),
        }
    }

    #[test]
    fn steps_pool_and_regions_average() {
        let reqs = [
            request(0, 0, &[("prefill", 10.0), (E2E, 40.0)], &[1.0, 3.0]),
            request(0, 1, &[("prefill", 20.0), (E2E, 50.0)], &[2.0]),
        ];
        let s = region_stats(&reqs);
        assert_eq!(s["prefill"].mean_ms, 15.0);
        assert_eq!(s["decode_step"].n, 3);
        assert_eq!(s["decode_step"].mean_ms, 2.0);
        let t = throughput(&reqs, Some(2.0));
        assert_eq!(t.output_tokens_total, 5);
        // 5 tokens over 90 ms.
        assert!((t.tokens_per_s_aggregate.unwrap() - 5.0 / 0.09).abs() < 1e-9);
        // mean of 3/0.04 and 2/0.05 (rows default to 1).
        assert!((t.tokens_per_s_per_request_mean.unwrap() - (75.0 + 40.0) / 2.0).abs() < 1e-9);
        assert_eq!(t.decode_tokens_per_s, Some(500.0));
    }

    #[test]
    fn cv_is_taken_between_repeats_of_one_batch_only() {
        // Batch 0 is stable, batch 1 is stable, but they differ from each other by 2x.
        let reqs = [
            request(0, 0, &[("prefill", 10.0)], &[]),
            request(0, 1, &[("prefill", 10.0)], &[]),
            request(1, 0, &[("prefill", 20.0)], &[]),
            request(1, 1, &[("prefill", 22.0)], &[]),
        ];
        let cv = cv_within_input(&reqs)["prefill"];
        let want = (2.0f64).sqrt() / 21.0; // std of {20, 22} over their mean
        assert!((cv - want).abs() < 1e-12, "{cv} vs {want}");
    }
}
