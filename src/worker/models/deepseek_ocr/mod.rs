//! DeepSeek-OCR and DeepSeek-OCR-2 (docs/deepseek-ocr.md): vision encoder (SAM → CLIP or the
//! query encoder → projector), MoE decoder, and the model-level entry points `encode_images`, `prefill`, `decode_step`.
//! Region boundaries are reported to a `RegionObserver`; no timing here.

pub mod checkpoint;
pub mod checks;
pub mod decode;
mod encode;
pub mod hf_tokenizer;
pub mod interface;
mod load;
pub mod preprocess;
pub mod text;
pub mod vision;

pub use checkpoint::weights::{Part, Weights};
pub use llmprof::model::deepseek_ocr::ArchConfig;
/// The switches a DeepSeek-OCR model is built with: `runtime.optim` and its own `model.optim`.
pub type Switches =
    crate::engine::switches::Switches<llmprof::model::deepseek_ocr::DeepseekOcrOptim>;

use crate::engine::causal_lm::{left_pad, CausalLm};
use crate::engine::kv_cache::KvCache;
use crate::engine::lanes::Lanes;
use crate::engine::prefill_graphs::PrefillGraphs;
use crate::engine::shape_graphs::ShapeGraphStats;
use crate::engine::upload::ints_to_device;
use anyhow::{ensure, Context, Result};
use llmprof::region::{RegionObserver, DECODE_STEP, PREFILL};
use preprocess::PreparedImage;
use tch::{Device, Kind, Tensor};
use text::decoder::Decoder;
use vision::clip::Clip;
use vision::projector::Projector;
use vision::query_encoder::QueryEncoder;
use vision::sam::Sam;

/// The encoder after SAM.
#[derive(Debug)]
enum Encoder {
    /// DeepSeek-OCR: CLIP-L over SAM features; the projector fuses both.
    Clip(Clip),
    /// DeepSeek-OCR-2: the Qwen2 encoder over SAM tokens and learned queries.
    Queries(QueryEncoder),
}

/// One prompt of a batch: token ids (BOS + placeholders + text) and its image, if any.
#[derive(Debug, Clone, Copy)]
pub struct PromptRow<'a> {
    pub ids: &'a [i64],
    pub image: Option<&'a PreparedImage>,
}

/// The model; parts whose weights were not loaded are `None` (decoder-only, SAM-only, …).
#[derive(Debug)]
pub struct DeepseekOcr {
    cfg: ArchConfig,
    sam: Option<Sam>,
    /// The encoder after SAM (`Part::Encoder`).
    encoder: Option<Encoder>,
    projector: Option<Projector>,
    decoder: Option<Decoder>,
    device: Device,
    kind: Kind,
    /// Vision batching across pages: at most this many views per SAM/CLIP call (0: no limit);
    /// `None`: one page at a time (`model.optim.batched_vision`).
    vision_batch: Option<usize>,
    /// Pixels go to a GPU as uint8 and are normalised there (`model.optim.vision_uint8_upload`).
    uint8_upload: bool,
    /// With `uint8_upload`, each vision call uploads its views itself
    /// (`model.optim.vision_graph_uploads`).
    graph_uploads: bool,
    /// Vision stages captured per input shape (`model.optim.vision_cuda_graph`, GPU only), on
    /// one stream or two (`model.optim.vision_streams`).
    vision_lanes: Lanes,
    /// The decoder's prefill captured per shape (`runtime.optim.prefill_cuda_graph`).
    prefill_graphs: PrefillGraphs,
    /// Prefills of more pages than this run vision without the graphs (0: no limit;
    /// `model.optim.vision_cuda_graph_max_pages`).
    vision_graph_max_pages: usize,
}

impl DeepseekOcr {
    pub fn config(&self) -> &ArchConfig {
        &self.cfg
    }

    pub fn device(&self) -> Device {
        self.device
    }

    /// Readies a page's views at data-loading time: with `model.optim.vision_uint8_upload` on
    /// a GPU, pinned uint8 (normalised on the GPU inside the SAM call, [`preprocess::model_input`]); otherwise
    /// normalised to fp32 on the CPU now, so that the vision region only copies them.
    pub fn ready_pixels(&self, image: &mut PreparedImage) -> Result<()> {
        if self.uint8_upload && self.device.is_cuda() {
            image.pin()
        } else {
            image.normalise_on_cpu()
        }
    }

