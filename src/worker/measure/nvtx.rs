//! `RegionObserver` for profiling runs: each region becomes an NVTX range (for Nsight) and,
//! optionally, a Kineto user scope and a timed stage. It owns the sync policy: by default ranges
//! only mark the host timeline (Nsight projects them onto the GPU); `sync_on_exit` waits for the
//! stream before closing, so a host-side range covers its GPU work (at the cost of a sync).
use std::cell::RefCell;

use anyhow::{anyhow, Result};

use super::timing::{ClockKind, StageTime, StageTimer};
use crate::ffi;
use llmprof::region::{
    Module, ModulePath, Region, RegionGuard, RegionObserver, DECODE_STEP, PREFILL,
};

/// Options of `NvtxObserver`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NvtxOptions {
    /// Synchronize the current CUDA stream before each range closes.
    pub sync_on_exit: bool,
    /// Also open an `at::RecordFunction` user scope, so Kineto tables get stages; and around the
    /// prefill and each decode step a `ProfilerStep#N` scope (N = 0 for the prefill, then 1, 2,
    /// ...), named as torch.profiler's `step()` names iterations, so that analysers of PyTorch
    /// traces (HTA, `llmprof analyze trace`) see one iteration per generated token.
    pub kineto_scopes: bool,
    /// Time each region with this clock (`StageTimer`); `None` records no times.
    pub timing: Option<ClockKind>,
    /// Skip the NVTX push/pop itself (for measuring its overhead; see scripts/bench_overhead.sh).
    pub no_ranges: bool,
    /// Label modules (`enter_module`) with an NVTX range and, with `kineto_scopes`, a Kineto user
    /// scope named by the module path (`module:layer[3].attention.qkv`). Off, a module costs one
    /// call and an empty guard. Never timed either way.
    pub modules: bool,
}

/// Pushes/pops an NVTX range per region; single-threaded (regions nest on one thread).
pub struct NvtxObserver {
    options: NvtxOptions,
    timer: Option<RefCell<StageTimer>>,
    /// The first error raised while closing a region (guards cannot return errors).
    deferred_error: RefCell<Option<anyhow::Error>>,
    /// The next `ProfilerStep#N` scope's N.
    next_step: std::cell::Cell<u64>,
    /// The modules open now, outermost first (their path names the scope).
    open_modules: RefCell<Vec<(Module, Option<u32>)>>,
}

impl NvtxObserver {
    pub fn new(options: NvtxOptions) -> Self {
        NvtxObserver {
            options,
            timer: options
                .timing
                .map(|clock| RefCell::new(StageTimer::new(clock))),
            deferred_error: RefCell::new(None),
            next_step: std::cell::Cell::new(0),
            open_modules: RefCell::new(Vec::new()),
        }
    }

    /// A user scope, or `None` with the error deferred.
    fn user_scope(&self, name: &str, what: impl std::fmt::Display) -> Option<ffi::UserScope> {
        match ffi::UserScope::begin(name) {
            Ok(scope) => Some(scope),
            Err(err) => {
                self.defer(Err(anyhow!(err).context(format!("user scope for {what}"))));
                None
            }
        }
    }

    fn defer(&self, result: Result<()>) {
        if let Err(err) = result {
            let mut slot = self.deferred_error.borrow_mut();
            if slot.is_none() {
                *slot = Some(err);
            }
        }
    }

    /// Region times in the order regions closed (empty without `timing`), or the first error
    /// that happened while entering or leaving a region.
    pub fn finish(self) -> Result<Vec<StageTime>> {
        if let Some(err) = self.deferred_error.into_inner() {
            return Err(err);
        }
        match self.timer {
            Some(timer) => timer.into_inner().finish(),
            None => Ok(Vec::new()),
        }
    }
}

impl RegionObserver for NvtxObserver {
    fn enter(&self, region: Region) -> RegionGuard<'_> {
        self.enter_timed(region, true)
    }

    fn enter_overlapped(&self, region: Region) -> RegionGuard<'_> {
        self.enter_timed(region, false)
    }

    fn enter_module(&self, module: Module, index: Option<u32>) -> RegionGuard<'_> {
        if !self.options.modules {
            return RegionGuard::noop();
        }
        let path = {
            let mut open = self.open_modules.borrow_mut();
            open.push((module, index));
            ModulePath::of_stack(&open).expect("a module was just opened")
        };
        let name = path.scope_name();
        let range = (!self.options.no_ranges).then(|| ffi::nvtx::NvtxRange::push(&name));
        let scope = if self.options.kineto_scopes {
            self.user_scope(&name, &name)
        } else {
            None
        };
        RegionGuard::on_exit(move || {
            drop(scope);
            drop(range);
            self.open_modules.borrow_mut().pop();
        })
    }
}

