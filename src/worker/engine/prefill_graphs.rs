//! The decoder's prefill as one CUDA graph per (embeddings' shape, left padding, KV cache)
//! (`runtime.optim.prefill_cuda_graph`). A page's prefill launches ≈ 300 kernels; launched one by
//! one they leave ≈ 1.7 µs between kernels on an H100 even with the host far ahead, 0.5 ms per
//! batch-1 prefill, while a graph's replay leaves ≈ 0.13 µs (reports/performance-history.md,
//! session 13).
//!
//! A key is captured the second time it is prefilled on a KV cache (eagerly, then captured) and
//! replayed after; its first time runs eagerly only, so a prompt shape met once (a text
//! dataset's varying lengths) never pays for a capture, and a cache met for the first time (as
//! on the eager decode path, where every request has its own) only runs eagerly. Prefills of
//! more than [`MAX_CAPTURED_TOKENS`] tokens run op by op. The KV cache's buffers are baked into
//! a graph, so the key holds the cache's id and the graph writes the same slots [0, T) of the
//! same cache every time. OCR prompts repeat their length (it depends on the crop grid only), so
//! few distinct keys occur; at most [`KEPT_PREFILLS`] graphs are kept ([`KeptGraphs`]). Graphs
//! share one memory pool: they replay one at a time and each output is copied out before the
//! next replay.
use super::capture_marks::{keep_record, CaptureMarks};
use super::kept_graphs::KeptGraphs;
use super::kv_cache::KvCache;
use super::shape_graphs::copy_of;
use crate::ffi::CudaGraph;
use anyhow::{ensure, Context, Result};
use llmprof::optim::EngineOptim;
use llmprof::region::{NoopObserver, RegionObserver};
use std::cell::{Cell, RefCell};
use tch::{Kind, Tensor};

/// How many prefill graphs (prompt shape, left padding) one model keeps; beyond it the least
/// recently used is dropped.
pub const KEPT_PREFILLS: usize = 8;

/// The most tokens (rows × prompt length) a captured prefill may hold: a graph keeps its
/// intermediates in the shared pool for the rest of the run (a dense 8B model's gate/up output
/// alone is ≈ 0.46 MB a token), so larger prefills run op by op.
pub const MAX_CAPTURED_TOKENS: i64 = 16384;

/// How many keys one model remembers having seen once (a key is captured at its second
/// prefill), least recently seen forgotten first.
const REMEMBERED_KEYS: usize = 64;

/// What a captured prefill is valid for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    shape: Vec<i64>,
    kind: Kind,
    left_padding: Vec<i64>,
    cache: u64,
}

struct Captured {
    graph: CudaGraph,
    input: Tensor,
    output: Tensor,
}

/// Prefill graphs of one model.
pub struct PrefillGraphs {
    enabled: bool,
    /// Prefills of more rows than this run eagerly (0: no limit).
    max_batch: usize,
    graphs: RefCell<KeptGraphs<Key, Captured>>,
    replays: Cell<u64>,
    /// The id of the KV cache the last prefill used.
    last_cache: Cell<Option<u64>>,
    /// Keys prefilled once on that cache (eagerly): a key is captured when it comes again, so a
    /// prompt shape met once (a text dataset's varying lengths) never pays for a capture.
    seen: RefCell<KeptGraphs<Key, ()>>,
}

impl std::fmt::Debug for PrefillGraphs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrefillGraphs")
            .field("enabled", &self.enabled)
            .field("max_batch", &self.max_batch)
            .field("graphs", &self.graphs.borrow().len())
            .finish()
    }
}

impl PrefillGraphs {
    /// Graphs that capture when `enabled` (a CUDA device is required then), for prefills of at
    /// most `max_batch` rows (0: any).
    pub fn new(enabled: bool, max_batch: usize) -> Self {
        PrefillGraphs {
            enabled,
            max_batch,
            graphs: RefCell::new(KeptGraphs::new(KEPT_PREFILLS)),
            replays: Cell::new(0),
            last_cache: Cell::new(None),
            seen: RefCell::new(KeptGraphs::new(REMEMBERED_KEYS)),
        }
    }

