//! The tests against values computed by hand (ranks, U, the exact tail count, the normal
//! deviate with tie correction), and the bootstrap's determinism and coverage.
use super::*;

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

#[test]
fn exact_test_matches_the_hand_count() {
    // Pooled order: 12a 15a 18a 19b 22a 25b 27b 30b 31b. Ranks of A: 1, 2, 3, 5 → R = 11,
    // U_A = 11 − 4·5/2 = 1, U_B = 4·5 − 1 = 19. Orderings with U ≤ 1: U = 0 (aaaabbbbb) and
    // U = 1 (aaababbbb): 2 of C(9, 4) = 126; two-sided p = 2 · 2/126 = 0.031746.
    let r = mann_whitney(&[12.0, 15.0, 18.0, 22.0], &[19.0, 25.0, 27.0, 30.0, 31.0]).unwrap();
    assert!(r.exact);
    assert_eq!((r.u_a, r.u_b), (1.0, 19.0));
    assert!(close(r.p_two_sided, 4.0 / 126.0, 1e-12), "{r:?}");
    // Swapping the samples swaps U and keeps p.
    let s = mann_whitney(&[19.0, 25.0, 27.0, 30.0, 31.0], &[12.0, 15.0, 18.0, 22.0]).unwrap();
    assert_eq!((s.u_a, s.u_b), (19.0, 1.0));
    assert_eq!(s.p_two_sided, r.p_two_sided);
}

#[test]
fn tied_samples_use_the_normal_approximation_with_tie_correction() {
    // Pooled: 1a | 2a 2a 2b | 3a 3b | 4b | 5b. Average ranks: 1; 3, 3, 3; 5.5, 5.5; 7; 8.
    // R_A = 1 + 3 + 3 + 5.5 = 12.5, U_A = 12.5 − 10 = 2.5, U_B = 13.5.
    // Σ(t³ − t) = (27 − 3) + (8 − 2) = 30; σ² = 4·4/12 · (9 − 30/(8·7)) = 11.285714;
    // z = (|2.5 − 8| − 0.5)/σ = 5/3.359422 = 1.48835; p = erfc(z/√2) = 0.13666.
    let r = mann_whitney(&[1.0, 2.0, 2.0, 3.0], &[2.0, 3.0, 4.0, 5.0]).unwrap();
    assert!(!r.exact);
    assert_eq!((r.u_a, r.u_b), (2.5, 13.5));
    assert!(close(r.z.unwrap(), 1.48835, 1e-4), "{r:?}");
    assert!(close(r.p_two_sided, 0.13666, 2e-4), "{r:?}");
}

#[test]
fn identical_and_fully_tied_samples_show_no_difference() {
    let a = [3.0, 1.0, 2.0, 5.0, 4.0];
    let r = mann_whitney(&a, &a).unwrap();
    assert_eq!(r.u_a, r.u_b);
    assert!(r.p_two_sided > 0.99, "{r:?}");
    let t = mann_whitney(&[7.0; 6], &[7.0; 9]).unwrap();
    assert_eq!(t.p_two_sided, 1.0);
    assert!(mann_whitney(&[], &[1.0]).is_none());
    assert!(mann_whitney(&[f64::NAN], &[1.0]).is_none());
}

#[test]
fn large_untied_samples_agree_with_the_exact_test_in_the_limit() {
    // 21 vs 21 (normal), fully separated: U = 0, z = (220.5 − 0.5)/√(21·21·43/12) = 5.5314.
    let a: Vec<f64> = (0..21).map(f64::from).collect();
    let b: Vec<f64> = (100..121).map(f64::from).collect();
    let r = mann_whitney(&a, &b).unwrap();
    assert!(!r.exact);
    assert!(close(
        r.z.unwrap(),
        220.0 / (21.0f64 * 21.0 * 43.0 / 12.0).sqrt(),
        1e-9
    ));
    assert!(r.p_two_sided < 1e-6, "{r:?}");
}

#[test]
fn u_distribution_counts_every_ordering_once() {
    // Σ counts = C(m + n, m), symmetric around m·n/2; (2, 2): aabb bbaa → 1 each, abab, baba,
    // abba, baab → u = 1, 3, 2, 2: [1, 1, 2, 1, 1].
    assert_eq!(u_distribution(2, 2), vec![1, 1, 2, 1, 1]);
    let d = u_distribution(7, 5);
    assert_eq!(d.iter().sum::<u64>(), 792); // C(12, 5)
    assert!(d.iter().eq(d.iter().rev()));
}