impl NvtxObserver {
    /// A range and scope for `region`, timed when `time` and this observer times regions.
    fn enter_timed(&self, region: Region, time: bool) -> RegionGuard<'_> {
        let name = region.nvtx_name();
        let range = (!self.options.no_ranges).then(|| ffi::nvtx::NvtxRange::push(name));
        let iteration = self.options.kineto_scopes && (region == PREFILL || region == DECODE_STEP);
        let step_scope = iteration.then(|| {
            let n = self.next_step.get();
            self.next_step.set(n + 1);
            self.user_scope(
                &format!("ProfilerStep#{n}"),
                format!("{region} (iteration {n})"),
            )
        });
        let scope = if self.options.kineto_scopes {
            self.user_scope(name, region)
        } else {
            None
        };
        let timed = match &self.timer {
            Some(timer) if time => {
                let began = timer.borrow_mut().begin(name);
                let ok = began.is_ok();
                self.defer(began);
                ok
            }
            _ => false,
        };
        RegionGuard::on_exit(move || {
            if self.options.sync_on_exit {
                self.defer(ffi::cuda_stream_synchronize().map_err(anyhow::Error::from));
            }
            if timed {
                if let Some(timer) = &self.timer {
                    self.defer(timer.borrow_mut().end());
                }
            }
            drop(scope);
            drop(step_scope);
            drop(range);
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_nest_and_are_timed_on_the_host() {
        let obs = NvtxObserver::new(NvtxOptions {
            sync_on_exit: false,
            kineto_scopes: true,
            timing: Some(ClockKind::Host),
            no_ranges: false,
            modules: false,
        });
        {
            let _decode = obs.enter(llmprof::region::DECODE);
            for _ in 0..2 {
                let _step = obs.enter(llmprof::region::DECODE_STEP);
            }
        }
        let times = obs.finish().unwrap();
        let names: Vec<&str> = times.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["decode_step", "decode_step", "decode"]);
    }

    /// An overlapped region keeps its range but gets no time; regions around it still do.
    #[test]
    fn overlapped_regions_are_not_timed() {
        let obs = NvtxObserver::new(NvtxOptions {
            timing: Some(ClockKind::Host),
            ..NvtxOptions::default()
        });
        {
            let _prefill = obs.enter(llmprof::region::PREFILL);
            let _side = obs.enter_overlapped(llmprof::region::DECODE_STEP);
        }
        let times = obs.finish().unwrap();
        let names: Vec<&str> = times.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["prefill"]);
    }

    /// Modules label work and are never timed: with timing on, only the stage gets a time.
    #[test]
    fn modules_are_scoped_never_timed() {
        const LAYER: Module = Module::indexed("layer", None);
        const QKV: Module = Module::within("qkv", LAYER);
        for modules in [false, true] {
            let obs = NvtxObserver::new(NvtxOptions {
                timing: Some(ClockKind::Host),
                modules,
                ..NvtxOptions::default()
            });
            {
                let _step = obs.enter(llmprof::region::DECODE_STEP);
                let _layer = obs.enter_module(LAYER, Some(1));
                let _qkv = obs.enter_module(QKV, None);
                let open = obs.open_modules.borrow().len();
                assert_eq!(open, if modules { 2 } else { 0 });
            }
            assert!(obs.open_modules.borrow().is_empty(), "every module closed");
            let times = obs.finish().unwrap();
            let names: Vec<&str> = times.iter().map(|t| t.name.as_str()).collect();
            assert_eq!(names, ["decode_step"], "modules = {modules}");
        }
    }

    #[test]
    fn without_timing_nothing_is_recorded() {
        let obs = NvtxObserver::new(NvtxOptions::default());
        drop(obs.enter(llmprof::region::PREFILL));
        assert!(obs.finish().unwrap().is_empty());
    }
}
