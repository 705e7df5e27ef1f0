//! Tensors derived from weights once per input size (a position table resized to a grid side,
//! relative-position tables for a window), kept for the next call of that size instead of
//! recomputed on every call.
use anyhow::Result;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use tch::Tensor;

/// A cached value handed out as a view of the same storage (tch tensors are not `Clone`).
pub trait Shared {
    fn share(&self) -> Self;
}

impl Shared for Tensor {
    fn share(&self) -> Self {
        self.shallow_clone()
    }
}

/// A value per size (`K`: a side, a window shape), built on first use.
#[derive(Debug)]
pub struct SizeCache<K = i64, V = Tensor>(Mutex<HashMap<K, V>>);

impl<K, V> Default for SizeCache<K, V> {
    fn default() -> Self {
        SizeCache(Mutex::new(HashMap::new()))
    }
}

impl<K: Eq + Hash, V: Shared> SizeCache<K, V> {
    /// The value for `size`: the cached one, or `build()`'s, which is kept.
    pub fn get_or_build(&self, size: K, build: impl FnOnce() -> Result<V>) -> Result<V> {
        let mut map = self
            .0
            .lock()
            .map_err(|_| anyhow::anyhow!("a size cache was poisoned by a panic"))?;
        if let Some(v) = map.get(&size) {
            return Ok(v.share());
        }
        let v = build()?;
        let out = v.share();
        map.insert(size, v);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::SizeCache;
    use tch::{Device, Kind, Tensor};

    #[test]
    fn builds_once_per_size_and_returns_the_same_tensor() {
        let cache: SizeCache = SizeCache::default();
        let builds = std::cell::Cell::new(0);
        let get = |size: i64| {
            cache
                .get_or_build(size, || {
                    builds.set(builds.get() + 1);
                    Ok(Tensor::full(
                        [size],
                        size as f64,
                        (Kind::Float, Device::Cpu),
                    ))
                })
                .unwrap()
        };
        let a = get(3);
        let b = get(3);
        let c = get(5);
        assert_eq!(
            a.data_ptr(),
            b.data_ptr(),
            "a second call rebuilt the tensor"
        );
        assert_eq!(c.size(), vec![5]);
        assert_eq!(builds.get(), 2);
        assert!(cache.get_or_build(7, || anyhow::bail!("no table")).is_err());
    }
}
