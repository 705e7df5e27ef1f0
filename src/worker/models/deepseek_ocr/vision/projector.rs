//! Fusion + linear projector and the image-embedding arrangement (docs/deepseek-ocr.md §3.3, §3.6,
//! §10): DeepSeek-OCR: [CLIP(no CLS) | SAM] → Linear → tokens; local mosaic (+newlines), global
//! grid (+newlines), then the view separator. DeepSeek-OCR-2: query outputs → Linear; tiles one
//! after another, the global view, then the separator, no newlines.

use crate::checkpoint::tensors::WeightPath;
use crate::models::layers::basic::Linear;
use anyhow::{ensure, Result};
use llmprof::model::deepseek_ocr::arch::ProjectorConfig;
use llmprof::model::deepseek_ocr::vision_modules::PROJECTION;
use llmprof::model::deepseek_ocr::TokenLayout;
use llmprof::region::RegionObserver;
use tch::Tensor;

#[derive(Debug)]
pub struct Projector {
    linear: Linear,
    /// `model.image_newline` [n_embed]; DeepSeek-OCR-2 has none (flat layout).
    pub image_newline: Option<Tensor>,
    /// `model.view_seperator` [n_embed] (checkpoint spelling).
    pub view_seperator: Tensor,
}

impl Projector {
    /// `vs` points at `model`; `layout` says whether there is an `image_newline`.
    pub fn load(vs: &WeightPath, cfg: &ProjectorConfig, layout: TokenLayout) -> Result<Self> {
        let image_newline = match layout {
            TokenLayout::RowsWithNewlines => Some(vs.get("image_newline")?),
            TokenLayout::Queries => None,
        };
        let p = Projector {
            linear: Linear::load(&vs.sub("projector").sub("layers"), true)?,
            image_newline,
            view_seperator: vs.get("view_seperator")?,
        };
        if let Some(nl) = &p.image_newline {
            ensure!(
                nl.size1()? == cfg.n_embed,
                "image_newline width != n_embed {}",
                cfg.n_embed
            );
        }
        Ok(p)
    }

    /// DeepSeek-OCR-2: query outputs [B, N, C] → [B, N, n_embed].
    pub fn forward_queries(&self, queries: &Tensor, obs: &dyn RegionObserver) -> Result<Tensor> {
        let _p = obs.enter_module(PROJECTION, None);
        self.linear.forward(queries)
    }

    /// clip_out [B,T+1,Cc], sam [B,Cs,h,w] → [B, h·w, n_embed].
    pub fn forward(
        &self,
        clip_out: &Tensor,
        sam: &Tensor,
        obs: &dyn RegionObserver,
    ) -> Result<Tensor> {
        let _p = obs.enter_module(PROJECTION, None);
        let (_, t1, _) = clip_out.size3()?;
        let sam_tokens = sam.f_flatten(2, 3)?.f_transpose(1, 2)?; // (b, h·w, cs)
        let clip_tokens = clip_out.f_narrow(1, 1, t1 - 1)?; // (b, h·w, cc)
        let fused = Tensor::f_cat(&[clip_tokens, sam_tokens], -1)?; // (b, h·w, cc+cs), CLIP first
        self.linear.forward(&fused)
    }

