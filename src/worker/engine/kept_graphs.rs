//! The CUDA graphs one stage keeps, per key, at most a fixed number of them: inputs that vary
//! (pages of many crop grids, batches of many left paddings) would otherwise capture a graph
//! per combination and keep each one's static buffers for the rest of the run. When a new key
//! would exceed the bound, the graph used longest ago is dropped (its static buffers are freed;
//! its scratch memory stays in the pool the graphs share, for the next capture to reuse).
use std::collections::HashMap;
use std::hash::Hash;

/// At most `capacity` values (captured graphs with their buffers) by key, least recently used
/// dropped first.
#[derive(Debug)]
pub struct KeptGraphs<K, V> {
    capacity: usize,
    entries: HashMap<K, (V, u64)>,
    /// A use counter: each lookup or insert stamps its entry with the next value.
    clock: u64,
    dropped: u64,
}

impl<K: Hash + Eq + Clone, V> KeptGraphs<K, V> {
    /// An empty set that keeps up to `capacity` (at least 1) values.
    pub fn new(capacity: usize) -> Self {
        KeptGraphs {
            capacity: capacity.max(1),
            entries: HashMap::new(),
            clock: 0,
            dropped: 0,
        }
    }

    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    /// The value of `key`, marked as just used.
    pub fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        let now = self.tick();
        self.entries.get_mut(key).map(|(v, used)| {
            *used = now;
            v
        })
    }

    /// Any kept value (the graphs share one memory pool; a new capture joins it through one).
    pub fn any(&self) -> Option<&V> {
        self.entries.values().next().map(|(v, _)| v)
    }

    /// Keeps `value` for `key` (a value kept for `key` before is dropped), first dropping the
    /// least recently used value if the set is full.
    pub fn insert(&mut self, key: K, value: V) {
        if !self.entries.contains_key(&key) && self.entries.len() >= self.capacity {
            let oldest = self
                .entries
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(k, _)| k.clone());
            if let Some(oldest) = oldest {
                self.entries.remove(&oldest);
                self.dropped += 1;
            }
        }
        let now = self.tick();
        if self.entries.insert(key, (value, now)).is_some() {
            self.dropped += 1;
        }
    }

    /// Drops every value.
    pub fn clear(&mut self) {
        self.dropped += self.entries.len() as u64;
        self.entries.clear();
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// How many values were dropped (to keep the bound, or by [`KeptGraphs::clear`]).
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}

#[cfg(test)]
mod tests {
    use super::KeptGraphs;

    /// The bound holds; the value used longest ago goes first, a lookup counting as a use;
    /// replacing a kept key's value drops only that value.
    #[test]
    fn drops_the_least_recently_used_beyond_the_bound() {
        let mut kept = KeptGraphs::new(2);
        kept.insert("a", 1);
        kept.insert("b", 2);
        assert_eq!(kept.get_mut(&"a"), Some(&mut 1));
        kept.insert("c", 3); // "b" was used longest ago
        assert_eq!(kept.len(), 2);
        assert!(kept.get_mut(&"b").is_none());
        assert_eq!(kept.get_mut(&"a"), Some(&mut 1));
        assert_eq!(kept.get_mut(&"c"), Some(&mut 3));
        assert_eq!(kept.dropped(), 1);
        kept.insert("c", 4); // replaces (and drops) the value kept for "c"
        assert_eq!((kept.len(), kept.dropped()), (2, 2));
        assert_eq!(kept.get_mut(&"c"), Some(&mut 4));
        kept.insert("d", 5); // "a" now
        assert!(kept.get_mut(&"a").is_none());
        kept.clear();
        assert!(kept.is_empty() && kept.any().is_none());
        assert_eq!(kept.dropped(), 5);
    }

    /// A bound of zero keeps one value.
    #[test]
    fn keeps_at_least_one() {
        let mut kept = KeptGraphs::new(0);
        kept.insert(1, "x");
        assert_eq!(kept.any(), Some(&"x"));
        kept.insert(2, "y");
        assert_eq!((kept.len(), kept.any()), (1, Some(&"y")));
    }
}
