//! DeepSeek-OCR and DeepSeek-OCR-2 (docs/deepseek-ocr.md): vision encoder (SAM → CLIP or the
//! query encoder → projector), MoE decoder, and the model-level entry points `encode_images`, `prefill`, `decode_step`.
//! Region boundaries are reported to a `RegionObserver`; no timing here.

pub mod checkpoint;
pub mod checks;
pub mod decode;
pub mod hf_tokenizer;
pub mod interface;
pub mod preprocess;
pub mod text;
pub mod vision;

pub use checkpoint::weights::{Part, Weights};
pub use llmprof::model::deepseek_ocr::ArchConfig;

use crate::models::common::causal_lm::{left_pad, CausalLm};
use crate::models::common::kv_cache::KvCache;
use crate::models::common::optim::ModelOptim;
use crate::models::common::shape_graphs::{ShapeGraphStats, ShapeGraphs};
use anyhow::{ensure, Context, Result};
use llmprof::model::deepseek_ocr::{CLIP, PROJECTOR, QUERY_ENCODER, SAM, VISION};
use llmprof::region::{RegionObserver, DECODE_STEP, PREFILL};
use preprocess::PreparedImage;
use std::path::Path;
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
}

impl DeepseekOcr {
    /// Builds every part `weights` holds. Consumes the weights so per-expert tensors that the MoE
    /// restacks are freed.
    pub fn load(weights: Weights, cfg: &ArchConfig) -> Result<Self> {
        Self::load_with(weights, cfg, &ModelOptim::default())
    }

    /// [`DeepseekOcr::load`] with explicit decoder implementation choices.
    pub fn load_with(weights: Weights, cfg: &ArchConfig, optim: &ModelOptim) -> Result<Self> {
        cfg.validate()?;
        if weights.device().is_cuda() {
            let has = |p| weights.has_part(p);
            crate::ffi::kernels::require(
                "sam_cuda_kernels",
                optim.sam_cuda_kernels && optim.sam_fused_rel_pos && has(Part::Sam),
            )?;
            crate::ffi::kernels::require(
                "add_layer_norm_kernel",
                optim.add_layer_norm_kernel && (has(Part::Sam) || has(Part::Encoder)),
            )?;
            crate::ffi::kernels::require(
                "quick_gelu_kernel",
                optim.quick_gelu_kernel && cfg.clip.is_some() && has(Part::Encoder),
            )?;
            crate::ffi::kernels::require(
                "moe_routing_kernel",
                optim.moe_routing_kernel && optim.grouped_moe && has(Part::Decoder),
            )?;
            crate::ffi::kernels::require(
                "moe_combine_kernel",
                optim.moe_combine_kernel && optim.moe_routing_kernel && has(Part::Decoder),
            )?;
        }
        let weights_on_gpu = weights.device().is_cuda();
        let vs = weights.root();
        let model = vs.sub("model");
        let sam = if weights.has_part(Part::Sam) {
            let sam_optim = vision::sam_attention::SamOptim {
                fused_rel_pos: optim.sam_fused_rel_pos,
                fused_windows: optim.sam_fused_windows,
                cuda_kernels: optim.sam_cuda_kernels,
                rel_pos_gemm: optim.sam_rel_pos_gemm,
                proj_in_windows: optim.sam_proj_in_windows,
                patch_gemm: optim.sam_patch_gemm,
                add_layer_norm_kernel: optim.add_layer_norm_kernel,
            };
            Some(Sam::load(&model.sub("sam_model"), &cfg.sam, sam_optim).context("loading SAM")?)
        } else {
            None
        };
        let encoder = if weights.has_part(Part::Encoder) {
            Some(match (&cfg.clip, &cfg.query_encoder) {
                (Some(c), _) => Encoder::Clip(
                    Clip::load(
                        &model.sub("vision_model"),
                        c,
                        vision::clip::ClipOptim {
                            add_layer_norm_kernel: optim.add_layer_norm_kernel,
                            quick_gelu_kernel: optim.quick_gelu_kernel,
                        },
                    )
                    .context("loading CLIP")?,
                ),
                (None, Some(q)) => Encoder::Queries(
                    QueryEncoder::load(&model.sub("qwen2_model"), q, cfg.pixels_per_token(), optim)
                        .context("loading the query encoder")?,
                ),
                (None, None) => anyhow::bail!("the architecture has no encoder after SAM"),
            })
        } else {
            None
        };
        let projector = if weights.has_part(Part::Projector) {
            Some(
                Projector::load(&model, &cfg.projector, cfg.token_layout())
                    .context("loading projector")?,
            )
        } else {
            None
        };
        let decoder = if weights.has_part(Part::Decoder) {
            Some(text::decoder::load(&vs, &cfg.decoder, optim).context("loading decoder")?)
        } else {
            None
        };
        Ok(DeepseekOcr {
            cfg: cfg.clone(),
            sam,
            encoder,
            projector,
            decoder,
            device: weights.device(),
            kind: weights.kind(),
            vision_batch: None,
            uint8_upload: optim.vision_uint8_upload,
            vision_graphs: ShapeGraphs::new(
                optim.vision_cuda_graph && weights_on_gpu,
                "runtime.optim.vision_cuda_graph",
            ),
        })
    }

