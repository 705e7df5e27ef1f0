//! The seeded choice of a variant's items: a Fisher–Yates shuffle driven by ChaCha8 (rand_chacha),
//! with rejection sampling for unbiased indices. The stream and this algorithm are fixed, so a seed
//! picks the same items on every platform and every release (rand's own shuffles make no such
//! promise across versions).
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// `n` of the indices `0..len` chosen by `seed`, in increasing order (`n >= len`: all of them).
pub fn choose(len: usize, n: usize, seed: u64) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..len).collect();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let n = n.min(len);
    // Partial Fisher–Yates: position i gets a uniform pick among i..len.
    for i in 0..n {
        let j = i + below(&mut rng, (len - i) as u64) as usize;
        idx.swap(i, j);
    }
    let mut chosen = idx[..n].to_vec();
    chosen.sort_unstable();
    chosen
}

/// A uniform integer in `0..bound` (`bound >= 1`), by rejection.
fn below(rng: &mut ChaCha8Rng, bound: u64) -> u64 {
    let zone = u64::MAX - (u64::MAX % bound);
    loop {
        let x = rng.next_u64();
        if x < zone {
            return x % bound;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_always_picks_the_same_items() {
        let a = choose(100, 10, 42);
        assert_eq!(a, choose(100, 10, 42));
        assert_eq!(a.len(), 10);
        assert!(a.windows(2).all(|w| w[0] < w[1]), "{a:?}");
        assert_ne!(a, choose(100, 10, 43));
        assert_eq!(choose(5, 9, 1), vec![0, 1, 2, 3, 4]);
    }

    #[test]
    fn every_item_can_be_picked() {
        let mut seen = [false; 8];
        for seed in 0..200 {
            for i in choose(8, 1, seed) {
                seen[i] = true;
            }
        }
        assert!(seen.iter().all(|s| *s), "{seen:?}");
    }
}
