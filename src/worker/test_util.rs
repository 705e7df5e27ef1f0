//! Helpers for the crate's unit tests.
/// A fresh, empty temporary directory unique to this process and tag.
pub fn temp_dir(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("llmprof-test-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Milliseconds per call of `f` on CUDA device 0: the mean of 20 calls after 3 warm-ups,
/// host wall time between device syncs (for the GPU tests that print timings).
pub fn gpu_ms_per_call(f: &dyn Fn() -> tch::Tensor) -> f64 {
    for _ in 0..3 {
        let _ = f();
    }
    tch::Cuda::synchronize(0);
    let t = std::time::Instant::now();
    for _ in 0..20 {
        let _ = f();
    }
    tch::Cuda::synchronize(0);
    t.elapsed().as_secs_f64() * 1e3 / 20.0
}

/// How many elements of `got` differ from `want` (same shape): 0 for bit-equal tensors.
pub fn values_differing(got: &tch::Tensor, want: &tch::Tensor) -> i64 {
    got.ne_tensor(want).sum(tch::Kind::Int64).int64_value(&[])
}

/// An observer that records the module paths a model marks, in order, and every module entered
/// under anything but its declared parent (the tree's nesting, checked as the marks happen).
#[derive(Default)]
pub struct ModuleRecorder {
    stack: std::cell::RefCell<Vec<(llmprof::region::Module, Option<u32>)>>,
    /// Each module entered, as its scope name (`module:layer[3].attention.qkv`).
    pub paths: std::cell::RefCell<Vec<String>>,
    /// "child under parent" for each module entered where its declared parent is not the
    /// innermost open module.
    pub misplaced: std::cell::RefCell<Vec<String>>,
}

impl ModuleRecorder {
    /// The paths recorded, without those of `layer[i]` for i ≥ 1 (a decoder repeats layer 0's).
    pub fn leaves_of_layer_0_and_rest(&self) -> Vec<String> {
        self.paths
            .borrow()
            .iter()
            .filter(|p| !p.starts_with("module:layer[") || p.starts_with("module:layer[0]"))
            .cloned()
            .collect()
    }
}

impl llmprof::region::RegionObserver for ModuleRecorder {
    fn enter(&self, _region: llmprof::region::Region) -> llmprof::region::RegionGuard<'_> {
        llmprof::region::RegionGuard::noop()
    }

    fn enter_overlapped(
        &self,
        _region: llmprof::region::Region,
    ) -> llmprof::region::RegionGuard<'_> {
        llmprof::region::RegionGuard::noop()
    }

    fn enter_module(
        &self,
        module: llmprof::region::Module,
        index: Option<u32>,
    ) -> llmprof::region::RegionGuard<'_> {
        let mut stack = self.stack.borrow_mut();
        let parent = stack.last().map(|(m, _)| m.name());
        if parent != module.parent_name() && !module.nests_anywhere() {
            self.misplaced.borrow_mut().push(format!(
                "{} under {}",
                module.name(),
                parent.unwrap_or("(none)")
            ));
        }
        stack.push((module, index));
        let path = llmprof::region::ModulePath::of_stack(&stack).expect("one module is open");
        self.paths.borrow_mut().push(path.scope_name());
        llmprof::region::RegionGuard::on_exit(move || {
            self.stack.borrow_mut().pop();
        })
    }
}
