//! Serving metrics under their standard definitions (vLLM's `benchmarks/serve.py`, also
//! optimum-benchmark and GenAI-Perf): TTFT, TPOT = (e2e − TTFT) ÷ (n − 1), every inter-token gap
//! (ITL), e2e and output tokens per second, per request (one batch row) and over all requests;
//! and the detection of cold first repeats.
use super::timings::E2E;
use crate::measure::stats::Summary;
use crate::region::PREFILL;
use crate::report::measurements::TimedRequest;
use crate::report::metrics::{ServingMetrics, StageStats};
use std::collections::BTreeMap;

/// A first repeat whose e2e exceeds the median of the later repeats of its input by this factor
/// is cold (kernel selection, allocator growth or graph capture landed in it).
pub const COLD_FACTOR: f64 = 1.25;

/// Per-request serving numbers of one batch row.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestServing {
    pub ttft_ms: Option<f64>,
    pub tpot_ms: Option<f64>,
    pub e2e_ms: Option<f64>,
    pub output_tokens_per_s: Option<f64>,
    pub itl_ms: Vec<f64>,
}

/// Tokens one row of `t` produced: the first (from prefill) plus one per decode step.
fn tokens_per_row(t: &TimedRequest) -> usize {
    if t.token_ms.is_empty() {
        0
    } else {
        t.decode_steps + 1
    }
}

pub fn request(t: &TimedRequest) -> RequestServing {
    let ttft = t
        .token_ms
        .first()
        .copied()
        .or_else(|| t.region_ms.get(PREFILL.nvtx_name()).copied());
    let e2e = t.region_ms.get(E2E).copied().filter(|e| *e > 0.0);
    let n = tokens_per_row(t);
    let tpot = match (ttft, e2e) {
        (Some(f), Some(e)) if n >= 2 => Some((e - f) / (n - 1) as f64),
        _ => None,
    };
    RequestServing {
        ttft_ms: ttft,
        tpot_ms: tpot,
        e2e_ms: e2e,
        output_tokens_per_s: e2e.filter(|_| n > 0).map(|e| n as f64 / (e / 1e3)),
        itl_ms: t.token_ms.windows(2).map(|w| w[1] - w[0]).collect(),
    }
}

fn stats(v: &[f64]) -> Option<StageStats> {
    Summary::from_samples(v).ok().map(|s| StageStats::from(&s))
}

/// The serving section over `requests` (already without cold repeats).
pub fn metrics(requests: &[&TimedRequest]) -> ServingMetrics {
    let per: Vec<RequestServing> = requests.iter().map(|t| request(t)).collect();
    let col = |f: fn(&RequestServing) -> Option<f64>| per.iter().filter_map(f).collect::<Vec<_>>();
    let itl: Vec<f64> = per.iter().flat_map(|r| r.itl_ms.clone()).collect();
    ServingMetrics {
        ttft_ms: stats(&col(|r| r.ttft_ms)),
        tpot_ms: stats(&col(|r| r.tpot_ms)),
        itl_ms: stats(&itl),
        e2e_ms: stats(&col(|r| r.e2e_ms)),
    }
}

/// Indices of cold first repeats: the first repeat of a batch whose e2e exceeds [`COLD_FACTOR`]
/// × the median e2e of that batch's later repeats (needs at least one later repeat).
pub fn cold_first_repeats(requests: &[TimedRequest]) -> Vec<usize> {
    let mut by_batch: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (i, t) in requests.iter().enumerate() {
        by_batch.entry(t.batch_index).or_default().push(i);
    }
    let e2e = |i: usize| requests[i].region_ms.get(E2E).copied();
    let mut cold = Vec::new();
    for idx in by_batch.values() {
        let Some(&first) = idx.iter().min_by_key(|&&i| requests[i].repeat) else {
            continue;
        };
        let later: Vec<f64> = idx
            .iter()
            .filter(|&&i| i != first)
            .filter_map(|&i| e2e(i))
            .collect();
        let (Some(f), Ok(s)) = (e2e(first), Summary::from_samples(&later)) else {
            continue;
        };
        if f > COLD_FACTOR * s.p50 {
            cold.push(first);
        }
    }
    cold
}

#[cfg(test)]
mod tests {
    use super::super::timings::tests::request as timed;
    use super::*;

    fn with_tokens(e2e: f64, tokens: &[f64]) -> TimedRequest {
        let mut t = timed(
            0,
            0,
            &[("prefill", tokens[0]), (E2E, e2e)],
            &vec![1.0; tokens.len() - 1],
        );
        t.token_ms = tokens.to_vec();
        t
    }

    #[test]
    fn tpot_is_the_time_after_the_first_token_over_the_gaps() {
        // First token at 50 ms, then 4 more at 60, 70, 85, 100 ms; e2e 100 ms.
        let t = with_tokens(100.0, &[50.0, 60.0, 70.0, 85.0, 100.0]);
        let r = request(&t);
        assert_eq!(r.ttft_ms, Some(50.0));
        assert_eq!(r.tpot_ms, Some(12.5)); // (100 − 50) / (5 − 1)
        assert_eq!(r.itl_ms, vec![10.0, 10.0, 15.0, 15.0]);
        assert_eq!(r.output_tokens_per_s, Some(50.0)); // 5 tokens in 0.1 s
        let m = metrics(&[&t]);
        assert_eq!(m.itl_ms.unwrap().n, 4);
        assert_eq!(m.tpot_ms.unwrap().mean_ms, 12.5);
    }

    #[test]
    fn one_token_has_no_tpot() {
        let r = request(&with_tokens(40.0, &[40.0]));
        assert_eq!((r.ttft_ms, r.tpot_ms), (Some(40.0), None));
        assert!(r.itl_ms.is_empty());
    }

    #[test]
    fn a_slow_first_repeat_is_cold_a_noisy_one_is_not() {
        let mut reqs = vec![
            timed(0, 0, &[(E2E, 200.0)], &[]),
            timed(0, 1, &[(E2E, 100.0)], &[]),
            timed(0, 2, &[(E2E, 102.0)], &[]),
            timed(1, 0, &[(E2E, 110.0)], &[]),
            timed(1, 1, &[(E2E, 100.0)], &[]),
        ];
        assert_eq!(cold_first_repeats(&reqs), vec![0]);
        reqs[0].region_ms.insert(E2E.into(), 120.0);
        assert!(cold_first_repeats(&reqs).is_empty());
        // A single repeat cannot be judged.
        assert!(cold_first_repeats(&reqs[..1]).is_empty());
    }
}
