//! Time intervals on one timeline: union, length, intersection and difference of sets of
//! half-open `[start, end)` nanosecond intervals. Pure.

/// A set of disjoint intervals, sorted by start; touching intervals are merged.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IntervalSet(Vec<(u64, u64)>);

impl IntervalSet {
    /// The union of `intervals` (any order, may overlap; empty ones are dropped).
    pub fn union_of(mut intervals: Vec<(u64, u64)>) -> Self {
        intervals.retain(|(s, e)| e > s);
        intervals.sort_unstable();
        let mut out: Vec<(u64, u64)> = Vec::with_capacity(intervals.len());
        for (s, e) in intervals {
            match out.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => out.push((s, e)),
            }
        }
        IntervalSet(out)
    }

    pub fn intervals(&self) -> &[(u64, u64)] {
        &self.0
    }

    /// Total covered time.
    pub fn length(&self) -> u64 {
        self.0.iter().map(|(s, e)| e - s).sum()
    }

    /// Time covered by both sets.
    pub fn overlap(&self, other: &IntervalSet) -> u64 {
        let (a, b) = (&self.0, &other.0);
        let (mut i, mut j, mut total) = (0, 0, 0);
        while i < a.len() && j < b.len() {
            let s = a[i].0.max(b[j].0);
            let e = a[i].1.min(b[j].1);
            if e > s {
                total += e - s;
            }
            if a[i].1 < b[j].1 {
                i += 1;
            } else {
                j += 1;
            }
        }
        total
    }

    /// Both sets together.
    pub fn with(&self, other: &IntervalSet) -> IntervalSet {
        IntervalSet::union_of(self.0.iter().chain(&other.0).copied().collect())
    }

    /// The gaps between consecutive intervals (idle time between the first start and last end).
    pub fn gaps(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.0.windows(2).map(|w| (w[0].1, w[1].0))
    }

    /// `(first start, last end)`, when not empty.
    pub fn span(&self) -> Option<(u64, u64)> {
        Some((self.0.first()?.0, self.0.last()?.1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn union_merges_overlapping_and_touching_intervals() {
        let u = IntervalSet::union_of(vec![
            (10, 20),
            (0, 5),
            (15, 30),
            (30, 31),
            (40, 40),
            (50, 60),
        ]);
        assert_eq!(u.intervals(), &[(0, 5), (10, 31), (50, 60)]);
        assert_eq!(u.length(), 5 + 21 + 10);
        assert_eq!(u.span(), Some((0, 60)));
        assert_eq!(u.gaps().collect::<Vec<_>>(), [(5, 10), (31, 50)]);
    }

    #[test]
    fn overlap_and_with_agree_with_lengths() {
        let a = IntervalSet::union_of(vec![(0, 10), (20, 30)]);
        let b = IntervalSet::union_of(vec![(5, 25), (29, 40)]);
        assert_eq!(a.overlap(&b), 5 + 5 + 1);
        assert_eq!(b.overlap(&a), a.overlap(&b));
        // |a ∪ b| = |a| + |b| − |a ∩ b|
        assert_eq!(a.with(&b).length(), a.length() + b.length() - a.overlap(&b));
        assert_eq!(IntervalSet::default().overlap(&a), 0);
    }
}
