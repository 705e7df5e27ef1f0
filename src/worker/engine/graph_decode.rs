//! How decode steps run, and the state that outlives one request: the static KV cache of each
//! batch size and the CUDA graphs captured for it, so that warm-up requests capture and timed
//! requests only replay.
//!
//! Step paths:
//! - `Eager`: [`CausalLm::decode_step`], a fresh KV cache per request, attention over the
//!   written slots only.
//! - `Graph`: the fixed-shape step [`CausalLm::decode_step_device`] over a KV window (slots
//!   rounded up to `kv_bucket`). The first step in each (batch, window) runs eagerly, then the
//!   step is captured once through the C++ shim and replayed for every later step in that
//!   window. Without a GPU the fixed-shape step runs eagerly every time (same numbers, no
//!   capture), which is how the CPU tests check it against the eager path.

use super::capture_marks::{keep_record, CaptureMarks};
use super::causal_lm::CausalLm;
use super::kv_cache::KvCache;
use crate::ffi::CudaGraph;
use anyhow::{ensure, Context, Result};
use llmprof::model::GraphStats;
use llmprof::region::{NoopObserver, RegionObserver, DECODE_STEP};
use std::collections::{BTreeMap, HashMap};
use tch::{Device, Kind, Tensor};

/// `x` rounded up to a multiple of `m` (both > 0).
fn round_up(x: i64, m: i64) -> i64 {
    (x + m - 1) / m * m
}

/// Decode step implementation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepPath {
    Eager,
    /// Fixed-shape step over KV windows of `kv_bucket` slots, captured as CUDA graphs on a GPU.
    Graph {
        kv_bucket: i64,
    },
}

/// One batch size's reusable state.
struct BatchState {
    cache: KvCache,
    /// Static input of the captured step: the tokens fed in [B].
    tokens: Tensor,
    /// Captured step and its output logits, per KV window.
    graphs: BTreeMap<i64, (CudaGraph, Tensor)>,
}

/// The decode step path of `runtime.optim`.
pub fn step_path(spec: &llmprof::spec::RunSpec) -> StepPath {
    let o = &spec.runtime.optim;
    if o.cuda_graph {
        StepPath::Graph {
            kv_bucket: o.graph_kv_bucket as i64,
        }
    } else {
        StepPath::Eager
    }
}

/// Notes a report must carry about the decode-loop switches of `spec` as `session` runs them
/// (switches without effect on this device or with these settings).
pub fn decode_notes(spec: &llmprof::spec::RunSpec, session: &DecodeSession) -> Vec<String> {
    let o = &spec.runtime.optim;
    let mut notes = Vec::new();
    if o.sync_free_decode
        && spec.infer.no_repeat_ngram_size > 0
        && spec.infer.ngram_window.is_none()
    {
        notes.push(format!(
            "runtime.optim.sync_free_decode has no effect with HF's whole-sequence n-gram rule (infer.no_repeat_ngram_size={}, infer.ngram_window=null), which reads every token on the host; set infer.ngram_window (the windowed rule runs on the device) or no_repeat_ngram_size=0 for sync-free decode",
            spec.infer.no_repeat_ngram_size
        ));
    }
    if o.cuda_graph && !session.captures_graphs() {
        notes.push("runtime.optim.cuda_graph=true without a GPU: the fixed-shape decode step runs eagerly (no graph capture)".to_string());
    }
    notes
}

/// Decode state across requests.
pub struct DecodeSession {
    path: StepPath,
    capture: bool,
    states: HashMap<i64, BatchState>,
    /// The cache of the running request on the eager path.
    eager_cache: Option<KvCache>,
    current_batch: i64,
    pub stats: GraphStats,
}

impl DecodeSession {
    /// `path` for `model`; graphs are captured only on a CUDA device.
    pub fn new(model: &impl CausalLm, path: StepPath) -> Result<Self> {
        if let StepPath::Graph { kv_bucket } = path {
            ensure!(kv_bucket > 0, "the KV window bucket must be > 0");
            ensure!(
                model.static_kv_cache(),
                "the fixed-shape (graph) decode step needs the static KV cache\n  fix: runtime.optim.static_kv_cache=true, or runtime.optim.cuda_graph=false"
            );
        }
        Ok(DecodeSession {
            path,
            capture: matches!(model.device(), Device::Cuda(_)),
            states: HashMap::new(),
            eager_cache: None,
            current_batch: 0,
            stats: GraphStats::default(),
        })
    }

    /// True when steps are replayed from captured CUDA graphs (graph path on a GPU).
    pub fn captures_graphs(&self) -> bool {
        self.capture && matches!(self.path, StepPath::Graph { .. })
    }

