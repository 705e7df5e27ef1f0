//! A tensor function captured as one CUDA graph per input shape: the first call with a shape
//! runs eagerly (its result is returned, and it warms up every lazily built table and kernel
//! plan), then the same function is captured on static input buffers; later calls with that
//! shape copy their inputs in, replay, and get a copy of the output. Used for the vision pass
//! (`model.optim.vision_cuda_graph`), whose thousands of small launches per page otherwise
//! leave the GPU waiting on the host at small batches.
//!
//! All graphs of one [`ShapeGraphs`] share a memory pool: they replay one at a time, and every
//! output is copied out of the pool before the next replay, so no graph's scratch memory can
//! overwrite a result still in use. Static inputs live outside the pool. At most
//! [`KEPT_SHAPES`] graphs are kept ([`KeptGraphs`]).
//!
//! Inputs on the CPU (page-locked, one dense block each) are not copied to static buffers: the function
//! copies them to the GPU itself ([`super::graph_uploads::copy_into`]), and each replay points
//! those captured copies at its own inputs, so the copies run inside the replay.

use super::capture_marks::{keep_record, CaptureMarks};
use super::graph_uploads;
use super::kept_graphs::KeptGraphs;
use crate::ffi::cuda_graph::{self, CapturedUpload};
use crate::ffi::CudaGraph;
use anyhow::{ensure, Context, Result};
use llmprof::region::{NoopObserver, RegionObserver};
use std::cell::RefCell;
use tch::Tensor;

/// A function a [`ShapeGraphs`] runs or captures: its inputs and the observer its regions and
/// modules are marked on.
pub type GraphFn<'a, T> = dyn Fn(&[Tensor], &dyn RegionObserver) -> Result<T> + 'a;

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

/// What identifies a capture: the stage, the caller's layout (what the inputs' shapes do not
/// show, [`ShapeGraphs::call_many_keyed`]) and every input's shape and dtype, with its strides
/// for a host input (its bytes are copied as they lie).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    stage: &'static str,
    layout: Vec<i64>,
    inputs: Vec<(Vec<i64>, tch::Kind, Option<Vec<i64>>)>,
}

struct Captured {
    graph: CudaGraph,
    /// Static buffers of the GPU inputs (`None` for host inputs).
    inputs: Vec<Option<Tensor>>,
    /// The captured copies of host inputs.
    uploads: Vec<HostUpload>,
    outputs: Vec<Tensor>,
}

/// A captured copy that reads host input `input` from byte `offset` on.
struct HostUpload {
    input: usize,
    offset: usize,
    upload: CapturedUpload,
}

