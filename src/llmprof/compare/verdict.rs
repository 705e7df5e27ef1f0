//! From two runs' metrics to one row each: both values (medians for sampled metrics), the change
//! in %, the test results, and the verdict. A sampled metric regressed (or improved) only when the
//! change is significant (Mann-Whitney U p < alpha and the bootstrap interval of the median ratio
//! excludes 1) AND beyond the threshold in the bad (good) direction; a one-value metric only
//! has the threshold, and says so.
use super::catalogue::{Better, Metric, Values};
use super::stats::{bootstrap_median_ratio, mann_whitney, median, MannWhitney, RatioCi};
use super::Options;
use serde::Serialize;

/// The method line every output states.
pub const METHOD: &str = "two-sided Mann-Whitney U test on the samples (per request for runs, per ProfilerStep#N iteration for traces; exact for n <= 20 without ties, else normal approximation with tie and continuity correction) and a percentile bootstrap confidence interval of the ratio of medians B/A; significant = p < alpha and the interval excludes 1; a metric with one value per run, or too few samples to reach p < alpha, is judged on the threshold alone (marked threshold only)";

/// Whether the Mann-Whitney test can reach p < alpha at all with these sample sizes: its smallest
/// two-sided p is 2 ÷ C(n_a + n_b, n_a) (complete separation), e.g. 0.1 for 3 + 3, 0.029 for 4 + 4.
pub fn testable(n_a: usize, n_b: usize, alpha: f64) -> bool {
    let (k, n) = (n_a.min(n_b), n_a + n_b);
    let orderings = (0..k).fold(1.0, |c, i| c * (n - i) as f64 / (i + 1) as f64);
    n_a > 0 && n_b > 0 && 2.0 / orderings < alpha
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Improved,
    Regressed,
    NoSignificantChange,
    /// The metric exists in one run only, or A's value is 0.
    NotCompared,
}

impl Verdict {
    pub fn text(self) -> &'static str {
        match self {
            Verdict::Improved => "improved",
            Verdict::Regressed => "regressed",
            Verdict::NoSignificantChange => "no significant change",
            Verdict::NotCompared => "not compared",
        }
    }
}

/// What the verdict rests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// Significance test and threshold.
    Statistical,
    /// Threshold alone: one value per run, or too few samples for the tests.
    ThresholdOnly,
}

#[derive(Debug, Clone, Serialize)]
pub struct MetricRow {
    pub key: String,
    pub label: String,
    pub unit: String,
    pub better: Better,
    /// Median of the samples, or the run's one value.
    pub a: Option<f64>,
    pub b: Option<f64>,
    pub n_a: usize,
    pub n_b: usize,
    /// (b ÷ a − 1) × 100.
    pub delta_pct: Option<f64>,
    pub mann_whitney: Option<MannWhitney>,
    /// Ratio of medians B ÷ A with its bootstrap interval.
    pub ratio_ci: Option<RatioCi>,
    pub significant: Option<bool>,
    pub verdict: Verdict,
    pub basis: Basis,
    /// Why the basis is what it is, or what else to know (significant but within threshold).
    pub note: String,
}

/// One row per metric of A (in A's order), then the metrics only B has.
pub fn compare_all(a: &[Metric], b: &[Metric], opts: &Options) -> Vec<MetricRow> {
    let mut rows: Vec<MetricRow> = a
        .iter()
        .map(|ma| compare_one(Some(ma), b.iter().find(|mb| mb.key == ma.key), opts))
        .collect();
    rows.extend(
        b.iter()
            .filter(|mb| !a.iter().any(|ma| ma.key == mb.key))
            .map(|mb| compare_one(None, Some(mb), opts)),
    );
    rows
}

/// The median of a sampled metric, or its one value, and the sample count (1 for one value).
fn point(v: &Values) -> (f64, usize) {
    match v {
        Values::Samples(s) => (median(&mut s.clone()), s.len()),
        Values::Single(x, _) => (*x, 1),
    }
}

