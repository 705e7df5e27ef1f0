//! Profiling regions of the workload and the observer the model calls at their boundaries.
//! The model only marks boundaries; `measure/` implements NVTX ranges, timers and sync policy.

/// A named stretch of the workload. `nvtx_name` is the single source of the emitted names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Region {
    /// SAM ViT-B encoder, neck and compressor over all views of one request.
    Sam,
    /// CLIP-L over SAM features.
    Clip,
    /// Concat + linear projector + newline/separator arrangement.
    Projector,
    /// Whole vision path (contains Sam, Clip, Projector).
    Vision,
    /// Prefill: vision + decoder over the whole prompt, logits of the last position.
    Prefill,
    /// The whole decode loop.
    Decode,
    /// One decode step (one new token per row).
    DecodeStep,
}

impl Region {
    /// All regions, in nesting order.
    pub const ALL: [Region; 7] = [
        Region::Sam,
        Region::Clip,
        Region::Projector,
        Region::Vision,
        Region::Prefill,
        Region::Decode,
        Region::DecodeStep,
    ];

    /// The region this one is nested in (Sam, Clip, Projector ⊂ Vision ⊂ Prefill;
    /// DecodeStep ⊂ Decode).
    pub fn parent(&self) -> Option<Region> {
        match self {
            Region::Sam | Region::Clip | Region::Projector => Some(Region::Vision),
            Region::Vision => Some(Region::Prefill),
            Region::DecodeStep => Some(Region::Decode),
            Region::Prefill | Region::Decode => None,
        }
    }

    pub fn from_name(name: &str) -> Option<Region> {
        Region::ALL.into_iter().find(|r| r.nvtx_name() == name)
    }

    /// True when `self` is `outer` or nested (at any depth) inside it.
    pub fn is_within(&self, outer: Region) -> bool {
        let mut r = Some(*self);
        while let Some(x) = r {
            if x == outer {
                return true;
            }
            r = x.parent();
        }
        false
    }

    /// The push/pop stack down to this region, as an ncu `--nvtx-include` expression
    /// (`decode/decode_step/`).
    pub fn nvtx_path(&self) -> String {
        let mut names = vec![self.nvtx_name()];
        let mut r = self.parent();
        while let Some(p) = r {
            names.push(p.nvtx_name());
            r = p.parent();
        }
        names.reverse();
        format!("{}/", names.join("/"))
    }

    /// ncu `--nvtx-include` expressions that select every kernel inside `self`, nested or not.
    pub fn nvtx_includes(&self) -> Vec<String> {
        Region::ALL
            .iter()
            .filter(|r| r.is_within(*self))
            .map(Region::nvtx_path)
            .collect()
    }

    /// Name used for NVTX ranges, Kineto user scopes and report keys.
    pub fn nvtx_name(&self) -> &'static str {
        match self {
            Region::Sam => "sam",
            Region::Clip => "clip",
            Region::Projector => "projector",
            Region::Vision => "vision",
            Region::Prefill => "prefill",
            Region::Decode => "decode",
            Region::DecodeStep => "decode_step",
        }
    }
}

impl std::fmt::Display for Region {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.nvtx_name())
    }
}

/// RAII guard returned by [`RegionObserver::enter`]; the region ends when it is dropped
/// (also on an early `?`).
#[must_use = "the region ends when the guard is dropped"]
pub struct RegionGuard<'a> {
    on_exit: Option<Box<dyn FnOnce() + 'a>>,
}

impl<'a> RegionGuard<'a> {
    /// A guard that does nothing on exit.
    pub fn noop() -> Self {
        RegionGuard { on_exit: None }
    }

    /// A guard that runs `f` when dropped.
    pub fn on_exit(f: impl FnOnce() + 'a) -> Self {
        RegionGuard {
            on_exit: Some(Box::new(f)),
        }
    }
}

impl Drop for RegionGuard<'_> {
    fn drop(&mut self) {
        if let Some(f) = self.on_exit.take() {
            f();
        }
    }
}

/// Receives region boundaries from the model. Implementations own any sync/timing policy.
pub trait RegionObserver {
    /// Marks the start of `region`; the returned guard marks its end.
    fn enter(&self, region: Region) -> RegionGuard<'_>;
}

/// Observer that records nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoopObserver;

impl RegionObserver for NoopObserver {
    fn enter(&self, _region: Region) -> RegionGuard<'_> {
        RegionGuard::noop()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    struct Recorder(RefCell<Vec<String>>);
    impl RegionObserver for Recorder {
        fn enter(&self, region: Region) -> RegionGuard<'_> {
            self.0.borrow_mut().push(format!("+{region}"));
            RegionGuard::on_exit(move || self.0.borrow_mut().push(format!("-{region}")))
        }
    }

    #[test]
    fn guards_close_in_reverse_order() {
        let rec = Recorder(RefCell::new(Vec::new()));
        {
            let _a = rec.enter(Region::Vision);
            let _b = rec.enter(Region::Sam);
        }
        assert_eq!(*rec.0.borrow(), ["+vision", "+sam", "-sam", "-vision"]);
    }

    #[test]
    fn names_are_unique() {
        let mut names: Vec<_> = Region::ALL.iter().map(|r| r.nvtx_name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), Region::ALL.len());
    }
}
