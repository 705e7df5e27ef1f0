//! The two tests `llmprof compare` runs on per-request samples: the two-sided Mann-Whitney U test
//! (exact for small samples without ties, else the normal approximation with tie and continuity
//! corrections, as scipy's `mannwhitneyu(method="exact"|"asymptotic")`), and a seeded percentile
//! bootstrap confidence interval of the ratio of medians B ÷ A. Pure and deterministic: no clock,
//! no global random state. Knows nothing about runs or metrics.
use crate::measure::stats::percentile_sorted;

/// Both samples at most this large and no ties: the exact distribution of U (counts stay exact
/// integers: C(40, 20) < 2^53).
pub const EXACT_MAX_N: usize = 20;

/// Result of the Mann-Whitney U test of A against B.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct MannWhitney {
    /// Pairs (a, b) with a > b, ties counted one half.
    pub u_a: f64,
    /// n_a × n_b − u_a.
    pub u_b: f64,
    /// The normal deviate (with continuity correction); `None` for the exact test.
    pub z: Option<f64>,
    pub p_two_sided: f64,
    pub exact: bool,
}

/// Two-sided Mann-Whitney U test; `None` when a sample is empty or holds a non-finite value.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Option<MannWhitney> {
    if a.is_empty() || b.is_empty() || a.iter().chain(b).any(|v| !v.is_finite()) {
        return None;
    }
    let (na, nb) = (a.len(), b.len());
    let (rank_sum_a, tie_term) = rank_sum_first(a, b);
    let u_a = rank_sum_a - (na * (na + 1)) as f64 / 2.0;
    let u_b = (na * nb) as f64 - u_a;
    if tie_term == 0.0 && na <= EXACT_MAX_N && nb <= EXACT_MAX_N {
        // u_a is an integer here (no ties).
        let k = u_a.min(u_b).round() as usize;
        let counts = u_distribution(na, nb);
        let total: f64 = counts.iter().map(|&c| c as f64).sum();
        let tail: f64 = counts[..=k].iter().map(|&c| c as f64).sum();
        return Some(MannWhitney {
            u_a,
            u_b,
            z: None,
            p_two_sided: (2.0 * tail / total).min(1.0),
            exact: true,
        });
    }
    let n = (na + nb) as f64;
    let mean = (na * nb) as f64 / 2.0;
    let var = (na * nb) as f64 / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
    let (z, p) = if var <= 0.0 {
        // Every value tied: no evidence of a difference.
        (0.0, 1.0)
    } else {
        let z = ((u_a - mean).abs() - 0.5).max(0.0) / var.sqrt();
        (z, erfc(z / std::f64::consts::SQRT_2).min(1.0))
    };
    Some(MannWhitney {
        u_a,
        u_b,
        z: Some(z),
        p_two_sided: p,
        exact: false,
    })
}

/// The rank sum of `a` in the pooled sample (ties get their average rank) and Σ(t³ − t) over the
/// tie groups.
fn rank_sum_first(a: &[f64], b: &[f64]) -> (f64, f64) {
    let mut pooled: Vec<(f64, bool)> = a
        .iter()
        .map(|&v| (v, true))
        .chain(b.iter().map(|&v| (v, false)))
        .collect();
    pooled.sort_by(|x, y| x.0.total_cmp(&y.0));
    let (mut rank_sum, mut tie_term) = (0.0, 0.0);
    let mut i = 0;
    while i < pooled.len() {
        let mut j = i;
        while j + 1 < pooled.len() && pooled[j + 1].0 == pooled[i].0 {
            j += 1;
        }
        // Ranks i+1 ..= j+1 share their mean.
        let rank = (i + j + 2) as f64 / 2.0;
        let t = (j - i + 1) as f64;
        tie_term += t * t * t - t;
        rank_sum += rank * pooled[i..=j].iter().filter(|p| p.1).count() as f64;
        i = j + 1;
    }
    (rank_sum, tie_term)
}

