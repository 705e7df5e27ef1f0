//! The vision pass of a batch of pages: every view through SAM, the encoder after it and the
//! projector, one call per group of equal-size views, replayed from CUDA graphs where they are
//! on and overlapped on two CUDA streams where those are, then each page's embeddings in the
//! order they replace its `<image>` ids.

use super::{preprocess, vision, DeepseekOcr, Encoder};
use crate::engine::graph_uploads;
use crate::engine::shape_graphs::GraphFn;
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
    /// page limit counts the request's pages (it was introduced against slower decode steps
    /// after graphed vision at large batches, gone since session 14 of
    /// reports/performance-history.md; what it bounds now is the memory the graphs keep).
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
        let use_graphs = graphs_allowed(self.vision_graph_max_pages, request_pages);
        let _v = obs.enter(VISION);
        // With `vision_graph_uploads`, page-locked uint8 views stay on the host until each call
        // gathers its pieces on the GPU, inside the replayed graph where there is one (one
        // lane's upload then overlaps the other lane's work); otherwise they are uploaded (or
        // normalised and uploaded) now.
        let on_host = self.graph_uploads && self.uint8_upload && self.device.is_cuda();
        let place = |t: &Tensor| -> Result<Tensor> {
            match on_host && crate::ffi::host_memory::is_pinned(t)? {
                true => Ok(t.shallow_clone()),
                false => preprocess::upload(t, self.device, self.uint8_upload),
            }
        };
        // Views in a fixed order: page 0 global, page 0 tiles, page 1 global, ...
        let mut views = Vec::new();
        let mut owner = Vec::new(); // (page, is_global)
        for (p, img) in imgs.iter().enumerate() {
            views.push(place(&img.global)?);
            owner.push((p, true));
            if let Some(t) = &img.tiles {
                views.push(place(t)?);
                owner.push((p, false));
            }
        }
        // One call per group of equal-size views (at most `max_views` each): SAM, the encoder
        // and the projector.
        let shapes: Vec<Vec<i64>> = views.iter().map(Tensor::size).collect();
        let grouping = vision::batch::Grouping::new(&shapes, max_views)?;
        let lanes = &self.vision_lanes;
        // With `model.optim.vision_streams` and graphs, the whole pass is one graph whose
        // capture runs every second call on a side stream, so calls overlap in its replays; its
        // stages then get no times of their own. Otherwise each stage is its own graph.
        let whole_pass = use_graphs && lanes.overlaps(grouping.len());
        let stage_graphs = use_graphs && !whole_pass;
        // One call, from its pieces of the views (gathered on the GPU inside SAM's stage).
        // The stages mark their modules on `obs`: the caller's observer when they run eagerly,
        // a capture's marks when they are captured.
        let chain = |pieces: &[Tensor], obs: &dyn RegionObserver| -> Result<Tensor> {
            let enter = |r| match whole_pass {
                true => obs.enter_overlapped(r),
                false => obs.enter(r),
            };
            let call = |stage, x: &[Tensor], f: &GraphFn<Tensor>| match stage_graphs {
                true => lanes.graphs().call(stage, x, obs, f),
                false => f(x, obs),
            };
            let features = {
                let _g = enter(SAM);
                call("sam", pieces, &|x, o| {
                    let x = graph_uploads::gather(x, self.device)?;
                    match sam.takes_uint8(&x) {
                        true => sam.forward_uint8(&x, self.kind, o),
                        false => sam.forward(&preprocess::model_input(&x, self.kind)?, o),
                    }
                })?
            };
            match encoder {
                Encoder::Clip(clip) => {
                    let clip_out = {
                        let _g = enter(CLIP);
                        call("clip", &[features.shallow_clone()], &|x, o| {
                            clip.forward(&x[0], o)
                        })?
                    };
                    let _g = enter(PROJECTOR);
                    call("projector", &[clip_out, features], &|x, o| {
                        proj.forward(&x[0], &x[1], o)
                    })
                }
                Encoder::Queries(enc) => {
                    let queries = {
                        let _g = enter(QUERY_ENCODER);
                        call("query_encoder", &[features], &|x, o| enc.forward(&x[0], o))?
                    };
                    let _g = enter(PROJECTOR);
                    call("projector", &[queries], &|x, o| {
                        proj.forward_queries(&x[0], o)
                    })
                }
            }
        };
        // Each call's inputs: its pieces of the views where they stay on the host (uploaded
        // inside the graphs), else its views concatenated on the GPU now. Host pieces go into
        // the graphs only when every page has the same views in distinct memory: the graphs'
        // keys (the inputs' shapes in order) then change with the calls' row counts only, as
        // for concatenated views, not with the order of a batch's tile grids.
        let host_pieces = views.iter().all(|v| v.device() == tch::Device::Cpu)
            && same_views(imgs)
            && graph_uploads::disjoint(&views);
        let inputs: Vec<Vec<Tensor>> = (0..grouping.len())
            .map(|i| {
                let pieces = grouping.pieces(i, &views)?;
                Ok(match host_pieces {
                    true => pieces,
                    false => vec![graph_uploads::gather(&pieces, self.device)?],
                })
            })
            .collect::<Result<_>>()?;
        let outputs = if whole_pass {
            let counts: Vec<i64> = inputs.iter().map(|c| c.len() as i64).collect();
            let flat: Vec<Tensor> = inputs.iter().flatten().map(Tensor::shallow_clone).collect();
            // Call i's inputs are flat[starts[i]..starts[i + 1]].
            let starts: Vec<usize> = std::iter::once(0)
                .chain(inputs.iter().scan(0, |end, c| {
                    *end += c.len();
                    Some(*end)
                }))
                .collect();
            lanes
                .graphs()
                .call_many_keyed("vision", &counts, &flat, obs, &|x, o| {
                    lanes.run(inputs.len(), &|i| chain(&x[starts[i]..starts[i + 1]], o))
                })?
        } else {
            inputs
                .iter()
                .map(|c| chain(c, obs))
                .collect::<Result<Vec<_>>>()?
        };
        let projected = grouping.split(&outputs)?;
        // The arrangement counts as the projector's when the stages are timed.
        let _projector = (!whole_pass).then(|| obs.enter(PROJECTOR));
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

/// Whether every page has the same views (global view and tiles, same shapes).
fn same_views(imgs: &[&PreparedImage]) -> bool {
    let shapes = |p: &PreparedImage| (p.global.size(), p.tiles.as_ref().map(Tensor::size));
    imgs.windows(2).all(|w| shapes(w[0]) == shapes(w[1]))
}

/// Whether a request of `pages` pages replays vision graphs under the page limit `max_pages`
/// (`model.optim.vision_cuda_graph_max_pages`; 0: no limit).
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
