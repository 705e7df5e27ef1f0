//! The vision pass of a batch of pages: every view through SAM, the encoder after it and the
//! projector, grouped by view size and replayed from CUDA graphs where they are on, then each
//! page's embeddings in the order they replace its `<image>` ids.

use super::{preprocess, vision, DeepseekOcr, Encoder};
use anyhow::{Context, Result};
use llmprof::model::deepseek_ocr::{CLIP, PROJECTOR, QUERY_ENCODER, SAM, VISION};
use llmprof::region::RegionObserver;
use preprocess::PreparedImage;
use tch::Tensor;

impl DeepseekOcr {
    /// Vision for several pages at once ([`vision::batch`]): every view of every page through
    /// SAM, CLIP and the projector in calls grouped by view size, then each page's embeddings
    /// arranged as [`DeepseekOcr::encode_images`] does. Same result per page as alone.
    pub fn encode_batch(
        &self,
        imgs: &[&PreparedImage],
        max_views: usize,
        obs: &dyn RegionObserver,
    ) -> Result<Vec<Tensor>> {
        self.encode_pages(imgs, max_views, imgs.len(), obs)
    }

    /// [`DeepseekOcr::encode_batch`] as part of a request of `request_pages` pages (more than
    /// `imgs` when the pages of a prefill go through vision one by one): the vision graphs'
    /// page limit applies to the request, since what it guards against (slower decode steps
    /// after graphed vision at large batches) depends on the batch, not on the call.
    pub(super) fn encode_pages(
        &self,
        imgs: &[&PreparedImage],
        max_views: usize,
        request_pages: usize,
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
        let use_graphs = graphs_allowed(self.vision_graph_max_pages, request_pages);
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
}

/// Views with one input each, as [`vision::batch::run_grouped`] takes them.
fn one_input(views: &[Tensor]) -> Vec<Vec<&Tensor>> {
    views.iter().map(|t| vec![t]).collect()
}

/// Whether a request of `pages` pages replays vision graphs under the page limit `max_pages`
/// (`runtime.optim.vision_cuda_graph_max_pages`; 0: no limit).
fn graphs_allowed(max_pages: usize, pages: usize) -> bool {
    max_pages == 0 || pages <= max_pages
}

#[cfg(test)]
mod tests {
    use super::graphs_allowed;

    #[test]
    fn the_page_limit_counts_pages_of_the_request() {
        assert!(graphs_allowed(0, 1) && graphs_allowed(0, 32));
        assert!(graphs_allowed(8, 1) && graphs_allowed(8, 8));
        assert!(!graphs_allowed(8, 9) && !graphs_allowed(8, 32));
    }
}
