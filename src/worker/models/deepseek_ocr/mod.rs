//! DeepSeek-OCR and DeepSeek-OCR-2 (docs/deepseek-ocr.md): vision encoder (SAM → CLIP or the
//! query encoder → projector), MoE decoder, and the model-level entry points `encode_images`, `prefill`, `decode_step`.
//! Region boundaries are reported to a `RegionObserver`; no timing here.

pub mod checkpoint;
pub mod checks;
pub mod decode;
pub mod hf_tokenizer;
pub mod interface;
mod load;
pub mod preprocess;
pub mod text;
pub mod vision;

pub use checkpoint::weights::{Part, Weights};
pub use llmprof::model::deepseek_ocr::ArchConfig;

use crate::models::common::causal_lm::{left_pad, CausalLm};
use crate::models::common::kv_cache::KvCache;
use crate::models::common::shape_graphs::{ShapeGraphStats, ShapeGraphs};
use anyhow::{ensure, Context, Result};
use llmprof::model::deepseek_ocr::{CLIP, PROJECTOR, QUERY_ENCODER, SAM, VISION};
use llmprof::region::{RegionObserver, DECODE_STEP, PREFILL};
use preprocess::PreparedImage;
use tch::{Device, Kind, Tensor};
use text::decoder::Decoder;
use vision::clip::Clip;
use vision::projector::Projector;
use vision::query_encoder::QueryEncoder;
use vision::sam::Sam;

/// Views with one input each, as [`vision::batch::run_grouped`] takes them.
fn one_input(views: &[Tensor]) -> Vec<Vec<&Tensor>> {
    views.iter().map(|t| vec![t]).collect()
}

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
    /// `None`: one page at a time (`runtime.optim.batched_vision`).
    vision_batch: Option<usize>,
    /// Pixels go to a GPU as uint8 and are normalised there (`runtime.optim.vision_uint8_upload`).
    uint8_upload: bool,
    /// Vision stages captured per input shape (`runtime.optim.vision_cuda_graph`, GPU only).
    vision_graphs: ShapeGraphs,
    /// Vision calls of more pages than this run without the graphs (0: no limit;
    /// `runtime.optim.vision_cuda_graph_max_pages`).
    vision_graph_max_pages: usize,
}

impl DeepseekOcr {
    pub fn config(&self) -> &ArchConfig {
        &self.cfg
    }

    pub fn device(&self) -> Device {
        self.device
    }

