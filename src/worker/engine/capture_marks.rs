//! Which module added each node of a captured CUDA graph. [`CaptureMarks`] wraps the observer a
//! captured function is handed: at every region or module boundary it tells the shim the path now
//! open (interned as a mark), so that the capture's record charges each node to the module that
//! launched it, whatever observer the caller passed (warm-up's `NoopObserver` included). After
//! the capture, [`keep_record`] resolves the marks and files the record under the graph's serial
//! for the Kineto pass to match replayed kernels against (docs/design/module-attribution.md §2).
use crate::ffi::{graph_nodes, CudaGraph};
use llmprof::measure::capture_record::{CaptureRecord, GraphNode, NodeOwner};
use llmprof::region::{Module, ModulePath, Region, RegionGuard, RegionObserver};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};

/// What is open inside the capture, outermost first.
#[derive(Clone, Copy)]
enum Open {
    Region(Region),
    Module(Module, Option<u32>),
}

/// An observer for a function being captured: marks every boundary for the shim, then forwards.
pub struct CaptureMarks<'a> {
    inner: &'a dyn RegionObserver,
    open: RefCell<Vec<Open>>,
    /// Mark id → owner; id 0 is "nothing open".
    owners: RefCell<Vec<NodeOwner>>,
    ids: RefCell<HashMap<NodeOwner, u32>>,
}

impl<'a> CaptureMarks<'a> {
    pub fn new(inner: &'a dyn RegionObserver) -> Self {
        CaptureMarks {
            inner,
            open: RefCell::new(Vec::new()),
            owners: RefCell::new(vec![NodeOwner::default()]),
            ids: RefCell::new(HashMap::from([(NodeOwner::default(), 0)])),
        }
    }

    /// The owner of what is open now.
    fn current(&self) -> NodeOwner {
        let open = self.open.borrow();
        let region = open.iter().rev().find_map(|o| match o {
            Open::Region(r) => Some(r.to_string()),
            Open::Module(..) => None,
        });
        let modules: Vec<(Module, Option<u32>)> = open
            .iter()
            .filter_map(|o| match o {
                Open::Module(m, i) => Some((*m, *i)),
                Open::Region(_) => None,
            })
            .collect();
        NodeOwner {
            region,
            module: ModulePath::of_stack(&modules),
        }
    }

    /// Tells the shim the nodes added from now on belong to what is open now.
    fn mark_current(&self) {
        let owner = self.current();
        let id = *self
            .ids
            .borrow_mut()
            .entry(owner.clone())
            .or_insert_with(|| {
                let mut owners = self.owners.borrow_mut();
                owners.push(owner);
                (owners.len() - 1) as u32
            });
        // A failure empties the record with its reason; the capture itself goes on.
        let _ = graph_nodes::mark(id);
    }

    fn open(&self, what: Open, inner: RegionGuard<'a>) -> RegionGuard<'_> {
        self.open.borrow_mut().push(what);
        self.mark_current();
        RegionGuard::on_exit(move || {
            drop(inner);
            self.open.borrow_mut().pop();
            self.mark_current();
        })
    }

    /// The owner of each mark id.
    pub fn owners(&self) -> Vec<NodeOwner> {
        self.owners.borrow().clone()
    }
}

impl RegionObserver for CaptureMarks<'_> {
    fn enter(&self, region: Region) -> RegionGuard<'_> {
        self.open(Open::Region(region), self.inner.enter(region))
    }

    fn enter_overlapped(&self, region: Region) -> RegionGuard<'_> {
        self.open(Open::Region(region), self.inner.enter_overlapped(region))
    }

    fn enter_module(&self, module: Module, index: Option<u32>) -> RegionGuard<'_> {
        self.open(
            Open::Module(module, index),
            self.inner.enter_module(module, index),
        )
    }
}

/// Records kept per graph serial; the oldest go past this many.
const KEPT_RECORDS: usize = 256;

thread_local! {
    static RECORDS: RefCell<BTreeMap<u64, CaptureRecord>> = const { RefCell::new(BTreeMap::new()) };
}

/// Reads `graph`'s capture record, resolves its marks with `marks` and keeps it under the
/// graph's serial, labelled `label`. A record that cannot be read is kept with its reason.
pub fn keep_record(graph: &CudaGraph, marks: &CaptureMarks, label: String) {
    let record = match graph_nodes::read_record(graph) {
        Ok((serial, nodes, error)) => {
            let owners = marks.owners();
            CaptureRecord {
                serial,
                label,
                nodes: nodes
                    .into_iter()
                    .map(|n| GraphNode {
                        kind: n.kind,
                        name: n.name,
                        mangled: n.mangled,
                        deps: n.deps,
                        owner: owners.get(n.mark as usize).cloned().unwrap_or_default(),
                    })
                    .collect(),
                error,
            }
        }
        Err(e) => {
            tracing::warn!("reading the capture record of {label}: {e}");
            return;
        }
    };
    RECORDS.with(|r| {
        let mut r = r.borrow_mut();
        r.insert(record.serial, record);
        while r.len() > KEPT_RECORDS {
            r.pop_first();
        }
    });
}

/// The records of this thread's captures, by serial.
pub fn records() -> BTreeMap<u64, CaptureRecord> {
    RECORDS.with(|r| r.borrow().clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::ModuleRecorder;
    use llmprof::model::module_work::{ATTENTION, LAYER, QKV};
    use llmprof::region::DECODE_STEP;

    #[test]
    fn forwards_every_boundary_and_interns_each_open_path_once() {
        let inner = ModuleRecorder::default();
        let marks = CaptureMarks::new(&inner);
        for _ in 0..2 {
            let _s = marks.enter(DECODE_STEP);
            let _l = marks.enter_module(LAYER, Some(3));
            let _a = marks.enter_module(ATTENTION, None);
            let _q = marks.enter_module(QKV, None);
        }
        assert_eq!(inner.paths.borrow().len(), 6, "{:?}", inner.paths.borrow());
        assert!(inner.misplaced.borrow().is_empty());
        let owners = marks.owners();
        let names: Vec<String> = owners
            .iter()
            .map(|o| {
                let m = o.module.as_ref().map(ModulePath::scope_name);
                format!("{:?}/{}", o.region, m.unwrap_or_default())
            })
            .collect();
        assert_eq!(
            names,
            [
                "None/",
                "Some(\"decode_step\")/",
                "Some(\"decode_step\")/module:layer[3]",
                "Some(\"decode_step\")/module:layer[3].attention",
                "Some(\"decode_step\")/module:layer[3].attention.qkv",
            ]
        );
        assert!(marks.open.borrow().is_empty());
    }
}