    /// Arranges projected views into the embedding sequence that replaces the `<image>` ids.
    /// `global` [1, h·w, C]; `local` optional ([nh·nw, h2·w2, C], tile rows nh, tile cols nw) with
    /// tiles numbered row-major. Returns [(nh·h2)(nw·w2+1) + h(w+1) + 1, C].
    /// DeepSeek-OCR-2 (no newline): the tiles' rows one tile after another in tile order, the
    /// global view's rows, the separator.
    pub fn arrange(&self, global: &Tensor, local: Option<(&Tensor, i64, i64)>) -> Result<Tensor> {
        let Some(newline) = &self.image_newline else {
            let (_, _, c) = global.size3()?;
            let mut parts = Vec::new();
            if let Some((tiles, nh, nw)) = local {
                let n = tiles.size3()?.0;
                ensure!(n == nh * nw, "{n} tiles for a {nh}x{nw} grid");
                parts.push(tiles.f_reshape([-1, c])?);
            }
            parts.push(global.f_reshape([-1, c])?);
            parts.push(self.view_seperator.f_view([1, c])?);
            return Ok(Tensor::f_cat(&parts, 0)?);
        };
        let (_, hw, c) = global.size3()?;
        let h = (hw as f64).sqrt().round() as i64;
        ensure!(h * h == hw, "global view has {hw} tokens, not a square");
        let mut parts = Vec::new();
        if let Some((tiles, nh, nw)) = local {
            let (n, hw2, _) = tiles.size3()?;
            ensure!(n == nh * nw, "{n} tiles for a {nh}x{nw} grid");
            let h2 = (hw2 as f64).sqrt().round() as i64;
            ensure!(h2 * h2 == hw2, "tile has {hw2} tokens, not a square");
            let m = tiles
                .f_view([nh, nw, h2, h2, c])?
                .f_permute([0, 2, 1, 3, 4])?
                .f_reshape([nh * h2, nw * h2, c])?; // (nh·h2, nw·w2, c)
            let nl = newline
                .f_view([1, 1, c])?
                .f_expand([nh * h2, 1, c], false)?;
            parts.push(Tensor::f_cat(&[m, nl], 1)?.f_reshape([-1, c])?); // ((nh·h2)(nw·w2+1), c)
        }
        let g = global.f_view([h, h, c])?;
        let nl = newline.f_view([1, 1, c])?.f_expand([h, 1, c], false)?;
        parts.push(Tensor::f_cat(&[g, nl], 1)?.f_reshape([-1, c])?); // (h(w+1), c)
        parts.push(self.view_seperator.f_view([1, c])?);
        Ok(Tensor::f_cat(&parts, 0)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::{Device, Kind};

    fn proj(c: i64) -> Projector {
        Projector {
            linear: Linear {
                weight: Tensor::zeros([c, 2 * c], (Kind::Float, Device::Cpu)),
                bias: None,
            },
            image_newline: Some(Tensor::full([c], -1.0, (Kind::Float, Device::Cpu))),
            view_seperator: Tensor::full([c], -2.0, (Kind::Float, Device::Cpu)),
        }
    }

    #[test]
    fn arrangement_local_first_then_global_then_separator() {
        let p = proj(1);
        // global 2x2 tokens valued 100..103; 2 tiles (1 row, 2 cols) of 1x1 tokens: 10, 11.
        let global = Tensor::from_slice(&[100f32, 101., 102., 103.]).view([1, 4, 1]);
        let tiles = Tensor::from_slice(&[10f32, 11.]).view([2, 1, 1]);
        let out = p.arrange(&global, Some((&tiles, 1, 2))).unwrap().view([-1]);
        let v = Vec::<f32>::try_from(&out).unwrap();
        assert_eq!(
            v,
            vec![10., 11., -1., 100., 101., -1., 102., 103., -1., -2.]
        );
    }

    #[test]
    fn mosaic_is_row_major_over_tiles() {
        let p = proj(1);
        // 2 tile-rows x 1 tile-col, each tile 2x2 tokens: tile0 = 0..4, tile1 = 4..8.
        let tiles = Tensor::arange(8, (Kind::Float, Device::Cpu)).view([2, 4, 1]);
        let global = Tensor::zeros([1, 1, 1], (Kind::Float, Device::Cpu));
        let out = p.arrange(&global, Some((&tiles, 2, 1))).unwrap().view([-1]);
        let v = Vec::<f32>::try_from(&out).unwrap();
        assert_eq!(
            v,
            vec![0., 1., -1., 2., 3., -1., 4., 5., -1., 6., 7., -1., 0., -1., -2.]
        );
        // Two tiles side by side (1 row, 2 cols) interleave their rows.
        let out = p.arrange(&global, Some((&tiles, 1, 2))).unwrap().view([-1]);
        let v = Vec::<f32>::try_from(&out).unwrap();
        assert_eq!(
            v,
            vec![0., 1., 4., 5., -1., 2., 3., 6., 7., -1., 0., -1., -2.]
        );
    }

    #[test]
    fn flat_layout_is_tiles_in_order_then_global_then_separator() {
        let mut p = proj(1);
        p.image_newline = None;
        // 3 tiles (3 rows × 1 col) of 2 queries each: 0..6; global of 4 queries: 100..103.
        let tiles = Tensor::arange(6, (Kind::Float, Device::Cpu)).view([3, 2, 1]);
        let global = Tensor::from_slice(&[100f32, 101., 102., 103.]).view([1, 4, 1]);
        let out = p.arrange(&global, Some((&tiles, 3, 1))).unwrap().view([-1]);
        let v = Vec::<f32>::try_from(&out).unwrap();
        assert_eq!(v, vec![0., 1., 2., 3., 4., 5., 100., 101., 102., 103., -2.]);
        let alone = p.arrange(&global, None).unwrap().view([-1]);
        assert_eq!(
            Vec::<f32>::try_from(&alone).unwrap(),
            vec![100., 101., 102., 103., -2.]
        );
        assert!(p.arrange(&global, Some((&tiles, 2, 1))).is_err());
    }
}
