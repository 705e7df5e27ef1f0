//! SAM ViT-B image encoder with windowed/global attention, decomposed relative-position bias,
//! neck and the 16x stride-2 compressor (docs/deepseek-ocr.md §3.1): pixels [B,3,S,S] → [B,1024,S/64,S/64].

use super::linear_act::LinearAct;
use super::sam_attention::{AttnOut, SamAttention, SamOptim};
use super::sam_attention_cuda::KeyBuffers;
use crate::checkpoint::tensors::WeightPath;
use crate::engine::size_cache::SizeCache;
use crate::ffi::kernels_gemm::Activation;
use crate::ffi::kernels_vision;
use crate::models::layers::basic::{LayerNorm, Linear};
use crate::models::layers::pre_norm::{add_into_next, run_blocks};
use anyhow::{ensure, Result};
use llmprof::model::deepseek_ocr::arch::SamConfig;
use llmprof::model::deepseek_ocr::vision_modules::{
    BLOCK, BLOCK_ATTENTION, BLOCK_FFN, NECK, PATCH_EMBED,
};
use llmprof::region::RegionObserver;
use tch::{Kind, Tensor};

/// Pre-norm ViT block; `window == 0` means global attention.
#[derive(Debug)]
pub struct SamBlock {
    norm1: LayerNorm,
    attn: SamAttention,
    norm2: LayerNorm,
    /// The MLP's first Linear and GELU, in one Hopper GEMM where [`SamOptim::gelu_epilogue`]
    /// asks for it and the weights allow it.
    lin1: LinearAct,
    lin2: Linear,
    window: i64,
}

impl SamBlock {
    pub fn load(vs: &WeightPath, cfg: &SamConfig, window: i64, optim: SamOptim) -> Result<Self> {
        let norm = |name| -> Result<LayerNorm> {
            Ok(LayerNorm::load(&vs.sub(name), cfg.layer_norm_eps)?
                .with_add_kernel(optim.add_layer_norm_kernel))
        };
        let lin1 = LinearAct::load(
            &vs.sub("mlp").sub("lin1"),
            Activation::Gelu,
            optim.gelu_epilogue,
        )?;
        Ok(SamBlock {
            norm1: norm("norm1")?,
            // The windowed kernel's biases only where the block has windows.
            attn: SamAttention::load(
                &vs.sub("attn"),
                cfg,
                SamOptim {
                    window_fmha: optim.window_fmha && window > 0,
                    ..optim
                },
            )?,
            norm2: norm("norm2")?,
            lin1,
            lin2: Linear::load(&vs.sub("mlp").sub("lin2"), true)?,
            window,
        })
    }

    /// The block on `x` [B,H,W,C] given `normed` = norm1(`x`) → (output, `next`(output)): the
    /// MLP's residual add and the next block's norm1 run as one step ([`LayerNorm::add_forward`]),
    /// as do the attention's residual add and norm2. `keys`: the pass's k′ buffers.
    pub fn forward(
        &self,
        x: &Tensor,
        normed: &Tensor,
        next: Option<&LayerNorm>,
        keys: &KeyBuffers,
        obs: &dyn RegionObserver,
    ) -> Result<(Tensor, Option<Tensor>)> {
        // Padded after norm1; padded zero tokens are not masked (docs/deepseek-ocr.md §3.1).
        let (x, n2) = {
            let _a = obs.enter_module(BLOCK_ATTENTION, None);
            match self
                .attn
                .forward_block_out(normed, self.window, Some(keys))?
            {
                AttnOut::Windows { y, win, .. } if self.norm2.add_kernel_takes(x, &y)? => {
                    self.norm2.add_windows_forward(x, &y, win)?
                }
                out => self.norm2.add_forward(x, &out.into_grid()?)?,
            }
        };
        let _f = obs.enter_module(BLOCK_FFN, None);
        let m = self.lin2.forward(&self.mlp_hidden(&n2)?)?;
        add_into_next(&x, &m, next)
    }