    /// Loads `parts` from a checkpoint file or folder.
    pub fn from_checkpoint(
        path: &Path,
        cfg: &ArchConfig,
        parts: &[Part],
        device: Device,
        kind: Kind,
    ) -> Result<Self> {
        Self::load(Weights::load(path, cfg, parts, device, kind)?, cfg)
    }

    /// Seeded random weights for all parts, built on the device.
    pub fn synthetic(cfg: &ArchConfig, seed: i64, device: Device, kind: Kind) -> Result<Self> {
        Self::load(
            Weights::synthetic(cfg, &Part::ALL, seed, device, kind)?,
            cfg,
        )
    }

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
                graphs.call("sam", x, &|x| sam.forward(&x[0]))
            })?
        };
        // The projector region also covers the arrangement below.
        let (projected, _projector) = match encoder {
            Encoder::Clip(clip) => {
                let clip_out = {
                    let _g = obs.enter(CLIP);
                    vision::batch::run_grouped(&one_input(&sam_out), max_views, &|x| {
                        graphs.call("clip", x, &|x| clip.forward(&x[0]))
                    })?
                };
                let g = obs.enter(PROJECTOR);
                let pairs: Vec<Vec<&Tensor>> = clip_out
                    .iter()
                    .zip(&sam_out)
                    .map(|(c, s)| vec![c, s])
                    .collect();
                let p = vision::batch::run_grouped(&pairs, 0, &|x| {
                    graphs.call("projector", x, &|x| proj.forward(&x[0], &x[1]))
                })?;
                (p, g)
            }
            Encoder::Queries(enc) => {
                let queries = {
                    let _g = obs.enter(QUERY_ENCODER);
                    vision::batch::run_grouped(&one_input(&sam_out), max_views, &|x| {
                        graphs.call("query_encoder", x, &|x| enc.forward(&x[0]))
                    })?
                };
                let g = obs.enter(PROJECTOR);
                let p = vision::batch::run_grouped(&one_input(&queries), 0, &|x| {
                    graphs.call("projector", x, &|x| proj.forward_queries(&x[0]))
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
mod tests {
    use super::*;
    use llmprof::model::deepseek_ocr::views::{PreprocessConfig, TileGrid};
    use llmprof::model::deepseek_ocr::{prompt, tokenizer};
    use llmprof::region::NoopObserver;

    fn tiny() -> DeepseekOcr {
        DeepseekOcr::synthetic(&ArchConfig::tiny(), 11, Device::Cpu, Kind::Float).unwrap()
    }

    fn max_diff(a: &Tensor, b: &Tensor) -> f64 {
        (a - b).abs().max().double_value(&[])
    }

    fn ids(n: usize, seed: i64) -> Vec<i64> {
        let mut v = vec![0];
        v.extend((1..n as i64).map(|i| 3 + (i * 37 + seed * 11) % 250));
        v
    }

    #[test]
    fn kv_cache_decode_equals_full_rerun() {
        let m = tiny();
        let seq = ids(12, 1);
        let obs = NoopObserver;
        // Full sequence at once.
        let mut c1 = m.new_cache(1, 16).unwrap();
        let full = m
            .prefill(
                &[PromptRow {
                    ids: &seq,
                    image: None,
                }],
                &mut c1,
                &obs,
            )
            .unwrap();
        // Prefix, then the last 4 tokens one at a time through the cache.
        let mut c2 = m.new_cache(1, 16).unwrap();
        let mut logits = m
            .prefill(
                &[PromptRow {
                    ids: &seq[..8],
                    image: None,
                }],
                &mut c2,
                &obs,
            )
            .unwrap();
        for &tok in &seq[8..] {
            logits = m
                .decode_step(&Tensor::from_slice(&[tok]), &mut c2, &obs)
                .unwrap();
        }
        assert!(
            max_diff(&full, &logits) < 1e-4,
            "{}",
            max_diff(&full, &logits)
        );
        // And it is not trivially equal to something else.
        assert!(
            max_diff(
                &full,
                &m.prefill(
                    &[PromptRow {
                        ids: &seq[..11],
                        image: None
                    }],
                    &mut m.new_cache(1, 16).unwrap(),
                    &obs
                )
                .unwrap()
            ) > 1e-3
        );
    }

    #[test]
    fn left_padded_batch_equals_rows_alone() {
        let m = tiny();
        let obs = NoopObserver;
        let a = ids(9, 2);
        let b = ids(5, 3);
        let mut cb = m.new_cache(2, 16).unwrap();
        let lb = m
            .prefill(
                &[
                    PromptRow {
                        ids: &a,
                        image: None,
                    },
                    PromptRow {
                        ids: &b,
                        image: None,
                    },
                ],
                &mut cb,
                &obs,
            )
            .unwrap();
        let step_b = m
            .decode_step(&Tensor::from_slice(&[7i64, 9]), &mut cb, &obs)
            .unwrap();
        for (row, (p, tok)) in [(&a, 7i64), (&b, 9i64)].into_iter().enumerate() {
            let mut c = m.new_cache(1, 16).unwrap();
            let l = m
                .prefill(
                    &[PromptRow {
                        ids: p,
                        image: None,
                    }],
                    &mut c,
                    &obs,
                )
                .unwrap();
            assert!(
                max_diff(&l.get(0), &lb.get(row as i64)) < 1e-4,
                "prefill row {row}"
            );
            let s = m
                .decode_step(&Tensor::from_slice(&[tok]), &mut c, &obs)
                .unwrap();
            assert!(
                max_diff(&s.get(0), &step_b.get(row as i64)) < 1e-4,
                "decode row {row}"
            );
        }
    }

    /// Tiny crop mode: 128 px global view (2x2 tokens), 64 px tiles (1x1 token), 2 to 4 crops.
    fn tiny_crop_mode() -> PreprocessConfig {
        PreprocessConfig {
            base_size: 128,
            image_size: 64,
            crop_mode: true,
            min_crops: 2,
            max_crops: 4,
        }
    }

    #[test]
    fn batched_vision_equals_pages_alone() {
        let m = tiny();
        let obs = NoopObserver;
        let pc = tiny_crop_mode();
        // Three pages: two tile grids (2x1, 1x2) and one small enough for no tiles.
        let page = |w: u32, h: u32, k: u32| {
            let img = image::RgbImage::from_fn(w, h, |x, y| {
                image::Rgb([
                    ((x * k) % 256) as u8,
                    ((y * 3 + k) % 256) as u8,
                    (k * 40) as u8,
                ])
            });
            preprocess::preprocess(&img, &pc).unwrap()
        };
        let pages = [page(150, 70, 1), page(70, 150, 2), page(60, 50, 3)];
        assert!(pages[2].tiles.is_none() && pages[0].tiles.is_some());
        let refs: Vec<&PreparedImage> = pages.iter().collect();
        for max_views in [0, 1, 3] {
            let batched = m.encode_batch(&refs, max_views, &obs).unwrap();
            for (p, img) in pages.iter().enumerate() {
                let alone = m.encode_images(img, &obs).unwrap();
                assert_eq!(alone.size(), batched[p].size(), "page {p}");
                let scale = alone.abs().max().double_value(&[]);
                let err = max_diff(&alone, &batched[p]) / scale;
                assert!(err < 1e-5, "page {p}, max_views {max_views}: {err}");
            }
        }
    }

    /// A 150×70 page in the tiny crop mode: 128 px global view (2x2 tokens), 64 px tiles (1x1
    /// token), grid 2 cols x 1 row; and its image-token count for `m`.
    fn tiny_crop_page(m: &DeepseekOcr) -> (PreparedImage, usize) {
        let pc = tiny_crop_mode();
        let img = image::RgbImage::from_fn(150, 70, |x, y| {
            image::Rgb([(x % 256) as u8, (y * 3 % 256) as u8, 90])
        });
        let prep = preprocess::preprocess(&img, &pc).unwrap();
        assert_eq!(prep.grid, TileGrid { cols: 2, rows: 1 });
        let n = prompt::image_token_count(m.config().token_layout(), &pc, prep.grid);
        (prep, n)
    }

    /// Prefill of "<image>\nFree OCR." with `placeholders` image ids and `prep` as its image.
    fn prefill_image_prompt(
        m: &DeepseekOcr,
        prep: &PreparedImage,
        placeholders: usize,
    ) -> Result<Tensor> {
        let tok = tokenizer::ByteTokenizer::tiny();
        let p = prompt::build_prompt_ids(&tok, "<image>\nFree OCR.", &[placeholders])?;
        m.prefill(
            &[PromptRow {
                ids: &p,
                image: Some(prep),
            }],
            &mut m.new_cache(1, 64)?,
            &NoopObserver,
        )
    }

    #[test]
    fn image_prompt_runs_end_to_end() {
        let m = tiny();
        let (prep, n) = tiny_crop_page(&m);
        // Custom sizes: global 2·3+1 = 7; mosaic (1·1)(2·1+1) = 3.
        assert_eq!(n, 10);
        let feats = m.encode_images(&prep, &NoopObserver).unwrap();
        assert_eq!(feats.size(), vec![10, 64]);
        let logits = prefill_image_prompt(&m, &prep, n).unwrap();
        assert_eq!(logits.size(), vec![1, 320]);
        assert!(bool::try_from(logits.isfinite().all()).unwrap());
        // A prompt with a wrong number of placeholders is rejected.
        assert!(prefill_image_prompt(&m, &prep, n - 1).is_err());
    }

    #[test]
    fn ocr2_image_prompt_runs_end_to_end() {
        let cfg = ArchConfig::tiny_ocr2();
        let m = DeepseekOcr::synthetic(&cfg, 4, Device::Cpu, Kind::Float).unwrap();
        let (prep, n) = tiny_crop_page(&m);
        // Queries: global 2·2 = 4, two tiles of 1, separator 1; no newlines.
        assert_eq!(n, 7);
        let feats = m.encode_images(&prep, &NoopObserver).unwrap();
        assert_eq!(feats.size(), vec![7, 64]);
        // The last row is the separator, the tiles come first.
        let sep = m.projector.as_ref().unwrap().view_seperator.shallow_clone();
        assert!(max_diff(&feats.get(6), &sep) == 0.0);
        let logits = prefill_image_prompt(&m, &prep, n).unwrap();
        assert_eq!(logits.size(), vec![1, 320]);
        assert!(bool::try_from(logits.isfinite().all()).unwrap());
    }

    #[test]
    fn real_dims_vision_path_on_a_small_view() {
        // Released dimensions (SAM-B, CLIP-L, projector) on a 64 px view: SAM grid 4 (one padded
        // 14x14 window; global rel-pos tables 127 → 7), CLIP grid 1x1, 1·2 + 1 = 3 vectors.
        let cfg = ArchConfig::deepseek_ocr();
        let w = Weights::synthetic(
            &cfg,
            &[Part::Sam, Part::Encoder, Part::Projector],
            1,
            Device::Cpu,
            Kind::Float,
        )
        .unwrap();
        let m = DeepseekOcr::load(w, &cfg).unwrap();
        let pc = PreprocessConfig {
            base_size: 64,
            image_size: 64,
            crop_mode: false,
            min_crops: 2,
            max_crops: 9,
        };
        let prep = preprocess::preprocess(
            &image::RgbImage::from_pixel(80, 50, image::Rgb([200, 100, 0])),
            &pc,
        )
        .unwrap();
        assert_eq!(
            prompt::image_token_count(m.config().token_layout(), &pc, prep.grid),
            3
        );
        let pixels = preprocess::normalise(&prep.global).unwrap();
        let sam = m.sam().unwrap().forward(&pixels).unwrap();
        assert_eq!(sam.size(), vec![1, 1024, 1, 1]);
        let feats = m.encode_images(&prep, &NoopObserver).unwrap();
        assert_eq!(feats.size(), vec![3, 1280]);
        assert!(bool::try_from(feats.isfinite().all()).unwrap());
    }
}
