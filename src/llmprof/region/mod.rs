//! Profiling regions as data: each model declares its regions (name and nesting) in a
//! [`RegionTree`]; the generation loop's regions (prefill, decode, decode_step) are shared by all.
//! The model only marks boundaries through a [`RegionObserver`]; measurement owns timers and sync.
//! Below the stages, a model marks its modules (`modules.rs`), which label work and are never timed.
mod modules;

pub use modules::{
    check_modules, is_module_scope, Module, ModulePath, COMMUNICATION, ENGINE_MODULES, SAMPLING,
};

/// A named stretch of the workload. Its name is the single source of the NVTX range name, the
/// Kineto user scope and the report key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Region {
    name: &'static str,
    parent: Option<&'static str>,
}

impl Region {
    /// A top-level region.
    pub const fn root(name: &'static str) -> Self {
        Region { name, parent: None }
    }

    /// A region nested inside `parent`.
    pub const fn within(name: &'static str, parent: Region) -> Self {
        Region {
            name,
            parent: Some(parent.name),
        }
    }

    /// Name used for NVTX ranges, Kineto user scopes and report keys.
    pub fn nvtx_name(&self) -> &'static str {
        self.name
    }

    /// Name of the region this one is nested in.
    pub fn parent_name(&self) -> Option<&'static str> {
        self.parent
    }
}

impl std::fmt::Display for Region {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// Prefill: the whole prompt (a model's input encoders included) up to the logits of the last
/// position; its duration is the time to first token.
pub const PREFILL: Region = Region::root("prefill");
/// The whole decode loop.
pub const DECODE: Region = Region::root("decode");
/// One decode step (one new token per row); its duration is the time per output token.
pub const DECODE_STEP: Region = Region::within("decode_step", DECODE);

/// The regions a model marks, in nesting order (a parent before its children), and its modules
/// (lists a family concatenates: the shared decoder's, then its own).
#[derive(Debug, Clone, Copy)]
pub struct RegionTree {
    regions: &'static [Region],
    modules: &'static [&'static [Module]],
}

impl RegionTree {
    pub const fn new(regions: &'static [Region]) -> Self {
        RegionTree {
            regions,
            modules: &[],
        }
    }

    /// The same regions with the modules the model marks below them.
    pub const fn with_modules(self, modules: &'static [&'static [Module]]) -> Self {
        RegionTree {
            regions: self.regions,
            modules,
        }
    }

    pub fn all(&self) -> &'static [Region] {
        self.regions
    }

    /// Every module the model marks, parents before children.
    pub fn modules(&self) -> impl Iterator<Item = Module> + '_ {
        self.modules.iter().flat_map(|l| l.iter().copied())
    }

    /// Every module's path (`layer.attention.qkv`), parents before children.
    pub fn module_paths(&self) -> Vec<String> {
        let all: Vec<Module> = self.modules().collect();
        all.iter()
            .map(|m| {
                let mut names = vec![m.name()];
                let mut parent = m.parent_name();
                while let Some(p) = parent {
                    names.push(p);
                    parent = all
                        .iter()
                        .find(|x| x.name() == p)
                        .and_then(|x| x.parent_name());
                }
                names.reverse();
                names.join(".")
            })
            .collect()
    }

    pub fn find(&self, name: &str) -> Option<Region> {
        self.regions.iter().copied().find(|r| r.name == name)
    }

    /// Names of every region, for error messages.
    pub fn names(&self) -> Vec<&'static str> {
        self.regions.iter().map(|r| r.name).collect()
    }

    pub fn parent(&self, region: Region) -> Option<Region> {
        region.parent.and_then(|p| self.find(p))
    }

    /// True when `region` is `outer` or nested (at any depth) inside it.
    pub fn is_within(&self, region: Region, outer: Region) -> bool {
        let mut r = Some(region);
        while let Some(x) = r {
            if x == outer {
                return true;
            }
            r = self.parent(x);
        }
        false
    }

    /// The push/pop stack down to `region`, as an ncu `--nvtx-include` expression
    /// (`decode/decode_step/`).
    pub fn nvtx_path(&self, region: Region) -> String {
        let mut names = vec![region.name];
        let mut r = self.parent(region);
        while let Some(p) = r {
            names.push(p.name);
            r = self.parent(p);
        }
        names.reverse();
        format!("{}/", names.join("/"))
    }

    /// ncu `--nvtx-include` expressions that select every kernel inside `outer`, nested or not.
    pub fn nvtx_includes(&self, outer: Region) -> Vec<String> {
        self.regions
            .iter()
            .filter(|r| self.is_within(**r, outer))
            .map(|r| self.nvtx_path(*r))
            .collect()
    }

    /// Checks what every tree must satisfy: unique names, parents declared before their
    /// children, and the generation loop's regions present.
    pub fn check(&self) -> Result<(), String> {
        for (i, r) in self.regions.iter().enumerate() {
            if self.regions[..i].iter().any(|q| q.name == r.name) {
                return Err(format!("region '{}' is declared twice", r.name));
            }
            if let Some(p) = r.parent {
                if !self.regions[..i].iter().any(|q| q.name == p) {
                    return Err(format!(
                        "region '{}' is nested in '{p}', which is not declared before it",
                        r.name
                    ));
                }
            }
        }
        for shared in [PREFILL, DECODE, DECODE_STEP] {
            if self.find(shared.name) != Some(shared) {
                return Err(format!(
                    "the generation loop's region '{}' is missing or nested differently",
                    shared.name
                ));
            }
        }
        check_modules(self.modules)?;
        if let Some(m) = self.modules().find(|m| self.find(m.name()).is_some()) {
            return Err(format!("'{}' is both a region and a module", m.name()));
        }
        Ok(())
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

    /// Marks `region` where its work overlaps other work queued on another CUDA stream:
    /// observers keep its ranges and scopes (Nsight, Kineto) but do not time it, since a
    /// stream's clock cannot tell its work from what runs beside it. No default: an observer
    /// that wraps another must forward it as overlapped, or it would time the region after all.
    fn enter_overlapped(&self, region: Region) -> RegionGuard<'_>;

    /// Marks the start of `module` (with its index when it is indexed, e.g. the layer); the
    /// returned guard marks its end. Modules are never timed and never synchronise: observers
    /// label work with them (scopes, ranges, a capture's record) or ignore them. No default: an
    /// observer that wraps another must forward it.
    fn enter_module(&self, module: Module, index: Option<u32>) -> RegionGuard<'_>;
}