    /// The run's graph counts (metrics.json `optim.graphs`): the decode steps' where they were
    /// captured, with the prefill's `(graphs captured, prefills replayed)`; None where neither
    /// captured anything and `other_graphs` (a family's own, as vision's) is false.
    pub fn run_graph_stats(
        &self,
        (prefill_captured, prefill_replays): (usize, u64),
        other_graphs: bool,
    ) -> Option<GraphStats> {
        if !self.captures_graphs() && prefill_captured == 0 && !other_graphs {
            return None;
        }
        let mut stats = match self.captures_graphs() {
            true => self.stats.clone(),
            false => GraphStats::default(),
        };
        stats.prefill_graphs_captured = prefill_captured;
        stats.prefill_replays = prefill_replays;
        Some(stats)
    }

    /// An empty KV cache for a request of `batch` rows and up to `slots` tokens. The graph path
    /// reuses one cache per batch size (its capacity rounded up to whole windows) so captured
    /// graphs stay valid; a request that needs more slots replaces it and its graphs.
    pub fn begin(&mut self, model: &impl CausalLm, batch: i64, slots: i64) -> Result<&mut KvCache> {
        self.current_batch = batch;
        let StepPath::Graph { kv_bucket } = self.path else {
            self.eager_cache = Some(model.new_cache(batch, slots)?);
            return Ok(self.eager_cache.as_mut().expect("just set"));
        };
        let max_pos = model.max_positions();
        let capacity = round_up(slots, kv_bucket).min(max_pos).max(slots);
        let reuse = self
            .states
            .get(&batch)
            .is_some_and(|s| s.cache.capacity() >= slots);
        if !reuse {
            self.states.insert(
                batch,
                BatchState {
                    cache: model.new_cache(batch, capacity)?,
                    tokens: Tensor::f_zeros([batch], (Kind::Int64, model.device()))?,
                    graphs: BTreeMap::new(),
                },
            );
        }
        let state = self.states.get_mut(&batch).expect("just inserted");
        state.cache.reset()?;
        Ok(&mut state.cache)
    }

    /// The cache of the request begun last.
    pub fn cache(&mut self) -> Result<&mut KvCache> {
        match self.path {
            StepPath::Eager => self.eager_cache.as_mut(),
            StepPath::Graph { .. } => self
                .states
                .get_mut(&self.current_batch)
                .map(|s| &mut s.cache),
        }
        .context("no request was begun")
    }

    /// One decode step: tokens [B] → fp32 logits [B, vocab]. On the graph path the returned
    /// tensor is the graph's output buffer: use it before the next step.
    pub fn step(
        &mut self,
        model: &impl CausalLm,
        tokens: &Tensor,
        obs: &dyn RegionObserver,
    ) -> Result<Tensor> {
        let StepPath::Graph { kv_bucket } = self.path else {
            let cache = self.eager_cache.as_mut().context("no request was begun")?;
            return model.decode_step(tokens, cache, obs);
        };
        let capture = self.capture;
        let state = self
            .states
            .get_mut(&self.current_batch)
            .context("no request was begun")?;
        let cache_len = state.cache.len();
        let window = round_up(cache_len + 1, kv_bucket).min(state.cache.capacity());
        state.tokens.f_copy_(tokens)?;
        if let Some((graph, logits)) = state.graphs.get_mut(&window) {
            {
                let _s = obs.enter(DECODE_STEP);
                graph.replay().context("replaying the decode CUDA graph")?;
            }
            state.cache.advance_host_len(1);
            self.stats.replays += 1;
            return Ok(logits.shallow_clone());
        }
        let logits = {
            let _s = obs.enter(DECODE_STEP);
            model.decode_step_device(&state.tokens, &state.cache, window, obs)?
        };
        state.cache.advance_host_len(1);
        self.stats.eager_steps += 1;
        if capture && state.cache.len() < window {
            let started = std::time::Instant::now();
            let mut graph = CudaGraph::new().context("creating a CUDA graph")?;
            let share = state.graphs.values().next().map(|(g, _)| g);
            let marks = CaptureMarks::new(&NoopObserver);
            let out = graph
                .capture(share, || {
                    model.decode_step_device(&state.tokens, &state.cache, window, &marks)
                })
                .with_context(|| {
                    format!(
                        "capturing the decode step as a CUDA graph (batch {}, KV window {window})\n  fix: runtime.optim.cuda_graph=false runs the same step eagerly",
                        self.current_batch
                    )
                })?;
            let label = format!("decode_step batch {} window {window}", self.current_batch);
            keep_record(&graph, &marks, label);
            state.graphs.insert(window, (graph, out));
            self.stats.graphs_captured += 1;
            self.stats.capture_ms_total += started.elapsed().as_secs_f64() * 1e3;
            self.stats
                .windows
                .entry(self.current_batch)
                .or_default()
                .push(window);
        }
        Ok(logits)
    }
}