/// counts[u] = the number of orderings of `m` A's and `n` B's with U_A = u (recurrence
/// f(m, n, u) = f(m − 1, n, u − n) + f(m, n − 1, u): the largest value is an A, above all n B's,
/// or a B).
fn u_distribution(m: usize, n: usize) -> Vec<u64> {
    // row[j] = the distribution for (i, j) while i advances.
    let mut prev: Vec<Vec<u64>> = (0..=n).map(|_| vec![1]).collect(); // i = 0: only u = 0
    for i in 1..=m {
        let mut cur: Vec<Vec<u64>> = vec![vec![1]]; // j = 0: only u = 0
        for j in 1..=n {
            let mut d = vec![0u64; i * j + 1];
            for (u, &c) in prev[j].iter().enumerate() {
                d[u + j] += c;
            }
            for (u, &c) in cur[j - 1].iter().enumerate() {
                d[u] += c;
            }
            cur.push(d);
        }
        prev = cur;
    }
    prev.swap_remove(n)
}

/// erfc(x), fractional error below 1.2e-7 (the Chebyshev fit of Numerical Recipes, `erfcc`).
pub fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// SplitMix64 (Steele, Lea, Flood 2014): a small seeded generator, enough for resampling.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in 0..n (n > 0), by Lemire's multiply-shift (bias below n / 2^64).
    pub fn below(&mut self, n: usize) -> usize {
        ((self.next_u64() as u128 * n as u128) >> 64) as usize
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// How the bootstrap is run.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct BootstrapSettings {
    pub resamples: usize,
    /// Two-sided confidence level, e.g. 0.95.
    pub confidence: f64,
    pub seed: u64,
    /// Larger samples are thinned to this many evenly spaced order statistics first (their
    /// quantiles kept), so that 10 000 resamples of a long ITL list stay fast.
    pub max_samples: usize,
}

impl Default for BootstrapSettings {
    fn default() -> Self {
        BootstrapSettings {
            resamples: 10_000,
            confidence: 0.95,
            seed: 0x006c_6c6d_7072_6f66, // "llmprof" in ASCII
            max_samples: 2_000,
        }
    }
}

/// Ratio of medians B ÷ A with its percentile bootstrap interval.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct RatioCi {
    pub ratio: f64,
    pub low: f64,
    pub high: f64,
}

/// Percentile bootstrap CI of median(B) ÷ median(A), resampling A and B independently. `None`
/// when a sample is empty, holds a non-finite value, or A's median is not positive.
pub fn bootstrap_median_ratio(a: &[f64], b: &[f64], s: &BootstrapSettings) -> Option<RatioCi> {
    if a.is_empty() || b.is_empty() || a.iter().chain(b).any(|v| !v.is_finite()) {
        return None;
    }
    let median_a = positive(median(&mut a.to_vec()))?;
    let ratio = median(&mut b.to_vec()) / median_a;
    let (a, b) = (thin(a, s.max_samples), thin(b, s.max_samples));
    let mut rng = SplitMix64::new(s.seed);
    let (mut ra, mut rb) = (vec![0.0; a.len()], vec![0.0; b.len()]);
    let mut ratios = Vec::with_capacity(s.resamples);
    for _ in 0..s.resamples {
        for x in ra.iter_mut() {
            *x = a[rng.below(a.len())];
        }
        for x in rb.iter_mut() {
            *x = b[rng.below(b.len())];
        }
        let ma = median(&mut ra);
        if ma > 0.0 {
            ratios.push(median(&mut rb) / ma);
        }
    }
    if ratios.is_empty() {
        return None;
    }
    ratios.sort_by(f64::total_cmp);
    let tail = (1.0 - s.confidence) / 2.0 * 100.0;
    Some(RatioCi {
        ratio,
        low: percentile_sorted(&ratios, tail),
        high: percentile_sorted(&ratios, 100.0 - tail),
    })
}

fn positive(v: f64) -> Option<f64> {
    (v > 0.0).then_some(v)
}

/// The median (mean of the two middle values for an even count); reorders `v`.
pub fn median(v: &mut [f64]) -> f64 {
    let n = v.len();
    let (_, &mut hi, _) = v.select_nth_unstable_by(n / 2, f64::total_cmp);
    if n % 2 == 1 {
        hi
    } else {
        let lo = v[..n / 2].iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (lo + hi) / 2.0
    }
}

/// `v` itself, or `max` evenly spaced order statistics of it when it is longer.
fn thin(v: &[f64], max: usize) -> Vec<f64> {
    if v.len() <= max || max < 2 {
        return v.to_vec();
    }
    let mut sorted = v.to_vec();
    sorted.sort_by(f64::total_cmp);
    (0..max)
        .map(|i| percentile_sorted(&sorted, i as f64 * 100.0 / (max - 1) as f64))
        .collect()
}

#[cfg(test)]
mod tests;
