//! Caching-allocator peaks per region: a [`RegionObserver`] wrapper that resets the allocator's
//! peak counters at every region boundary and folds each reading into the enclosing regions,
//! so nested regions (sam ⊂ vision ⊂ prefill) each get their own peak and the run keeps its
//! overall peak. The allocator is reached through [`AllocatorProbe`] (the worker's CUDA shim on
//! a GPU, a fake in tests); its statistics live on the host, so reading them never syncs the GPU.

use crate::region::{Module, Region, RegionGuard, RegionObserver};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::BTreeMap;

/// Peak bytes since the last reset: (allocated, reserved).
pub type Peak = (i64, i64);

/// Reads and resets the allocator's peak counters.
pub trait AllocatorProbe {
    fn peak(&self) -> Option<Peak>;
    fn reset_peak(&self);
}

/// Peak allocated / reserved bytes of one region over all its occurrences.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegionPeak {
    pub allocated_bytes: i64,
    pub reserved_bytes: i64,
}

impl RegionPeak {
    fn fold(&mut self, p: Peak) {
        self.allocated_bytes = self.allocated_bytes.max(p.0);
        self.reserved_bytes = self.reserved_bytes.max(p.1);
    }
}

/// What the wrapper has seen so far; kept across requests.
#[derive(Debug, Default, Clone)]
pub struct StagePeaks {
    pub regions: BTreeMap<String, RegionPeak>,
    /// Over everything read, inside regions or between them.
    pub overall: RegionPeak,
    /// Peaks of the regions open now, innermost last.
    open: Vec<RegionPeak>,
}

/// Forwards to `inner` and records allocator peaks per region into `peaks`.
pub struct AllocatorPeaks<'a, P: AllocatorProbe> {
    pub inner: &'a dyn RegionObserver,
    pub probe: &'a P,
    pub peaks: &'a RefCell<StagePeaks>,
}

impl<P: AllocatorProbe> AllocatorPeaks<'_, P> {
    /// Folds the peak since the last reset into the open regions and the overall peak, then
    /// resets the counters.
    fn checkpoint(&self, peaks: &mut StagePeaks) {
        if let Some(p) = self.probe.peak() {
            peaks.overall.fold(p);
            if let Some(top) = peaks.open.last_mut() {
                top.fold(p);
            }
        }
        self.probe.reset_peak();
    }
}

impl<P: AllocatorProbe> RegionObserver for AllocatorPeaks<'_, P> {
    fn enter(&self, region: Region) -> RegionGuard<'_> {
        {
            let mut peaks = self.peaks.borrow_mut();
            self.checkpoint(&mut peaks);
            peaks.open.push(RegionPeak::default());
        }
        let inner = self.inner.enter(region);
        RegionGuard::on_exit(move || {
            drop(inner);
            let mut peaks = self.peaks.borrow_mut();
            self.checkpoint(&mut peaks);
            let mine = peaks.open.pop().unwrap_or_default();
            peaks
                .regions
                .entry(region.nvtx_name().to_string())
                .or_default()
                .fold((mine.allocated_bytes, mine.reserved_bytes));
            if let Some(parent) = peaks.open.last_mut() {
                parent.fold((mine.allocated_bytes, mine.reserved_bytes));
            }
        })
    }

    /// Forwarded as overlapped, so no timing event is recorded inside a CUDA graph capture; no
    /// allocator peak of its own (it would mix both streams' allocations).
    fn enter_overlapped(&self, region: Region) -> RegionGuard<'_> {
        self.inner.enter_overlapped(region)
    }

    /// Forwarded; a module takes no allocator reading (modules are never measured themselves).
    fn enter_module(&self, module: Module, index: Option<u32>) -> RegionGuard<'_> {
        self.inner.enter_module(module, index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::region::{NoopObserver, DECODE, DECODE_STEP, PREFILL};
    use std::cell::Cell;

    /// An allocator whose live bytes the test moves; peak tracks the max since the last reset.
    #[derive(Default)]
    struct Fake {
        live: Cell<i64>,
        peak: Cell<i64>,
    }

    impl Fake {
        fn set(&self, bytes: i64) {
            self.live.set(bytes);
            self.peak.set(self.peak.get().max(bytes));
        }
    }

    impl AllocatorProbe for Fake {
        fn peak(&self) -> Option<Peak> {
            Some((self.peak.get(), self.peak.get() * 2))
        }
        fn reset_peak(&self) {
            self.peak.set(self.live.get());
        }
    }

    #[test]
    fn nested_regions_get_their_own_peaks_and_parents_include_children() {
        let fake = Fake::default();
        let store = RefCell::new(StagePeaks::default());
        let obs = AllocatorPeaks {
            inner: &NoopObserver,
            probe: &fake,
            peaks: &store,
        };
        fake.set(10);
        {
            let _p = obs.enter(PREFILL);
            fake.set(20);
            {
                let _v = obs.enter(Region::within("vision", PREFILL));
                fake.set(50); // transient peak inside vision
                fake.set(15);
            }
            fake.set(30);
        }
        fake.set(5);
        {
            let _d = obs.enter(DECODE);
            for bytes in [12, 18, 12] {
                let _s = obs.enter(DECODE_STEP);
                fake.set(bytes);
            }
        }
        let s = store.borrow();
        let get = |r: &str| s.regions[r].allocated_bytes;
        assert_eq!(get("vision"), 50);
        assert_eq!(get("prefill"), 50, "a parent includes its children's peaks");
        assert_eq!(get("decode_step"), 18);
        assert_eq!(get("decode"), 18);
        assert_eq!(s.regions["decode"].reserved_bytes, 36);
        assert_eq!(s.overall.allocated_bytes, 50);
        assert!(s.open.is_empty());
    }

    /// A module inside a stage takes no reading of its own: its peak stays the stage's, and no
    /// module name becomes a region key.
    #[test]
    fn module_marks_take_no_peak() {
        let fake = Fake::default();
        let store = RefCell::new(StagePeaks::default());
        let obs = AllocatorPeaks {
            inner: &NoopObserver,
            probe: &fake,
            peaks: &store,
        };
        {
            let _s = obs.enter(DECODE_STEP);
            fake.set(40);
            let _m = obs.enter_module(crate::region::Module::indexed("layer", None), Some(0));
            fake.set(70);
        }
        let s = store.borrow();
        assert_eq!(s.regions.keys().collect::<Vec<_>>(), ["decode_step"]);
        assert_eq!(s.regions["decode_step"].allocated_bytes, 70);
    }
}