#[test]
fn erfc_matches_tabulated_values() {
    assert!(close(erfc(0.0), 1.0, 1e-7));
    assert!(close(erfc(1.0), 0.157_299_207, 1e-7));
    assert!(close(erfc(-1.0), 1.842_700_793, 1e-7));
    assert!(close(erfc(2.0), 0.004_677_735, 1e-8));
}

#[test]
fn median_of_odd_and_even_counts() {
    assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
    assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
    assert_eq!(median(&mut [5.0]), 5.0);
}

/// Log-normal draws (Box-Muller) with median `m` and log-sd `s`.
fn lognormal(rng: &mut SplitMix64, n: usize, m: f64, s: f64) -> Vec<f64> {
    (0..n)
        .map(|_| {
            let (u1, u2) = (1.0 - rng.unit(), rng.unit());
            let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
            m * (s * z).exp()
        })
        .collect()
}

#[test]
fn bootstrap_is_deterministic_for_a_seed() {
    let mut rng = SplitMix64::new(7);
    let a = lognormal(&mut rng, 30, 10.0, 0.3);
    let b = lognormal(&mut rng, 30, 12.0, 0.3);
    let s = BootstrapSettings::default();
    let one = bootstrap_median_ratio(&a, &b, &s).unwrap();
    assert_eq!(one, bootstrap_median_ratio(&a, &b, &s).unwrap());
    let other = BootstrapSettings { seed: 8, ..s };
    let two = bootstrap_median_ratio(&a, &b, &other).unwrap();
    assert_eq!(one.ratio, two.ratio, "the point estimate does not resample");
    assert_ne!((one.low, one.high), (two.low, two.high));
    assert!(one.low <= one.ratio && one.ratio <= one.high, "{one:?}");
}

#[test]
fn bootstrap_interval_covers_a_known_shift_about_95_percent_of_the_time() {
    // True median ratio 1.2; 200 independent experiments of 40 + 40 draws.
    let s = BootstrapSettings {
        resamples: 1_000,
        ..BootstrapSettings::default()
    };
    let mut rng = SplitMix64::new(2024);
    let trials = 200;
    let covered = (0..trials)
        .filter(|i| {
            let a = lognormal(&mut rng, 40, 10.0, 0.25);
            let b = lognormal(&mut rng, 40, 12.0, 0.25);
            let ci = bootstrap_median_ratio(&a, &b, &BootstrapSettings { seed: *i, ..s }).unwrap();
            ci.low <= 1.2 && 1.2 <= ci.high
        })
        .count();
    let coverage = covered as f64 / trials as f64;
    assert!((0.88..=0.995).contains(&coverage), "coverage {coverage}");
}

#[test]
fn bootstrap_interval_excludes_one_on_a_clear_shift_and_includes_it_without() {
    let mut rng = SplitMix64::new(99);
    let a = lognormal(&mut rng, 60, 10.0, 0.3);
    let b = lognormal(&mut rng, 60, 15.0, 0.3);
    let s = BootstrapSettings::default();
    let ci = bootstrap_median_ratio(&a, &b, &s).unwrap();
    assert!(ci.low > 1.0, "the interval excludes 1: {ci:?}");
    assert!((1.2..1.8).contains(&ci.ratio), "{ci:?}");
    let same = bootstrap_median_ratio(&a, &a, &s).unwrap();
    assert_eq!(same.ratio, 1.0);
    assert!(same.low < 1.0 && 1.0 < same.high, "{same:?}");
    assert!(bootstrap_median_ratio(&[0.0, 0.0], &[1.0], &s).is_none());
}

#[test]
fn thinning_keeps_the_extremes_and_the_median() {
    let v: Vec<f64> = (0..10_001).map(|i| f64::from(i) * 0.5).rev().collect();
    let t = thin(&v, 101);
    assert_eq!(t.len(), 101);
    assert_eq!((t[0], t[100], t[50]), (0.0, 5000.0, 2500.0));
}
