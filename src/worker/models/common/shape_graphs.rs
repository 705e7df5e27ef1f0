//! A tensor function captured as one CUDA graph per input shape: the first call with a shape
//! runs eagerly (its result is returned, and it warms up every lazily built table and kernel
//! plan), then the same function is captured on static input buffers; later calls with that
//! shape copy their inputs in, replay, and get a copy of the output. Used for the vision pass
//! (`runtime.optim.vision_cuda_graph`), whose thousands of small launches per page otherwise
//! leave the GPU waiting on the host at small batches.
//!
//! All graphs of one [`ShapeGraphs`] share a memory pool: they replay one at a time, and every
//! output is copied out of the pool before the next replay, so no graph's scratch memory can
//! overwrite a result still in use. Static inputs live outside the pool. At most
//! [`KEPT_SHAPES`] graphs are kept ([`KeptGraphs`]).

use super::kept_graphs::KeptGraphs;
use crate::ffi::CudaGraph;
use anyhow::{Context, Result};
use std::cell::RefCell;
use tch::Tensor;

/// How many (stage, input shapes) graphs one [`ShapeGraphs`] keeps: a vision pass of one page
/// mix needs one graph (`vision_streams`) or six (a stage per view size); beyond the bound the
/// least recently used graph is dropped and its shapes are captured again when they recur.
pub const KEPT_SHAPES: usize = 16;

/// A new tensor (normal allocator, same layout) holding `t`'s values.
pub(super) fn copy_of(t: &Tensor) -> Result<Tensor> {
    let mut c = t.f_empty_like()?;
    c.f_copy_(t)?;
    Ok(c)
}

/// What identifies a capture: the stage and every input's shape and dtype.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    stage: &'static str,
    inputs: Vec<(Vec<i64>, tch::Kind)>,
}

struct Captured {
    graph: CudaGraph,
    inputs: Vec<Tensor>,
    outputs: Vec<Tensor>,
}

/// Capture and replay counters, for the run's report.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ShapeGraphStats {
    pub captured: usize,
    pub capture_ms_total: f64,
    pub replays: u64,
}

/// Graphs per (stage, input shapes). With `enabled` false (the switch off, or no GPU) every call
/// runs the function eagerly.
pub struct ShapeGraphs {
    enabled: bool,
    /// The config switch that turns these graphs off, named in capture errors.
    switch: &'static str,
    graphs: RefCell<KeptGraphs<Key, Captured>>,
    stats: RefCell<ShapeGraphStats>,
}

impl std::fmt::Debug for ShapeGraphs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShapeGraphs")
            .field("enabled", &self.enabled)
            .field("graphs", &self.graphs.borrow().len())
            .field("stats", &*self.stats.borrow())
            .finish()
    }
}

