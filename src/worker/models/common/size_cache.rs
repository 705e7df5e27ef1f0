//! Tensors derived from weights once per input size (a position table resized to a grid side),
//! kept for the next call of that size instead of recomputed on every call.
use anyhow::Result;
use std::collections::HashMap;
use std::sync::Mutex;
use tch::Tensor;

/// A tensor per size, built on first use.
#[derive(Debug, Default)]
pub struct SizeCache(Mutex<HashMap<i64, Tensor>>);

impl SizeCache {
    /// The tensor for `size`: the cached one, or `build()`'s, which is kept.
    pub fn get_or_build(
        &self,
        size: i64,
        build: impl FnOnce() -> Result<Tensor>,
    ) -> Result<Tensor> {
        let mut map = self
            .0
            .lock()
            .map_err(|_| anyhow::anyhow!("a size cache was poisoned by a panic"))?;
        if let Some(t) = map.get(&size) {
            return Ok(t.shallow_clone());
        }
        let t = build()?;
        map.insert(size, t.shallow_clone());
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::SizeCache;
    use tch::{Device, Kind, Tensor};

    #[test]
    fn builds_once_per_size_and_returns_the_same_tensor() {
        let cache = SizeCache::default();
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
