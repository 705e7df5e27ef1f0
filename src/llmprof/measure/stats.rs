//! Summary statistics of repeated measurements: mean, sample standard deviation, min, max,
//! p50/p90/p99 and coefficient of variation. Pure functions, no units attached.

/// Why a summary could not be computed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StatsError {
    #[error("no samples")]
    Empty,
    #[error("sample {index} is not a finite number ({value})")]
    NotFinite { index: usize, value: f64 },
}

/// Summary of `n` samples, in the samples' unit.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (divides by n − 1, like `numpy.std(ddof=1)`); `None` for n = 1.
    pub std: Option<f64>,
    pub min: f64,
    pub max: f64,
    /// Percentiles by linear interpolation between closest ranks, numpy's default
    /// (`method="linear"`): rank = q/100 · (n − 1), then interpolate.
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    /// `std / mean`; `None` when `std` is `None` or the mean is 0.
    pub cv: Option<f64>,
}

impl Summary {
    pub fn from_samples(samples: &[f64]) -> Result<Self, StatsError> {
        if samples.is_empty() {
            return Err(StatsError::Empty);
        }
        if let Some((index, &value)) = samples.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(StatsError::NotFinite { index, value });
        }
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let mean = sorted.iter().sum::<f64>() / n as f64;
        let std = (n > 1).then(|| {
            let ss: f64 = sorted.iter().map(|x| (x - mean) * (x - mean)).sum();
            (ss / (n - 1) as f64).sqrt()
        });
        let cv = std.filter(|_| mean != 0.0).map(|s| s / mean);
        Ok(Summary {
            n,
            mean,
            std,
            min: sorted[0],
            max: sorted[n - 1],
            p50: percentile_sorted(&sorted, 50.0),
            p90: percentile_sorted(&sorted, 90.0),
            p99: percentile_sorted(&sorted, 99.0),
            cv,
        })
    }

    /// Summary of integer nanoseconds, reported in milliseconds.
    pub fn from_ns_as_ms(samples_ns: &[u64]) -> Result<Self, StatsError> {
        let ms: Vec<f64> = samples_ns.iter().map(|&ns| ns as f64 / 1e6).collect();
        Summary::from_samples(&ms)
    }
}

/// The `q`-th percentile (0–100) of ascending `sorted` by linear interpolation (numpy default).
/// Panics if `sorted` is empty (callers check first).
pub fn percentile_sorted(sorted: &[f64], q: f64) -> f64 {
    assert!(!sorted.is_empty(), "percentile of no samples");
    let q = q.clamp(0.0, 100.0);
    let rank = q / 100.0 * (sorted.len() - 1) as f64;
    let lo = rank.floor() as usize;
    let hi = rank.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn five_samples_by_hand() {
        // Unsorted on purpose. Sorted: 1 2 3 4 10. Mean 20/5 = 4.
        // Squared deviations 9+4+1+0+36 = 50; sample variance 50/4 = 12.5; std = √12.5.
        // p50: rank 2 → 3. p90: rank 3.6 → 4 + 0.6·6 = 7.6. p99: rank 3.96 → 4 + 0.96·6 = 9.76.
        let s = Summary::from_samples(&[10.0, 3.0, 1.0, 4.0, 2.0]).unwrap();
        assert_eq!(s.n, 5);
        assert!(close(s.mean, 4.0));
        assert!(close(s.std.unwrap(), 12.5f64.sqrt()));
        assert!(close(s.min, 1.0) && close(s.max, 10.0));
        assert!(close(s.p50, 3.0));
        assert!(close(s.p90, 7.6));
        assert!(close(s.p99, 9.76));
        assert!(close(s.cv.unwrap(), 12.5f64.sqrt() / 4.0));
    }

    #[test]
    fn eight_samples_by_hand() {
        // 2 4 4 4 5 5 7 9: mean 5, squared deviations sum 32, sample variance 32/7.
        // p50: rank 3.5 → 4.5. p90: rank 6.3 → 7 + 0.3·2 = 7.6. p99: rank 6.93 → 7 + 0.93·2 = 8.86.
        let s = Summary::from_samples(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert!(close(s.mean, 5.0));
        assert!(close(s.std.unwrap(), (32.0f64 / 7.0).sqrt()));
        assert!(close(s.p50, 4.5));
        assert!(close(s.p90, 7.6));
        assert!(close(s.p99, 8.86));
    }

    #[test]
    fn one_sample_has_no_spread() {
        let s = Summary::from_samples(&[3.5]).unwrap();
        assert_eq!(s.std, None);
        assert_eq!(s.cv, None);
        assert!(close(s.p50, 3.5) && close(s.p99, 3.5));
    }

    #[test]
    fn zero_mean_has_no_cv() {
        let s = Summary::from_samples(&[-1.0, 1.0]).unwrap();
        assert!(close(s.std.unwrap(), 2f64.sqrt()));
        assert_eq!(s.cv, None);
    }

    #[test]
    fn rejects_empty_and_nan() {
        assert_eq!(Summary::from_samples(&[]), Err(StatsError::Empty));
        assert!(matches!(
            Summary::from_samples(&[1.0, f64::NAN]),
            Err(StatsError::NotFinite { index: 1, .. })
        ));
    }

    #[test]
    fn nanoseconds_become_milliseconds() {
        let s = Summary::from_ns_as_ms(&[1_000_000, 3_000_000]).unwrap();
        assert!(close(s.mean, 2.0));
        assert!(close(s.p50, 2.0));
    }
}