    /// A model's graphs as `engine` (`runtime.optim`) asks: on where `prefill_cuda_graph` is, the
    /// weights are on a GPU, the KV cache is static (`static_kv_cache`) and `experts_capturable`
    /// (a model without experts, or whose experts dispatch without host reads: grouped MoE in
    /// bf16; other dtypes fall back to a per-expert loop that reads expert counts on the host,
    /// which a capture cannot); off otherwise, saying why.
    pub fn for_model(engine: &EngineOptim, on_gpu: bool, experts_capturable: bool) -> Self {
        let mut enabled = engine.prefill_cuda_graph && on_gpu;
        if enabled && !(engine.static_kv_cache && experts_capturable) {
            tracing::info!(
                "runtime.optim.prefill_cuda_graph: the prefill runs op by op (a graph needs \
                 static_kv_cache, and for a model with experts their grouped dispatch with bf16 \
                 weights)"
            );
            enabled = false;
        }
        PrefillGraphs::new(enabled, engine.prefill_cuda_graph_max_batch as usize)
    }

    /// Whether prefills are captured.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// (graphs captured, dropped ones included; replays).
    pub fn stats(&self) -> (usize, u64) {
        let graphs = self.graphs.borrow();
        (graphs.len() + graphs.dropped() as usize, self.replays.get())
    }

    /// `prefill(x, cache)`: the decoder over embeddings `x` [B,T,H] into the empty `cache`,
    /// advancing it by T, returning one tensor computed on the device only (no host reads).
    /// From a replayed graph where one was captured for this key.
    pub fn run(
        &self,
        x: &Tensor,
        cache: &mut KvCache,
        obs: &dyn RegionObserver,
        prefill: &dyn Fn(&Tensor, &mut KvCache, &dyn RegionObserver) -> Result<Tensor>,
    ) -> Result<Tensor> {
        let (b, t, _) = x.size3()?;
        let applies = self.enabled
            && x.device().is_cuda()
            && !cache.is_growing()
            && (self.max_batch == 0 || b as usize <= self.max_batch)
            && b * t <= MAX_CAPTURED_TOKENS;
        if !applies {
            return prefill(x, cache, obs);
        }
        ensure!(
            cache.is_empty(),
            "a graphed prefill needs an empty KV cache"
        );
        let key = Key {
            shape: x.size(),
            kind: x.kind(),
            left_padding: cache.left_padding().to_vec(),
            cache: cache.id(),
        };
        // A cache met for the first time (each request's own cache on the eager decode path)
        // runs eagerly: capturing for it would never be replayed. Meeting another cache drops
        // the graphs that baked in the previous one's buffers.
        if self.last_cache.replace(Some(key.cache)) != Some(key.cache) {
            self.graphs.borrow_mut().clear();
            let mut seen = self.seen.borrow_mut();
            seen.clear();
            seen.insert(key, ());
            drop(seen);
            return prefill(x, cache, obs);
        }
        if let Some(c) = self.graphs.borrow_mut().get_mut(&key) {
            c.input.f_copy_(x)?;
            c.graph
                .replay()
                .context("replaying the prefill CUDA graph")?;
            // The graph advanced the cache's device-side counter; the host side follows.
            cache.advance_host_len(t);
            self.replays.set(self.replays.get() + 1);
            return copy_of(&c.output);
        }
        // A key met for the first time runs eagerly and is remembered; met again, it runs
        // eagerly (which also initialises cuBLAS, cuDNN plans and lazily built tables, which a
        // capture cannot) and is captured.
        {
            let mut seen = self.seen.borrow_mut();
            if seen.get_mut(&key).is_none() {
                seen.insert(key, ());
                drop(seen);
                return prefill(x, cache, obs);
            }
        }
        // The eager call wrote the slots and moved both of the cache's counters; the capture runs
        // only the host side, so it starts from the host counter moved back and leaves it at T
        // again.
        let eager = prefill(x, cache, obs)?;
        let input = copy_of(x)?;
        cache.rewind_host_len(t)?;
        let mut graph = CudaGraph::new().context("creating a CUDA graph")?;
        let output = {
            let graphs = self.graphs.borrow();
            let share = graphs.any().map(|c| &c.graph);
            let marks = CaptureMarks::new(&NoopObserver);
            let captured = graph.capture(share, || prefill(&input, cache, &marks));
            if captured.is_ok() {
                keep_record(&graph, &marks, format!("prefill batch {b} tokens {t}"));
            }
            if captured.is_err() && cache.len() < t {
                // The eager prefill filled the cache: its host counter says so again.
                cache.advance_host_len(t - cache.len());
            }
            captured.with_context(|| {
                format!(
                    "capturing the prefill of {b} x {t} tokens as a CUDA graph\n  fix: \
                     runtime.optim.prefill_cuda_graph=false runs it op by op"
                )
            })?
        };
        ensure!(
            cache.len() == t,
            "the captured prefill moved the KV cache to {} slots, not {t}",
            cache.len()
        );
        self.graphs.borrow_mut().insert(
            key,
            Captured {
                graph,
                input,
                output,
            },
        );
        Ok(eager)
    }
}