    /// GELU(lin1(`x`)), the erf-form GELU: in one Hopper GEMM where it runs and takes these
    /// tensors, else the Linear and a GELU pass.
    fn mlp_hidden(&self, x: &Tensor) -> Result<Tensor> {
        self.lin1.forward(x, |h| Ok(h.f_gelu("none")?))
    }
}

/// LayerNorm over channels of an NCHW map (LayerNorm2d).
fn layer_norm_2d(x: &Tensor, ln: &LayerNorm) -> Result<Tensor> {
    let y = ln.forward(&x.f_permute([0, 2, 3, 1])?)?; // (b, h, w, c)
    Ok(y.f_permute([0, 3, 1, 2])?) // (b, c, h, w)
}

/// Pixels [B,C,S,S] → patches [B, g, g, C·p·p] (g = S/p) in the patch-embedding convolution
/// weight's (channel, row, column) order.
fn cut_patches(pixels: &Tensor, p: i64) -> Result<Tensor> {
    let (b, c, s, _) = pixels.size4()?;
    let g = s / p;
    Ok(pixels
        .f_view([b, c, g, p, g, p])?
        .f_permute([0, 2, 4, 1, 3, 5])? // (b, gy, gx, c, ky, kx)
        .f_reshape([b, g, g, c * p * p])?)
}

/// Resizes a [1,G,G,C] position grid to [1,g,g,C]: bicubic, antialias, fp32, align_corners=false.
pub fn resize_pos_grid(pos: &Tensor, g: i64) -> Result<Tensor> {
    let (_, gh, gw, _) = pos.size4()?;
    if gh == g && gw == g {
        return Ok(pos.shallow_clone());
    }
    let kind = pos.kind();
    let p = pos.f_to_kind(Kind::Float)?.f_permute([0, 3, 1, 2])?; // (1, c, G, G)
    let p = p.f_internal_upsample_bicubic2d_aa([g, g], false, None, None)?; // (1, c, g, g)
    Ok(p.f_permute([0, 2, 3, 1])?.f_to_kind(kind)?) // (1, g, g, c)
}

/// The whole SAM encoder.
#[derive(Debug)]
pub struct Sam {
    patch_w: Tensor,
    patch_b: Tensor,
    pos_embed: Tensor,
    blocks: Vec<SamBlock>,
    neck0: Tensor,
    neck1: LayerNorm,
    neck2: Tensor,
    neck3: LayerNorm,
    downsample: Vec<Tensor>,
    patch: i64,
    patch_gemm: bool,
    /// uint8 pixels on a GPU become the patch GEMM's operand in one llmprof kernel
    /// (`sam_patch_gemm` and `sam_cuda_kernels`, which acts with `sam_fused_rel_pos`: where
    /// model load checks that the build has the kernels).
    patch_kernel: bool,
    /// `pos_embed` resized per grid side, built on first use.
    pos_by_side: SizeCache,
}

impl Sam {
    /// `vs` points at `model.sam_model`.
    pub fn load(vs: &WeightPath, cfg: &SamConfig, optim: SamOptim) -> Result<Self> {
        let blocks = (0..cfg.depth)
            .map(|i| {
                let window = if cfg.global_attn_indexes.contains(&i) {
                    0
                } else {
                    cfg.window_size
                };
                SamBlock::load(&vs.sub("blocks").sub(i), cfg, window, optim)
            })
            .collect::<Result<Vec<_>>>()?;
        let neck = vs.sub("neck");
        Ok(Sam {
            patch_w: vs.get("patch_embed.proj.weight")?,
            patch_b: vs.get("patch_embed.proj.bias")?,
            pos_embed: vs.get("pos_embed")?,
            blocks,
            neck0: neck.get("0.weight")?,
            neck1: LayerNorm::load(&neck.sub(1), cfg.layer_norm_eps)?,
            neck2: neck.get("2.weight")?,
            neck3: LayerNorm::load(&neck.sub(3), cfg.layer_norm_eps)?,
            downsample: (0..cfg.downsample_channels.len())
                .map(|k| vs.get(&format!("net_{}.weight", k + 2)))
                .collect::<Result<Vec<_>>>()?,
            patch: cfg.patch_size,
            patch_gemm: optim.patch_gemm,
            patch_kernel: optim.patch_gemm && optim.cuda_kernels && optim.fused_rel_pos,
            pos_by_side: SizeCache::default(),
        })
    }