/// Which host input each of `uploads` read at capture (`host`: the inputs, `None` for GPU
/// ones), and from which byte. Every host input must have been read: otherwise its replays
/// would not see new values.
fn host_uploads(host: &[Option<&Tensor>], uploads: Vec<CapturedUpload>) -> Result<Vec<HostUpload>> {
    ensure!(
        graph_uploads::disjoint(host.iter().flatten().copied()),
        "two host inputs of a CUDA graph share memory: pass each once"
    );
    let ranges: Vec<Option<(usize, usize)>> = host
        .iter()
        .map(|t| t.map(graph_uploads::byte_range))
        .collect();
    let mut read = vec![false; host.len()];
    let mut out = Vec::with_capacity(uploads.len());
    for upload in uploads {
        let input = ranges
            .iter()
            .position(|r| {
                r.is_some_and(|(base, len)| {
                    upload.src >= base && upload.src + upload.bytes <= base + len
                })
            })
            .context("a captured upload read host memory that is none of the graph's inputs")?;
        read[input] = true;
        let base = ranges[input].map_or(0, |(base, _)| base);
        out.push(HostUpload {
            input,
            offset: upload.src - base,
            upload,
        });
    }
    for (i, r) in ranges.iter().enumerate() {
        ensure!(
            r.is_none() || read[i],
            "host input {i} of a CUDA graph was not copied to the GPU inside the capture"
        );
    }
    Ok(out)
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
    /// Graphs that capture when `enabled`; `switch` (e.g. `model.optim.vision_cuda_graph`) is
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

    /// `f(inputs, obs)`, from a replayed graph when this stage has been called with these
    /// shapes before. `f` must launch the same work for equal shapes and must not read tensors
    /// back to the host (a capture fails on host syncs). It marks its regions and modules on the
    /// observer it is handed: `obs` when it runs eagerly, the capture's marks when it is
    /// captured (so that each graph node is charged to the module that launched it).
    pub fn call(
        &self,
        stage: &'static str,
        inputs: &[Tensor],
        obs: &dyn RegionObserver,
        f: &GraphFn<Tensor>,
    ) -> Result<Tensor> {
        let mut outputs = self.call_many(stage, inputs, obs, &|x, o| Ok(vec![f(x, o)?]))?;
        outputs.pop().context("a graph call returned no output")
    }

    /// [`ShapeGraphs::call`] for a function with several outputs.
    pub fn call_many(
        &self,
        stage: &'static str,
        inputs: &[Tensor],
        obs: &dyn RegionObserver,
        f: &GraphFn<Vec<Tensor>>,
    ) -> Result<Vec<Tensor>> {
        self.call_many_keyed(stage, &[], inputs, obs, f)
    }

    /// [`ShapeGraphs::call_many`] with `layout` in the graph's key: what `f` does with the
    /// inputs that their shapes do not say (how a pass splits them into calls, say).
    pub fn call_many_keyed(
        &self,
        stage: &'static str,
        layout: &[i64],
        inputs: &[Tensor],
        obs: &dyn RegionObserver,
        f: &GraphFn<Vec<Tensor>>,
    ) -> Result<Vec<Tensor>> {
        if !self.enabled {
            return f(inputs, obs);
        }
        let on_host = |t: &Tensor| t.device() == tch::Device::Cpu;
        for (i, t) in inputs.iter().enumerate() {
            ensure!(
                !on_host(t) || graph_uploads::dense_rows_strides(t).is_some(),
                "host input {i} of the {stage} CUDA graph is not one dense block of memory"
            );
        }
        let key = Key {
            stage,
            layout: layout.to_vec(),
            inputs: inputs
                .iter()
                .map(|t| (t.size(), t.kind(), on_host(t).then(|| t.stride())))
                .collect(),
        };
        if let Some(c) = self.graphs.borrow_mut().get_mut(&key) {
            for (dst, src) in c.inputs.iter_mut().zip(inputs) {
                if let Some(dst) = dst {
                    dst.f_copy_(src)?;
                }
            }
            for u in &c.uploads {
                c.graph
                    .set_upload(&u.upload, &inputs[u.input], u.offset)
                    .with_context(|| {
                        format!(
                            "pointing the {stage} CUDA graph at its host input {}",
                            u.input
                        )
                    })?;
            }
            c.graph
                .replay()
                .with_context(|| format!("replaying the {stage} CUDA graph"))?;
            for t in inputs.iter().filter(|t| on_host(t)) {
                cuda_graph::host_tensor_used(t)?;
            }
            self.stats.borrow_mut().replays += 1;
            return c.outputs.iter().map(copy_of).collect();
        }
        let eager = f(inputs, obs)?;
        let started = std::time::Instant::now();
        // Static buffers of the GPU inputs; host inputs are read where they are (the capture
        // records their uploads).
        let statics: Vec<Option<Tensor>> = inputs
            .iter()
            .map(|t| (!on_host(t)).then(|| copy_of(t)).transpose())
            .collect::<Result<_>>()?;
        let captured_inputs: Vec<Tensor> = inputs
            .iter()
            .zip(&statics)
            .map(|(t, s)| s.as_ref().unwrap_or(t).shallow_clone())
            .collect();
        // Uploads name the graph's nodes, so a graph with host inputs keeps them.
        let mut graph = match inputs.iter().any(on_host) {
            true => CudaGraph::keeping_nodes(),
            false => CudaGraph::new(),
        }
        .context("creating a CUDA graph")?;
        let marks = CaptureMarks::new(&NoopObserver);
        let (outputs, uploads) = {
            let graphs = self.graphs.borrow();
            let share = graphs.any().map(|c| &c.graph);
            graph
                .capture(share, || {
                    graph_uploads::recording(|| f(&captured_inputs, &marks))
                })
                .with_context(|| {
                    format!(
                        "capturing {stage} as a CUDA graph (inputs {:?})\n  fix: {}=false runs it op by op",
                        key.inputs, self.switch
                    )
                })?
        };
        keep_record(&graph, &marks, format!("{stage} inputs {:?}", key.inputs));
        let host: Vec<Option<&Tensor>> = inputs.iter().map(|t| on_host(t).then_some(t)).collect();
        let uploads = host_uploads(&host, uploads)
            .with_context(|| format!("the {stage} CUDA graph's host inputs"))?;
        let mut graphs = self.graphs.borrow_mut();
        let dropped = graphs.dropped();
        graphs.insert(
            key,
            Captured {
                graph,
                inputs: statics,
                uploads,
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
        let out = g.call("s", &x, &NoopObserver, &|x, _| stage(x)).unwrap();
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
                let got = g.call("s", &x, &NoopObserver, &|x, _| stage(x)).unwrap();
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

    /// Page-locked channels-last uint8 [n, 3, 8, 8] with values from `seed`.
    fn pinned_views(n: i64, seed: i64) -> Tensor {
        let t = (Tensor::arange(n * 8 * 8 * 3, (Kind::Int64, Device::Cpu)) * 7 + seed)
            .remainder(251)
            .to_kind(Kind::Uint8)
            .view([n, 8, 8, 3])
            .permute([0, 3, 1, 2]);
        crate::ffi::host_memory::pinned(&t).unwrap()
    }

    /// Host inputs are uploaded inside the replays: each round's new values (a piece of one
    /// input, all of another) reach the GPU, in the inputs' channels-last layout.
    #[test]
    #[ignore = "needs a CUDA GPU: cargo test -- --ignored on the GPU machine"]
    fn host_inputs_are_uploaded_by_the_replays_on_a_gpu() {
        assert!(tch::Cuda::is_available(), "no CUDA device");
        let dev = Device::Cuda(0);
        let g = ShapeGraphs::new(true, "test.switch");
        let f = |x: &[Tensor]| -> Result<Tensor> {
            let pieces = [x[0].f_narrow(0, 1, 2)?, x[1].shallow_clone()];
            let y = graph_uploads::gather(&pieces, dev)?;
            assert_eq!(y.stride(), [192, 1, 24, 3], "layout kept");
            Ok(y.f_to_kind(Kind::Float)? * 2.0 + 1.0)
        };
        for round in 0..4 {
            let x = [pinned_views(3, round), pinned_views(1, 100 + round)];
            let got = g.call("s", &x, &NoopObserver, &|x, _| f(x)).unwrap();
            let want = Tensor::cat(&[x[0].narrow(0, 1, 2), x[1].shallow_clone()], 0)
                .to_kind(Kind::Float)
                * 2.0
                + 1.0;
            assert!(got.to_device(Device::Cpu).equal(&want), "round {round}");
        }
        let s = g.stats();
        assert_eq!((s.captured, s.replays), (1, 3), "{s:?}");
    }

    /// A host input the capture does not upload, or one in pageable memory, is refused at
    /// capture with the reason.
    #[test]
    #[ignore = "needs a CUDA GPU: cargo test -- --ignored on the GPU machine"]
    fn host_inputs_not_uploaded_or_pageable_are_refused_on_a_gpu() {
        assert!(tch::Cuda::is_available(), "no CUDA device");
        let dev = Device::Cuda(0);
        let g = ShapeGraphs::new(true, "test.switch");
        let first_only = |x: &[Tensor]| graph_uploads::gather(&x[..1], dev);
        let x = [pinned_views(1, 1), pinned_views(1, 2)];
        let e = format!(
            "{:#}",
            g.call("unread", &x, &NoopObserver, &|x, _| first_only(x))
                .unwrap_err()
        );
        assert!(
            e.contains("host input 1") && e.contains("not copied"),
            "{e}"
        );
        let pageable = [pinned_views(1, 3).copy()];
        let all = |x: &[Tensor]| graph_uploads::gather(x, dev);
        let e = format!(
            "{:#}",
            g.call("pageable", &pageable, &NoopObserver, &|x, _| all(x))
                .unwrap_err()
        );
        assert!(
            e.contains("page-locked") && e.contains("test.switch"),
            "{e}"
        );
    }
}