    pub fn kind(&self) -> Kind {
        self.kind
    }

    pub fn decoder(&self) -> Result<&Decoder> {
        self.decoder
            .as_ref()
            .context("decoder weights were not loaded")
    }

    pub fn sam(&self) -> Result<&Sam> {
        self.sam.as_ref().context("SAM weights were not loaded")
    }

    /// A zeroed static KV cache for `batch` rows of up to `capacity` tokens.
    pub fn new_cache(&self, batch: i64, capacity: i64) -> Result<KvCache> {
        let growing = !self.decoder()?.optim().static_kv_cache;
        KvCache::new(
            text::decoder::kv_dims(&self.cfg.decoder),
            batch,
            capacity,
            self.device,
            self.kind,
            growing,
        )
    }

    /// What the vision graphs did so far (`model.optim.vision_cuda_graph`); `None` when they
    /// are off or there is no GPU.
    pub fn vision_graph_stats(&self) -> Option<ShapeGraphStats> {
        let graphs = self.vision_lanes.graphs();
        graphs.enabled().then(|| graphs.stats())
    }

    /// (prefill graphs captured, prefills replayed) (`runtime.optim.prefill_cuda_graph`).
    pub fn prefill_graph_stats(&self) -> (usize, u64) {
        self.prefill_graphs.stats()
    }

    /// Pages of a prefill batch go through vision together, at most `max_views` views per call
    /// (0: no limit); `None`: one page at a time.
    pub fn set_vision_batch(&mut self, max_views: Option<usize>) {
        self.vision_batch = max_views;
    }

    /// Prefill: vision for rows with images, left-padded embeddings with image vectors written
    /// at the `<image>` positions, decoder over the whole prompt into an empty `cache`.
    /// Returns fp32 logits of the last prompt position [B, vocab].
    pub fn prefill(
        &self,
        rows: &[PromptRow],
        cache: &mut KvCache,
        obs: &dyn RegionObserver,
    ) -> Result<Tensor> {
        let dec = self.decoder()?;
        ensure!(!rows.is_empty(), "prefill needs at least one prompt");
        ensure!(cache.is_empty(), "prefill needs an empty KV cache");
        ensure!(
            cache.batch() == rows.len() as i64,
            "{} prompts for a KV cache of batch {}",
            rows.len(),
            cache.batch()
        );
        let _p = obs.enter(PREFILL);
        let ids: Vec<&[i64]> = rows.iter().map(|r| r.ids).collect();
        let (flat, t, pads) = left_pad(&ids, self.cfg.tokens.pad_token_id);
        ensure!(t > 0, "empty prompt");
        let image_id = self.cfg.tokens.image_token_id;
        let slots: Vec<Vec<i64>> = rows
            .iter()
            .enumerate()
            .map(|(b, r)| {
                r.ids
                    .iter()
                    .enumerate()
                    .filter(|(_, &id)| id == image_id)
                    .map(|(i, _)| i as i64 + pads[b])
                    .collect()
            })
            .collect();
        for (b, (r, s)) in rows.iter().zip(&slots).enumerate() {
            ensure!(
                r.image.is_some() || s.is_empty(),
                "row {b} has {} `<image>` ids but no image",
                s.len()
            );
        }
        // Vision is launched first, so the GPU starts on it at once; the decoder's inputs then
        // go up as asynchronous copies from page-locked memory, queued behind vision without
        // holding the host (a copy from pageable memory would wait for vision to finish, and
        // the decoder's launches after it would reach an idle GPU; reports/performance-history.md,
        // "Round 2, session 13").
        let image_rows = rows.iter().filter(|r| r.image.is_some()).count();
        let batched = match self.vision_batch {
            Some(max_views) => {
                let imgs: Vec<&PreparedImage> = rows.iter().filter_map(|r| r.image).collect();
                if imgs.is_empty() {
                    Vec::new()
                } else {
                    self.encode_batch(&imgs, max_views, obs)?
                }
            }
            None => Vec::new(),
        };
        let ids = ints_to_device(&flat, self.device)?.f_view([rows.len() as i64, t])?; // (b, t)
        let emb = dec.embed(&ids, obs)?; // (b, t, H)
        let all_slots = slots.concat();
        let slots_dev = match all_slots.is_empty() {
            true => None,
            false => Some(ints_to_device(&all_slots, self.device)?),
        };
        // After batched vision's launches (page-by-page vision runs in the loop below).
        cache.set_left_padding(&pads)?;
        let mut batched = batched.into_iter();
        let mut first_slot = 0i64;
        for (b, (r, s)) in rows.iter().zip(&slots).enumerate() {
            let n = s.len() as i64;
            if let Some(img) = r.image {
                let feats = match self.vision_batch {
                    Some(_) => batched.next().context("batched vision lost a page")?,
                    None => self
                        .encode_pages(&[img], 0, image_rows, obs)?
                        .pop()
                        .context("vision returned no embeddings for the page")?,
                }; // (n_img, H)
                ensure!(
                    feats.size()[0] == n,
                    "row {b}: {} image vectors for {n} `<image>` ids",
                    feats.size()[0]
                );
                let idx = slots_dev
                    .as_ref()
                    .context("image rows without `<image>` ids")?
                    .f_narrow(0, first_slot, n)?;
                let _ = emb.f_select(0, b as i64)?.f_index_copy_(
                    0,
                    &idx,
                    &feats.f_to_kind(self.kind)?,
                )?;
            }
            first_slot += n;
        }
        self.prefill_graphs.run(&emb, cache, obs, &|x, cache, obs| {
            let hidden = dec.forward(x, cache, obs)?; // (b, t, H)
            dec.logits(&hidden.f_select(1, t - 1)?, obs) // (b, vocab)
        })
    }