    /// The patch embedding (a p×p convolution with stride p) as one GEMM: pixels [B,3,S,S] →
    /// patches [B, g, g, 3·p·p] in the weight's (channel, row, column) order → [B, g, g, width],
    /// contiguous.
    fn patch_embed_gemm(&self, pixels: &Tensor) -> Result<Tensor> {
        self.embed_patches(&cut_patches(pixels, self.patch)?)
    }

    /// Patches [B, g, g, 3·p·p] → [B, g, g, width].
    fn embed_patches(&self, patches: &Tensor) -> Result<Tensor> {
        let width = self.patch_w.size()[0];
        let w = self.patch_w.f_reshape([width, -1])?;
        Ok(patches.f_linear(&w, Some(&self.patch_b))?)
    }

    /// Whether [`Sam::forward_uint8`] takes `pixels`: uint8 on a CUDA device, with the patch
    /// GEMM and SAM's kernels on.
    pub fn takes_uint8(&self, pixels: &Tensor) -> bool {
        self.patch_kernel && pixels.kind() == Kind::Uint8 && pixels.device().is_cuda()
    }

    /// [`Sam::forward`] on uint8 `pixels` [B,3,S,S] ([`Sam::takes_uint8`]) with weights in
    /// `kind`: one kernel normalises them into the patch GEMM's operand, with the values
    /// normalising in fp32, casting to `kind` and cutting patches would give.
    pub fn forward_uint8(
        &self,
        pixels: &Tensor,
        kind: Kind,
        obs: &dyn RegionObserver,
    ) -> Result<Tensor> {
        let s = self.checked_side(pixels)?;
        let x = {
            let _p = obs.enter_module(PATCH_EMBED, None);
            let patches = kernels_vision::sam_patches(pixels, self.patch, kind)?;
            self.embed_patches(&patches)?
        };
        self.trunk(x, s / self.patch, obs)
    }

    /// The side S of pixels [B,3,S,S] that SAM takes (a multiple of its total stride).
    fn checked_side(&self, pixels: &Tensor) -> Result<i64> {
        let (_, c, s, s2) = pixels.size4()?;
        ensure!(
            c == 3 && s == s2,
            "SAM expects [B,3,S,S], got {:?}",
            pixels.size()
        );
        ensure!(
            s % (self.patch << self.downsample.len()) == 0,
            "SAM view side {s} not a multiple of {}",
            self.patch << self.downsample.len()
        );
        Ok(s)
    }

    /// Whether the MLPs run the fused Linear + GELU GEMM
    /// (`model.optim.sam_gelu_epilogue` on, bf16 weights on a device that has it).
    pub fn gelu_epilogue(&self) -> bool {
        self.blocks.iter().any(|b| b.lin1.fused())
    }

    /// pixels [B,3,S,S] (S a multiple of 64) → [B, C_out, S/64, S/64].
    pub fn forward(&self, pixels: &Tensor, obs: &dyn RegionObserver) -> Result<Tensor> {
        let s = self.checked_side(pixels)?;
        let p = self.patch;
        let patch_embed = obs.enter_module(PATCH_EMBED, None);
        let x = if self.patch_gemm {
            self.patch_embed_gemm(pixels)?
        } else {
            let x = pixels.f_conv2d(
                &self.patch_w,
                Some(&self.patch_b),
                [p, p],
                [0, 0],
                [1, 1],
                1,
            )?; // (b, w, g, g)
                // One contiguous [b, g, g, w] grid for the whole trunk: were it left as a permuted
                // view of the convolution's output, every residual add and LayerNorm input would be
                // a strided copy, and the neck's convolutions would see NCHW, not channels-last.
            x.f_permute([0, 2, 3, 1])?.f_contiguous()? // (b, g, g, w)
        };
        drop(patch_embed);
        self.trunk(x, s / p, obs)
    }

