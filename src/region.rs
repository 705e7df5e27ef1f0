//! Model regions (stages) and the observer the model calls at their boundaries.
//! Minimal version from the `measure` branch; the lead's region.rs replaces it on merge.

/// A region of DeepSeek-OCR inference that gets its own timings and NVTX range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Region {
    Sam,
    Clip,
    Projector,
    Vision,
    Prefill,
    Decode,
    DecodeStep,
}

impl Region {
    /// The NVTX range / Kineto user-scope name (the one spelling used everywhere).
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

/// Closes a region when dropped (RAII, so an early `?` still closes it).
#[must_use = "the region closes when the guard is dropped"]
pub struct RegionGuard<'a> {
    on_exit: Option<Box<dyn FnOnce() + 'a>>,
}

impl<'a> RegionGuard<'a> {
    /// A guard that runs `on_exit` when dropped.
    pub fn new(on_exit: impl FnOnce() + 'a) -> Self {
        RegionGuard {
            on_exit: Some(Box::new(on_exit)),
        }
    }

    /// A guard that does nothing.
    pub fn noop() -> Self {
        RegionGuard { on_exit: None }
    }
}

impl Drop for RegionGuard<'_> {
    fn drop(&mut self) {
        if let Some(f) = self.on_exit.take() {
            f();
        }
    }
}

/// Called by the model at region boundaries only.
pub trait RegionObserver {
    fn enter(&self, region: Region) -> RegionGuard<'_>;
}

/// Observes nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoopObserver;

impl RegionObserver for NoopObserver {
    fn enter(&self, _region: Region) -> RegionGuard<'_> {
        RegionGuard::noop()
    }
}