impl ShapeGraphs {
    /// Graphs that capture when `enabled`; `switch` (e.g. `runtime.optim.vision_cuda_graph`) is
    /// the setting a capture error names as the fix.
    pub fn new(enabled: bool, switch: &'static str) -> Self {
        ShapeGraphs {
            enabled,
            switch,
            graphs: RefCell::new(KeptGraphs::new(KEPT_SHAPES)),
            stats: RefCell::new(ShapeGraphStats::default()),
        }
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    pub fn stats(&self) -> ShapeGraphStats {
        *self.stats.borrow()
    }

    /// `f(inputs)`, from a replayed graph when this stage has been called with these shapes
    /// before. `f` must launch the same work for equal shapes and must not read tensors back to
    /// the host (a capture fails on host syncs).
    pub fn call(
        &self,
        stage: &'static str,
        inputs: &[Tensor],
        f: &dyn Fn(&[Tensor]) -> Result<Tensor>,
    ) -> Result<Tensor> {
        let mut outputs = self.call_many(stage, inputs, &|x| Ok(vec![f(x)?]))?;
        outputs.pop().context("a graph call returned no output")
    }

    /// [`ShapeGraphs::call`] for a function with several outputs.
    pub fn call_many(
        &self,
        stage: &'static str,
        inputs: &[Tensor],
        f: &dyn Fn(&[Tensor]) -> Result<Vec<Tensor>>,
    ) -> Result<Vec<Tensor>> {
        if !self.enabled {
            return f(inputs);
        }
        let key = Key {
            stage,
            inputs: inputs.iter().map(|t| (t.size(), t.kind())).collect(),
        };
        if let Some(c) = self.graphs.borrow_mut().get_mut(&key) {
            for (dst, src) in c.inputs.iter_mut().zip(inputs) {
                dst.f_copy_(src)?;
            }
            c.graph
                .replay()
                .with_context(|| format!("replaying the {stage} CUDA graph"))?;
            self.stats.borrow_mut().replays += 1;
            return c.outputs.iter().map(copy_of).collect();
        }
        let eager = f(inputs)?;
        let started = std::time::Instant::now();
        let statics: Vec<Tensor> = inputs.iter().map(copy_of).collect::<Result<_>>()?;
        let mut graph = CudaGraph::new().context("creating a CUDA graph")?;
        let outputs = {
            let graphs = self.graphs.borrow();
            let share = graphs.any().map(|c| &c.graph);
            graph.capture(share, || f(&statics)).with_context(|| {
                format!(
                    "capturing {stage} as a CUDA graph (inputs {:?})\n  fix: {}=false runs it op by op",
                    key.inputs, self.switch
                )
            })?
        };
        let mut graphs = self.graphs.borrow_mut();
        let dropped = graphs.dropped();
        graphs.insert(
            key,
            Captured {
                graph,
                inputs: statics,
                outputs,
            },
        );
        if dropped == 0 && graphs.dropped() > 0 {
            tracing::warn!(
                "more than {KEPT_SHAPES} input shapes met CUDA graphs ({}): the least recently \
                 used graph was dropped and is captured again if its shapes recur",
                self.switch
            );
        }
        let mut stats = self.stats.borrow_mut();
        stats.captured += 1;
        stats.capture_ms_total += started.elapsed().as_secs_f64() * 1e3;
        Ok(eager)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::{Device, Kind};

    /// A stage with several launches and scratch tensors.
    fn stage(x: &[Tensor]) -> Result<Tensor> {
        let h = x[0].f_matmul(&x[1])?.f_relu()?;
        Ok(h.f_add(&h.f_sum_dim_intlist(1, true, Kind::Float)?)?)
    }

    #[test]
    fn disabled_runs_every_call_eagerly() {
        let g = ShapeGraphs::new(false, "test.switch");
        let x = [
            Tensor::f_ones([2, 3], (Kind::Float, Device::Cpu)).unwrap(),
            Tensor::f_ones([3, 4], (Kind::Float, Device::Cpu)).unwrap(),
        ];
        let out = g.call("s", &x, &stage).unwrap();
        assert!(out.equal(&stage(&x).unwrap()));
        assert_eq!(g.stats(), ShapeGraphStats::default());
    }

    /// Replays against eager results: new values each call, two shapes interleaved (their
    /// graphs share one pool), and outputs kept across later replays.
    #[test]
    #[ignore = "needs a CUDA GPU: cargo test -- --ignored on the GPU machine"]
    fn replays_equal_eager_calls_on_a_gpu() {
        assert!(tch::Cuda::is_available(), "no CUDA device");
        let dev = Device::Cuda(0);
        let g = ShapeGraphs::new(true, "test.switch");
        let mut kept = Vec::new();
        for round in 0..3 {
            for rows in [5i64, 9] {
                let x = [
                    Tensor::randn([rows, 64], (Kind::Float, dev)),
                    Tensor::randn([64, 32], (Kind::Float, dev)),
                ];
                let got = g.call("s", &x, &stage).unwrap();
                let want = stage(&x).unwrap();
                assert!(
                    got.allclose(&want, 1e-5, 1e-5, false),
                    "round {round} rows {rows}"
                );
                kept.push((got, want));
            }
        }
        for (got, want) in &kept {
            assert!(
                got.allclose(want, 1e-5, 1e-5, false),
                "an earlier output was overwritten"
            );
        }
        let s = g.stats();
        assert_eq!((s.captured, s.replays), (2, 4), "{s:?}");
    }
}