fn compare_one(a: Option<&Metric>, b: Option<&Metric>, opts: &Options) -> MetricRow {
    let m = a.or(b).expect("one side exists");
    let pa = a.map(|x| point(&x.values));
    let pb = b.map(|x| point(&x.values));
    let mut row = MetricRow {
        key: m.key.clone(),
        label: m.label.clone(),
        unit: m.unit.to_string(),
        better: m.better,
        a: pa.map(|p| p.0),
        b: pb.map(|p| p.0),
        n_a: pa.map_or(0, |p| p.1),
        n_b: pb.map_or(0, |p| p.1),
        delta_pct: None,
        mann_whitney: None,
        ratio_ci: None,
        significant: None,
        verdict: Verdict::NotCompared,
        basis: Basis::ThresholdOnly,
        note: String::new(),
    };
    let (Some(ma), Some(mb)) = (a, b) else {
        row.note = format!("only in {}", if a.is_some() { "A" } else { "B" });
        return row;
    };
    let (va, vb) = (pa.expect("a").0, pb.expect("b").0);
    if va == 0.0 {
        row.verdict = if vb == 0.0 {
            Verdict::NoSignificantChange
        } else {
            Verdict::NotCompared
        };
        row.note = "A is 0: no relative change".into();
        row.delta_pct = (vb == 0.0).then_some(0.0);
        return row;
    }
    let delta = (vb / va - 1.0) * 100.0;
    row.delta_pct = Some(delta);
    let worse = match m.better {
        Better::Lower => delta > 0.0,
        Better::Higher => delta < 0.0,
    };
    let beyond = delta.abs() > opts.threshold_pct;
    let direction = if worse {
        Verdict::Regressed
    } else {
        Verdict::Improved
    };
    match (&ma.values, &mb.values) {
        (Values::Samples(sa), Values::Samples(sb)) if testable(sa.len(), sb.len(), opts.alpha) => {
            let mw = mann_whitney(sa, sb);
            let ci = bootstrap_median_ratio(sa, sb, &opts.bootstrap);
            let significant = match (mw, ci) {
                (Some(mw), Some(ci)) => {
                    mw.p_two_sided < opts.alpha && !(ci.low <= 1.0 && 1.0 <= ci.high)
                }
                _ => false,
            };
            row.mann_whitney = mw;
            row.ratio_ci = ci;
            row.significant = Some(significant);
            row.basis = Basis::Statistical;
            row.verdict = if significant && beyond {
                direction
            } else {
                Verdict::NoSignificantChange
            };
            if significant && !beyond {
                row.note = format!("significant, but within ±{} %", opts.threshold_pct);
            }
        }
        (Values::Samples(sa), Values::Samples(sb)) => {
            row.note = format!(
                "{} + {} samples cannot reach p < {}: threshold only",
                sa.len(),
                sb.len(),
                opts.alpha
            );
            row.verdict = if beyond {
                direction
            } else {
                Verdict::NoSignificantChange
            };
        }
        (x, y) => {
            let why = [x, y]
                .iter()
                .find_map(|v| match v {
                    Values::Single(_, why) => Some(*why),
                    Values::Samples(_) => None,
                })
                .unwrap_or_default();
            row.note = format!("{why}: threshold only");
            row.verdict = if beyond {
                direction
            } else {
                Verdict::NoSignificantChange
            };
        }
    }
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sampled(key: &str, better: Better, v: &[f64]) -> Metric {
        Metric {
            key: key.into(),
            label: key.into(),
            unit: "ms",
            better,
            values: Values::Samples(v.to_vec()),
        }
    }

    fn opts() -> Options {
        Options {
            bootstrap: super::super::stats::BootstrapSettings {
                resamples: 2_000,
                ..Default::default()
            },
            ..Options::default()
        }
    }

    const BASE: [f64; 8] = [10.0, 10.4, 9.8, 10.1, 10.3, 9.9, 10.2, 10.05];

    #[test]
    fn a_clear_slowdown_regresses_and_a_speedup_improves() {
        let slow: Vec<f64> = BASE.iter().map(|v| v * 1.5).collect();
        let r = compare_all(
            &[sampled("x", Better::Lower, &BASE)],
            &[sampled("x", Better::Lower, &slow)],
            &opts(),
        );
        assert_eq!(
            (r[0].verdict, r[0].basis),
            (Verdict::Regressed, Basis::Statistical)
        );
        assert!((r[0].delta_pct.unwrap() - 50.0).abs() < 1e-9);
        assert!(r[0].mann_whitney.unwrap().exact);
        // The same numbers for a higher-is-better metric are an improvement.
        let h = compare_all(
            &[sampled("x", Better::Higher, &BASE)],
            &[sampled("x", Better::Higher, &slow)],
            &opts(),
        );
        assert_eq!(h[0].verdict, Verdict::Improved);
    }

    #[test]
    fn significant_but_small_changes_stay_within_the_threshold() {
        // A tight sample (±0.3 %) and the same 3 % slower: fully separated.
        let tight_base = [10.0, 10.02, 9.99, 10.01, 10.03, 9.98, 10.015, 10.005];
        let slightly: Vec<f64> = tight_base.iter().map(|v| v * 1.03).collect();
        let r = compare_all(
            &[sampled("x", Better::Lower, &tight_base)],
            &[sampled("x", Better::Lower, &slightly)],
            &opts(),
        );
        assert_eq!(r[0].significant, Some(true), "{:?}", r[0]);
        assert_eq!(r[0].verdict, Verdict::NoSignificantChange);
        assert!(r[0].note.contains("within"), "{}", r[0].note);
        // With a 2 % threshold the same change is a regression.
        let tight = Options {
            threshold_pct: 2.0,
            ..opts()
        };
        let r = compare_all(
            &[sampled("x", Better::Lower, &tight_base)],
            &[sampled("x", Better::Lower, &slightly)],
            &tight,
        );
        assert_eq!(r[0].verdict, Verdict::Regressed);
    }

    #[test]
    fn a_large_but_noisy_change_is_not_significant() {
        // Medians differ by 20 %, but the samples overlap completely.
        let a = [5.0, 20.0, 8.0, 15.0, 10.0];
        let b = [6.0, 19.0, 12.0, 14.0, 7.0];
        let r = compare_all(
            &[sampled("x", Better::Lower, &a)],
            &[sampled("x", Better::Lower, &b)],
            &opts(),
        );
        assert!((r[0].delta_pct.unwrap() - 20.0).abs() < 1e-9);
        assert_eq!(r[0].significant, Some(false));
        assert_eq!(r[0].verdict, Verdict::NoSignificantChange);
    }

    #[test]
    fn too_few_samples_fall_back_to_the_threshold() {
        // 3 + 3 fully separated: p = 2/20 = 0.1 at best; 4 + 4: 2/70 = 0.029.
        assert!(!testable(3, 3, 0.05) && testable(4, 4, 0.05) && testable(3, 5, 0.05));
        assert!(!testable(1, 30, 0.05) && testable(1, 50, 0.05) && testable(2, 100, 0.05));
        let r = compare_all(
            &[sampled("x", Better::Lower, &[1.0, 1.1, 0.9])],
            &[sampled("x", Better::Lower, &[2.0, 2.1, 1.9])],
            &opts(),
        );
        assert_eq!(
            (r[0].verdict, r[0].basis),
            (Verdict::Regressed, Basis::ThresholdOnly)
        );
        assert!(
            r[0].note.contains("3 + 3 samples cannot reach p < 0.05"),
            "{}",
            r[0].note
        );
    }

    #[test]
    fn one_value_metrics_use_the_threshold_alone_and_say_so() {
        let single = |v| Metric {
            key: "mfu.prefill".into(),
            label: "MFU prefill".into(),
            unit: "%",
            better: Better::Higher,
            values: Values::Single(v, "one value per run"),
        };
        let r = compare_all(&[single(40.0)], &[single(36.0)], &opts());
        assert_eq!(
            (r[0].verdict, r[0].basis),
            (Verdict::Regressed, Basis::ThresholdOnly)
        );
        assert!(r[0].note.contains("threshold only"), "{}", r[0].note);
        let r = compare_all(&[single(40.0)], &[single(39.0)], &opts());
        assert_eq!(r[0].verdict, Verdict::NoSignificantChange);
        let r = compare_all(&[single(40.0)], &[], &opts());
        assert_eq!(r[0].verdict, Verdict::NotCompared);
        assert_eq!(r[0].note, "only in A");
    }
}