    /// The patch embeddings [B, g, g, width] → [B, C_out, g/4, g/4]: positions, blocks, neck and
    /// compressor.
    fn trunk(&self, x: Tensor, g: i64, obs: &dyn RegionObserver) -> Result<Tensor> {
        let x = {
            let _p = obs.enter_module(PATCH_EMBED, None);
            let pos = self
                .pos_by_side
                .get_or_build(g, || resize_pos_grid(&self.pos_embed, g))?;
            x.f_add(&pos)?
        };
        let keys = KeyBuffers::default();
        let x = run_blocks(
            &self.blocks,
            x,
            (BLOCK, BLOCK_ATTENTION),
            obs,
            |b| &b.norm1,
            |b, x, n, next| b.forward(x, n, next, &keys, obs),
        )?;
        drop(keys); // not held through the neck
        let _neck = obs.enter_module(NECK, None);
        let x = x.f_permute([0, 3, 1, 2])?; // (b, w, g, g)
        let x = x.f_conv2d::<Tensor>(&self.neck0, None, [1, 1], [0, 0], [1, 1], 1)?;
        let x = layer_norm_2d(&x, &self.neck1)?;
        let x = x.f_conv2d::<Tensor>(&self.neck2, None, [1, 1], [1, 1], [1, 1], 1)?;
        let mut x = layer_norm_2d(&x, &self.neck3)?; // (b, out_chans, g, g)
        for w in &self.downsample {
            x = x.f_conv2d::<Tensor>(w, None, [2, 2], [1, 1], [1, 1], 1)?; // stride 2, pad 1
        }
        Ok(x) // (b, c_out, s/64, s/64)
    }
}

#[cfg(test)]
mod tests {
    use super::cut_patches;
    use crate::ffi::kernels_vision::sam_patches;
    use crate::models::deepseek_ocr::preprocess::model_input;
    use crate::test_util::values_differing;
    use tch::{Device, Kind, Tensor};

    /// The patch kernel against libtorch's normalisation, cast and patch copy (what
    /// `Sam::forward` runs on uploaded pixels), bit for bit: channels-last and contiguous
    /// uint8 views, SAM's 16-pixel patches at both view sizes (16-byte stores) and 6-pixel
    /// patches (single elements), bf16 and fp32; every byte value occurs.
    #[test]
    #[ignore = "needs a CUDA GPU and a build with llmprof's kernels: cargo test -- --ignored on the GPU machine"]
    fn patch_kernel_equals_libtorch_on_a_gpu() {
        assert!(tch::Cuda::is_available(), "no CUDA device");
        let dev = Device::Cuda(0);
        for kind in [Kind::BFloat16, Kind::Float] {
            for (b, side, p) in [(2i64, 1024i64, 16i64), (3, 640, 16), (2, 96, 6)] {
                let hwc = Tensor::randint(256, [b, side, side, 3], (Kind::Uint8, dev));
                // Every byte value in the first pixel row (side ≥ 86: 258 values).
                hwc.get(0)
                    .get(0)
                    .narrow(0, 0, 86)
                    .view([-1])
                    .narrow(0, 0, 256)
                    .copy_(&Tensor::arange(256, (Kind::Int64, dev)).to_kind(Kind::Uint8));
                for px in [
                    hwc.permute([0, 3, 1, 2]),
                    hwc.permute([0, 3, 1, 2]).contiguous(),
                ] {
                    let want = cut_patches(&model_input(&px, kind).unwrap(), p).unwrap();
                    let got = sam_patches(&px, p, kind).unwrap();
                    assert_eq!(got.kind(), kind);
                    assert_eq!(got.size(), [b, side / p, side / p, 3 * p * p]);
                    let differ = values_differing(&got, &want);
                    assert_eq!(differ, 0, "{kind:?} {b}x{side} patch {p}: {differ} differ");
                }
            }
        }
        // Not [B,3,S,S] with S a multiple of the patch: refused.
        let px = Tensor::zeros([1, 3, 40, 40], (Kind::Uint8, dev));
        assert!(sam_patches(&px, 16, Kind::BFloat16).is_err());
        assert!(sam_patches(&px.to_kind(Kind::Float), 8, Kind::BFloat16).is_err());
    }
}