    /// One decode step: tokens [B] (int64, on the model device) → fp32 logits [B, vocab].
    pub fn decode_step(
        &self,
        tokens: &Tensor,
        cache: &mut KvCache,
        obs: &dyn RegionObserver,
    ) -> Result<Tensor> {
        let dec = self.decoder()?;
        let _s = obs.enter(DECODE_STEP);
        dec.step_logits(tokens, cache, obs)
    }

    /// One decode step at the cache's device-side slot counter over the first `window` slots
    /// (see [`Decoder::forward_device_step`]): tokens [B] → fp32 logits [B, vocab]. Advances
    /// only the device-side counter; module marks only (a captured graph replays without any).
    pub fn decode_step_device(
        &self,
        tokens: &Tensor,
        cache: &KvCache,
        window: i64,
        obs: &dyn RegionObserver,
    ) -> Result<Tensor> {
        self.decoder()?
            .device_step_logits(tokens, (cache, window), obs)
    }
}

impl CausalLm for DeepseekOcr {
    fn device(&self) -> Device {
        self.device
    }

    fn eos_token_id(&self) -> i64 {
        self.cfg.tokens.eos_token_id
    }

    fn max_positions(&self) -> i64 {
        self.cfg.decoder.max_position_embeddings
    }

    fn static_kv_cache(&self) -> bool {
        self.decoder
            .as_ref()
            .is_some_and(|d| d.optim().static_kv_cache)
    }

    fn new_cache(&self, batch: i64, capacity: i64) -> Result<KvCache> {
        DeepseekOcr::new_cache(self, batch, capacity)
    }

    fn decode_step(
        &self,
        tokens: &Tensor,
        cache: &mut KvCache,
        obs: &dyn RegionObserver,
    ) -> Result<Tensor> {
        DeepseekOcr::decode_step(self, tokens, cache, obs)
    }

    fn decode_step_device(
        &self,
        tokens: &Tensor,
        cache: &KvCache,
        window: i64,
        obs: &dyn RegionObserver,
    ) -> Result<Tensor> {
        DeepseekOcr::decode_step_device(self, tokens, cache, window, obs)
    }

    fn prefill_text(
        &self,
        prompts: &[&[i64]],
        cache: &mut KvCache,
        obs: &dyn RegionObserver,
    ) -> Result<Tensor> {
        let rows: Vec<PromptRow> = prompts
            .iter()
            .map(|ids| PromptRow { ids, image: None })
            .collect();
        self.prefill(&rows, cache, obs)
    }
}

#[cfg(test)]
mod tests;