    /// Readies a page's views at data-loading time: with `runtime.optim.vision_uint8_upload` on
    /// a GPU, pinned uint8 (normalised on the GPU by [`preprocess::upload`]); otherwise
    /// normalised to fp32 on the CPU now, so that the vision region only copies them.
    pub fn ready_pixels(&self, image: &mut PreparedImage) -> Result<()> {
        if self.uint8_upload && self.device.is_cuda() {
            image.pin(self.device)
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

    /// What the vision graphs did so far (`runtime.optim.vision_cuda_graph`); `None` when they
    /// are off or there is no GPU.
    pub fn vision_graph_stats(&self) -> Option<ShapeGraphStats> {
        self.vision_graphs
            .enabled()
            .then(|| self.vision_graphs.stats())
    }

    /// Pages of a prefill batch go through vision together, at most `max_views` views per call
    /// (0: no limit); `None`: one page at a time.
    pub fn set_vision_batch(&mut self, max_views: Option<usize>) {
        self.vision_batch = max_views;
    }

    /// Vision for several pages at once ([`vision::batch`]): every view of every page through
    /// SAM, CLIP and the projector in calls grouped by view size, then each page's embeddings
    /// arranged as [`DeepseekOcr::encode_images`] does. Same result per page as alone.
    pub fn encode_batch(
        &self,
        imgs: &[&PreparedImage],
        max_views: usize,
        obs: &dyn RegionObserver,
    ) -> Result<Vec<Tensor>> {
        let sam = self.sam()?;
        let encoder = self
            .encoder
            .as_ref()
            .context("the vision encoder's weights were not loaded")?;
        let proj = self
            .projector
            .as_ref()
            .context("projector weights were not loaded")?;
        let graphs = &self.vision_graphs;
        let max_pages = self.vision_graph_max_pages;
        let use_graphs = max_pages == 0 || imgs.len() <= max_pages;
        let call = |stage: &'static str, x: &[Tensor], f: &dyn Fn(&[Tensor]) -> Result<Tensor>| {
            if use_graphs {
                graphs.call(stage, x, f)
            } else {
                f(x)
            }
        };
        let _v = obs.enter(VISION);
        let to_dev = |t: &Tensor| preprocess::upload(t, self.device, self.kind, self.uint8_upload);
        // Views in a fixed order: page 0 global, page 0 tiles, page 1 global, ...
        let mut views = Vec::new();
        let mut owner = Vec::new(); // (page, is_global)
        for (p, img) in imgs.iter().enumerate() {
            views.push(to_dev(&img.global)?);
            owner.push((p, true));
            if let Some(t) = &img.tiles {
                views.push(to_dev(t)?);
                owner.push((p, false));
            }
        }
        let sam_out = {
            let _g = obs.enter(SAM);
            vision::batch::run_grouped(&one_input(&views), max_views, &|x| {
                call("sam", x, &|x| sam.forward(&x[0]))
            })?
        };
        // The projector region also covers the arrangement below.
        let (projected, _projector) = match encoder {
            Encoder::Clip(clip) => {
                let clip_out = {
                    let _g = obs.enter(CLIP);
                    vision::batch::run_grouped(&one_input(&sam_out), max_views, &|x| {
                        call("clip", x, &|x| clip.forward(&x[0]))
                    })?
                };
                let g = obs.enter(PROJECTOR);
                let pairs: Vec<Vec<&Tensor>> = clip_out
                    .iter()
                    .zip(&sam_out)
                    .map(|(c, s)| vec![c, s])
                    .collect();
                let p = vision::batch::run_grouped(&pairs, 0, &|x| {
                    call("projector", x, &|x| proj.forward(&x[0], &x[1]))
                })?;
                (p, g)
            }
            Encoder::Queries(enc) => {
                let queries = {
                    let _g = obs.enter(QUERY_ENCODER);
                    vision::batch::run_grouped(&one_input(&sam_out), max_views, &|x| {
                        call("query_encoder", x, &|x| enc.forward(&x[0]))
                    })?
                };
                let g = obs.enter(PROJECTOR);
                let p = vision::batch::run_grouped(&one_input(&queries), 0, &|x| {
                    call("projector", x, &|x| proj.forward_queries(&x[0]))
                })?;
                (p, g)
            }
        };
        let mut out = Vec::with_capacity(imgs.len());
        for (p, img) in imgs.iter().enumerate() {
            let mine = |global: bool| owner.iter().position(|&o| o == (p, global));
            let glob = &projected[mine(true).context("page without a global view")?];
            let local = mine(false).map(|i| &projected[i]);
            let grid = img.grid;
            out.push(proj.arrange(glob, local.map(|l| (l, grid.rows as i64, grid.cols as i64)))?);
        }
        Ok(out)
    }

    /// Vision path for one image → embeddings [N_img, hidden] in the order they replace the
    /// `<image>` ids (local mosaic, global grid, separator): [`DeepseekOcr::encode_batch`] of
    /// one page (its tiles in one call, its global view in another).
    pub fn encode_images(&self, img: &PreparedImage, obs: &dyn RegionObserver) -> Result<Tensor> {
        self.encode_batch(&[img], 0, obs)?
            .pop()
            .context("vision returned no embeddings for the page")
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
        let ids = Tensor::f_from_slice(&flat)?
            .f_view([rows.len() as i64, t])?
            .f_to_device(self.device)?; // (b, t)
        let emb = dec.embed(&ids)?; // (b, t, H)
        let image_id = self.cfg.tokens.image_token_id;
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
        let mut batched = batched.into_iter();
        for (b, r) in rows.iter().enumerate() {
            let slots: Vec<i64> = r
                .ids
                .iter()
                .enumerate()
                .filter(|(_, &id)| id == image_id)
                .map(|(i, _)| i as i64 + pads[b])
                .collect();
            match r.image {
                Some(img) => {
                    let feats = match self.vision_batch {
                        Some(_) => batched.next().context("batched vision lost a page")?,
                        None => self.encode_images(img, obs)?,
                    }; // (n_img, H)
                    ensure!(
                        feats.size()[0] == slots.len() as i64,
                        "row {b}: {} image vectors for {} `<image>` ids",
                        feats.size()[0],
                        slots.len()
                    );
                    let idx = Tensor::f_from_slice(&slots)?.f_to_device(self.device)?;
                    let _ = emb.f_select(0, b as i64)?.f_index_copy_(
                        0,
                        &idx,
                        &feats.f_to_kind(self.kind)?,
                    )?;
                }
                None => ensure!(
                    slots.is_empty(),
                    "row {b} has {} `<image>` ids but no image",
                    slots.len()
                ),
            }
        }
        cache.set_left_padding(&pads)?;
        let hidden = dec.forward(&emb, cache)?; // (b, t, H)
        dec.logits(&hidden.f_select(1, t - 1)?) // (b, vocab)
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
        let emb = dec.embed(&tokens.f_view([-1, 1])?)?; // (b, 1, H)
        let hidden = dec.forward(&emb, cache)?; // (b, 1, H)
        dec.logits(&hidden.f_squeeze_dim(1)?) // (b, vocab)
    }

    /// One decode step at the cache's device-side slot counter over the first `window` slots
    /// (see [`Decoder::forward_device_step`]): tokens [B] → fp32 logits [B, vocab]. Advances
    /// only the device-side counter; no region marks (a captured graph replays without them).
    pub fn decode_step_device(
        &self,
        tokens: &Tensor,
        cache: &KvCache,
        window: i64,
    ) -> Result<Tensor> {
        let dec = self.decoder()?;
        let emb = dec.embed(&tokens.f_view([-1, 1])?)?; // (b, 1, H)
        let hidden = dec.forward_device_step(&emb, cache, window)?; // (b, 1, H)
        dec.logits(&hidden.f_squeeze_dim(1)?) // (b, vocab)
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

    fn decode_step_device(&self, tokens: &Tensor, cache: &KvCache, window: i64) -> Result<Tensor> {
        DeepseekOcr::decode_step_device(self, tokens, cache, window)
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