/// Observer that records nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoopObserver;

impl RegionObserver for NoopObserver {
    fn enter(&self, _region: Region) -> RegionGuard<'_> {
        RegionGuard::noop()
    }

    fn enter_overlapped(&self, _region: Region) -> RegionGuard<'_> {
        RegionGuard::noop()
    }

    fn enter_module(&self, _module: Module, _index: Option<u32>) -> RegionGuard<'_> {
        RegionGuard::noop()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    const OUTER: Region = Region::within("outer", PREFILL);
    const INNER: Region = Region::within("inner", OUTER);
    const TREE: RegionTree = RegionTree::new(&[PREFILL, OUTER, INNER, DECODE, DECODE_STEP]);

    struct Recorder(RefCell<Vec<String>>);
    impl RegionObserver for Recorder {
        fn enter(&self, region: Region) -> RegionGuard<'_> {
            self.0.borrow_mut().push(format!("+{region}"));
            RegionGuard::on_exit(move || self.0.borrow_mut().push(format!("-{region}")))
        }

        fn enter_overlapped(&self, region: Region) -> RegionGuard<'_> {
            self.enter(region)
        }

        fn enter_module(&self, module: Module, index: Option<u32>) -> RegionGuard<'_> {
            let name = format!(
                "{}{}",
                module.name(),
                index.map(|i| format!("[{i}]")).unwrap_or_default()
            );
            self.0.borrow_mut().push(format!("+{name}"));
            RegionGuard::on_exit(move || self.0.borrow_mut().push(format!("-{name}")))
        }
    }

    #[test]
    fn guards_close_in_reverse_order() {
        let rec = Recorder(RefCell::new(Vec::new()));
        {
            let _a = rec.enter(OUTER);
            let _b = rec.enter(INNER);
        }
        assert_eq!(*rec.0.borrow(), ["+outer", "+inner", "-inner", "-outer"]);
    }

    #[test]
    fn nesting_paths_and_includes() {
        TREE.check().unwrap();
        assert_eq!(TREE.nvtx_path(INNER), "prefill/outer/inner/");
        assert_eq!(TREE.nvtx_path(DECODE_STEP), "decode/decode_step/");
        assert_eq!(
            TREE.nvtx_includes(DECODE),
            ["decode/", "decode/decode_step/"]
        );
        assert_eq!(TREE.nvtx_includes(PREFILL).len(), 3);
        assert!(TREE.is_within(INNER, PREFILL));
        assert!(!TREE.is_within(DECODE_STEP, PREFILL));
        assert_eq!(TREE.find("inner"), Some(INNER));
    }

    #[test]
    fn check_rejects_bad_trees() {
        let dup = RegionTree::new(&[PREFILL, PREFILL, DECODE, DECODE_STEP]);
        assert!(dup.check().unwrap_err().contains("twice"));
        let orphan = RegionTree::new(&[INNER, PREFILL, DECODE, DECODE_STEP]);
        assert!(orphan.check().unwrap_err().contains("not declared before"));
        let no_step = RegionTree::new(&[PREFILL, DECODE]);
        assert!(no_step.check().unwrap_err().contains("decode_step"));
        const LAYER: Module = Module::indexed("layer", None);
        const CLASH: Module = Module::root("inner");
        let ok = TREE.with_modules(&[&[LAYER]]);
        ok.check().unwrap();
        assert_eq!(ok.modules().collect::<Vec<_>>(), [LAYER]);
        let clash = TREE.with_modules(&[&[LAYER], &[CLASH]]);
        assert!(clash
            .check()
            .unwrap_err()
            .contains("both a region and a module"));
        const QKV: Module = Module::within("qkv", LAYER);
        let orphan = TREE.with_modules(&[&[QKV]]);
        assert!(orphan.check().unwrap_err().contains("not declared before"));
    }

    #[test]
    fn module_guards_nest_inside_regions() {
        const LAYER: Module = Module::indexed("layer", None);
        let rec = Recorder(RefCell::new(Vec::new()));
        {
            let _s = rec.enter(DECODE_STEP);
            let _l = rec.enter_module(LAYER, Some(2));
        }
        assert_eq!(
            *rec.0.borrow(),
            ["+decode_step", "+layer[2]", "-layer[2]", "-decode_step"]
        );
    }
}
