//! What the generation loop and the decode-step paths need of a model: its device, EOS, position
//! limit, a KV cache, and the two decode steps (eager, and fixed-shape for CUDA graphs).
//! Prefill is the family's own (images, text) and is passed to the loop as a closure.
use super::kv_cache::KvCache;
use anyhow::Result;
use llmprof::region::RegionObserver;
use tch::{Device, Tensor};

pub trait CausalLm {
    fn device(&self) -> Device;
    fn eos_token_id(&self) -> i64;
    fn max_positions(&self) -> i64;
    /// Whether the model was built with the preallocated (static) KV cache.
    fn static_kv_cache(&self) -> bool;
    /// A zeroed KV cache for `batch` rows of up to `capacity` tokens.
    fn new_cache(&self, batch: i64, capacity: i64) -> Result<KvCache>;
    /// One decode step: tokens [B] (int64, on the device) → fp32 logits [B, vocab].
    fn decode_step(
        &self,
        tokens: &Tensor,
        cache: &mut KvCache,
        obs: &dyn RegionObserver,
    ) -> Result<Tensor>;
    /// The fixed-shape step at the cache's device-side counter over `window` slots (capturable);
    /// it marks modules only (`obs.enter_module`), never regions, so a capture can record them.
    fn decode_step_device(
        &self,
        tokens: &Tensor,
        cache: &KvCache,
        window: i64,
        obs: &dyn RegionObserver,
    ) -> Result<Tensor>;
    /// Text-only prefill of left-padded `prompts` into an empty cache → fp32 last-position
    /// logits [B, vocab] (the fast-path check and text requests).
    fn prefill_text(
        &self,
        prompts: &[&[i64]],
        cache: &mut KvCache,
        obs: &dyn RegionObserver,
    ) -> Result<Tensor>;
}

/// Left-pads `prompts` with `pad_id` to the longest: flat ids [B·T] row-major, T, and each row's
/// pad length.
pub fn left_pad(prompts: &[&[i64]], pad_id: i64) -> (Vec<i64>, i64, Vec<i64>) {
    let t = prompts.iter().map(|r| r.len()).max().unwrap_or(0) as i64;
    let mut flat = Vec::with_capacity(prompts.len() * t as usize);
    let mut pads = Vec::with_capacity(prompts.len());
    for r in prompts {
        let pad = t - r.len() as i64;
        pads.push(pad);
        flat.extend(std::iter::repeat_n(pad_id, pad as usize));
        flat.extend_from_slice(r);
    }
    (flat, t, pads)
}
