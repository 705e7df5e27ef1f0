//! CLIP-L transformer run on SAM features instead of pixels (docs/deepseek-ocr.md §3.2):
//! SAM map [B,C,h,w] → [B, h·w+1, C] (CLS first, no post-LayerNorm).

use super::linear_act::LinearAct;
use crate::checkpoint::tensors::WeightPath;
use crate::engine::size_cache::SizeCache;
use crate::ffi::kernels_gemm::Activation;
use crate::models::layers::basic::{LayerNorm, Linear};
use crate::models::layers::pre_norm::{add_into_next, run_blocks};
use anyhow::{ensure, Result};
use llmprof::model::deepseek_ocr::arch::ClipConfig;
use llmprof::model::deepseek_ocr::vision_modules::{
    BLOCK, BLOCK_ATTENTION, BLOCK_FFN, PATCH_EMBED,
};
use llmprof::region::RegionObserver;
use tch::{Kind, Tensor};

/// Pre-LN encoder layer: MHA + quickGELU MLP.
#[derive(Debug)]
pub struct ClipLayer {
    ln1: LayerNorm,
    qkv: Linear,
    out: Linear,
    ln2: LayerNorm,
    /// fc1 and its quickGELU, in one Hopper GEMM where `model.optim.clip_gelu_epilogue` asks
    /// for it and the weights allow it.
    fc1: LinearAct,
    fc2: Linear,
    heads: i64,
    /// quickGELU in llmprof's one kernel on a GPU (`model.optim.quick_gelu_kernel`).
    quick_gelu_kernel: bool,
}

/// How CLIP is computed (the `runtime.optim` switches that reach it).
#[derive(Debug, Clone, Copy, Default)]
pub struct ClipOptim {
    /// Residual adds and the LayerNorms after them in llmprof's kernel
    /// (`model.optim.add_layer_norm_kernel`).
    pub add_layer_norm_kernel: bool,
    /// quickGELU in llmprof's kernel (`model.optim.quick_gelu_kernel`).
    pub quick_gelu_kernel: bool,
    /// fc1 and its quickGELU in one Hopper GEMM (`model.optim.clip_gelu_epilogue`).
    pub gelu_epilogue: bool,
}

/// quickGELU, x·sigmoid(1.702·x): llmprof's one kernel on a GPU when `kernel`, else three
/// libtorch ops (the same roundings).
pub fn quick_gelu(h: &Tensor, kernel: bool) -> Result<Tensor> {
    if kernel && h.device().is_cuda() {
        return Ok(crate::ffi::kernels_vision::quick_gelu(&h.f_contiguous()?)?);
    }
    Ok(h.f_mul(&h.f_mul_scalar(1.702)?.f_sigmoid()?)?)
}

impl ClipLayer {
    pub fn load(vs: &WeightPath, cfg: &ClipConfig, optim: ClipOptim) -> Result<Self> {
        let norm = |name| -> Result<LayerNorm> {
            Ok(LayerNorm::load(&vs.sub(name), cfg.layer_norm_eps)?
                .with_add_kernel(optim.add_layer_norm_kernel))
        };
        let fc1 = LinearAct::load(
            &vs.sub("mlp").sub("fc1"),
            Activation::QuickGelu,
            optim.gelu_epilogue,
        )?;
        Ok(ClipLayer {
            ln1: norm("layer_norm1")?,
            qkv: Linear::load(&vs.sub("self_attn").sub("qkv_proj"), true)?,
            out: Linear::load(&vs.sub("self_attn").sub("out_proj"), true)?,
            ln2: norm("layer_norm2")?,
            fc1,
            fc2: Linear::load(&vs.sub("mlp").sub("fc2"), true)?,
            heads: cfg.heads,
            quick_gelu_kernel: optim.quick_gelu_kernel,
        })
    }

    /// The layer on `x` [B,T,C] given `normed` = ln1(`x`) → (output, `next`(output)): each
    /// residual add and the LayerNorm after it run as one step ([`LayerNorm::add_forward`]).
    pub fn forward(
        &self,
        x: &Tensor,
        normed: &Tensor,
        next: Option<&LayerNorm>,
        obs: &dyn RegionObserver,
    ) -> Result<(Tensor, Option<Tensor>)> {
        let attn = obs.enter_module(BLOCK_ATTENTION, None);
        let (b, t, c) = x.size3()?;
        let nh = self.heads;
        let hd = c / nh;
        let qkv = self.qkv.forward(normed)?; // (b, t, 3c), layout [3][nh][hd]
        let qkv = qkv.f_view([b, t, 3, nh, hd])?.f_permute([2, 0, 3, 1, 4])?; // (3, b, nh, t, hd)
        let (q, k, v) = (qkv.f_get(0)?, qkv.f_get(1)?, qkv.f_get(2)?);
        let o = Tensor::f_scaled_dot_product_attention::<Tensor>(
            &q, &k, &v, None, 0.0, false, None, false,
        )?; // (b, nh, t, hd)
        let o = o.f_transpose(1, 2)?.f_reshape([b, t, c])?; // (b, t, c)
        let (x, n2) = self.ln2.add_forward(x, &self.out.forward(&o)?)?;
        drop(attn);
        let _f = obs.enter_module(BLOCK_FFN, None);
        add_into_next(&x, &self.fc2.forward(&self.mlp_hidden(&n2)?)?, next)
    }

    /// quickGELU(fc1(`x`)): in one Hopper GEMM where it runs and takes these tensors, else the
    /// Linear and a quickGELU pass.
    fn mlp_hidden(&self, x: &Tensor) -> Result<Tensor> {
        self.fc1
            .forward(x, |h| quick_gelu(&h, self.quick_gelu_kernel))
    }
}

/// CLIP-L vision transformer.
#[derive(Debug)]
pub struct Clip {
    class_embedding: Tensor,
    position_embedding: Tensor,
    pre_ln: LayerNorm,
    layers: Vec<ClipLayer>,
    /// `position_embedding` resized per grid side, built on first use.
    pos_by_side: SizeCache,
}

/// Position table [1+G², C] (CLS first) resized to [1+g², C]: grid part bicubic with antialias in
/// fp32, CLS row kept.
pub fn resize_clip_positions(pos: &Tensor, g: i64) -> Result<Tensor> {
    let (n, c) = pos.size2()?;
    let src = ((n - 1) as f64).sqrt().round() as i64;
    if src == g {
        return Ok(pos.shallow_clone());
    }
    let kind = pos.kind();
    let cls = pos.f_narrow(0, 0, 1)?;
    let grid = pos
        .f_narrow(0, 1, n - 1)?
        .f_view([1, src, src, c])?
        .f_permute([0, 3, 1, 2])?; // (1, c, G, G)
    let grid = grid
        .f_to_kind(Kind::Float)?
        .f_internal_upsample_bicubic2d_aa([g, g], false, None, None)?; // (1, c, g, g)
    let grid = grid
        .f_to_kind(kind)?
        .f_permute([0, 2, 3, 1])?
        .f_reshape([g * g, c])?; // (g², c)
    Ok(Tensor::f_cat(&[cls, grid], 0)?)
}

impl Clip {
    /// `vs` points at `model.vision_model`. The unused `embeddings.patch_embedding` is not kept.
    pub fn load(vs: &WeightPath, cfg: &ClipConfig, optim: ClipOptim) -> Result<Self> {
        let layers = (0..cfg.layers)
            .map(|i| {
                let layer = vs.sub("transformer").sub("layers").sub(i);
                ClipLayer::load(&layer, cfg, optim)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Clip {
            class_embedding: vs.get("embeddings.class_embedding")?,
            position_embedding: vs.get("embeddings.position_embedding.weight")?,
            pre_ln: LayerNorm::load(&vs.sub("pre_layrnorm"), cfg.layer_norm_eps)?,
            layers,
            pos_by_side: SizeCache::default(),
        })
    }

    /// Whether the MLPs' first Linear and quickGELU run as one Hopper GEMM
    /// (`model.optim.clip_gelu_epilogue` on, bf16 weights on a device that has it).
    pub fn gelu_epilogue(&self) -> bool {
        self.layers.iter().any(|l| l.fc1.fused())
    }

    /// SAM features [B,C,h,w] (h = w) → [B, h·w+1, C].
    pub fn forward(&self, sam_features: &Tensor, obs: &dyn RegionObserver) -> Result<Tensor> {
        let embed = obs.enter_module(PATCH_EMBED, None);
        let (b, c, h, w) = sam_features.size4()?;
        ensure!(h == w, "CLIP expects a square SAM map, got {h}x{w}");
        ensure!(
            c == self.class_embedding.size1()?,
            "CLIP width {} != SAM channels {c}",
            self.class_embedding.size1()?
        );
        let patches = sam_features.f_flatten(2, 3)?.f_transpose(1, 2)?; // (b, h·w, c)
        let cls = self
            .class_embedding
            .f_view([1, 1, c])?
            .f_expand([b, 1, c], false)?;
        let x = Tensor::f_cat(&[cls, patches], 1)?; // (b, 1+h·w, c)
        let pos = self
            .pos_by_side
            .get_or_build(h, || resize_clip_positions(&self.position_embedding, h))?
            .f_unsqueeze(0)?; // (1, 1+h·w, c)
        let x = self.pre_ln.forward(&x.f_add(&pos)?)?;
        drop(embed);
        run_blocks(
            &self.layers,
            x,
            (BLOCK, BLOCK_ATTENTION),
            obs,
            |l| &l.ln1,
            |l, x, n, next| l.forward(x, n, next, obs),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::quick_gelu;
    use crate::test_util::values_differing;
    use tch::{Device, Kind, Tensor};

    /// Off a GPU the switch changes nothing: the three libtorch ops run.
    #[test]
    fn quick_gelu_off_a_gpu_is_the_three_ops() {
        let h = Tensor::randn([3, 4096], (Kind::Float, Device::Cpu)) * 3.0;
        let want = &h * (&h * 1.702).sigmoid();
        assert!(quick_gelu(&h, true).unwrap().equal(&want));
        assert!(quick_gelu(&h, false).unwrap().equal(&want));
    }

    /// The quickGELU kernel against libtorch's multiply, sigmoid and multiply, bit for bit, in
    /// fp32 and bf16, over CLIP's MLP width (16-byte vectors) and an odd width (single
    /// elements), large |x| included, where the sigmoid saturates.
    #[test]
    #[ignore = "needs a CUDA GPU and a build with llmprof's kernels: cargo test -- --ignored on the GPU machine"]
    fn quick_gelu_kernel_equals_libtorch_on_a_gpu() {
        assert!(tch::Cuda::is_available(), "no CUDA device");
        let dev = Device::Cuda(0);
        for kind in [Kind::Float, Kind::BFloat16] {
            for (rows, width) in [(1i64, 4096i64), (257, 4096), (1000, 4096), (3, 1001)] {
                let h = Tensor::randn([rows, width], (kind, dev)) * 6.0;
                let got = quick_gelu(&h, true).unwrap();
                let want = quick_gelu(&h, false).unwrap();
                let differ = values_differing(&got, &want);
                assert_eq!(
                    differ, 0,
                    "{kind:?}, {rows}x{width}: {differ} values differ"
                );
            }
        }
    }

    /// CLIP's fc1 with quickGELU in the Hopper GEMM's epilogue against cuBLAS's Linear and the
    /// quickGELU kernel, at the rows of batch-1 and batch-8 calls (global views, crops): no less
    /// accurate against fp32 (one rounding instead of two), and the time of each.
    #[test]
    #[ignore = "needs a CUDA GPU and a build with llmprof's kernels: cargo test -- --ignored on the GPU machine"]
    fn fc1_with_quick_gelu_epilogue_on_a_gpu() {
        use crate::ffi::kernels_gemm::{linear_act, linear_gelu_on, Activation};
        use crate::test_util::gpu_ms_per_call;
        assert!(tch::Cuda::is_available(), "no CUDA device");
        let dev = Device::Cuda(0);
        if !linear_gelu_on(dev) {
            eprintln!("no Hopper GEMMs on this device or build: nothing to compare");
            return;
        }
        let bf = (Kind::BFloat16, dev);
        let w = Tensor::randn([4096, 1024], bf) / 32.0;
        let b = Tensor::randn([4096], bf) * 0.1;
        for m in [257i64, 606, 2056, 4848] {
            let x = Tensor::randn([m, 1024], bf);
            let h32 = x
                .to_kind(Kind::Float)
                .linear(&w.to_kind(Kind::Float), Some(&b.to_kind(Kind::Float)));
            let want = quick_gelu(&h32, false).unwrap();
            let err = |got: &Tensor| -> f64 {
                let d = got.to_kind(Kind::Float) - &want;
                d.norm().double_value(&[]) / want.norm().double_value(&[])
            };
            let separate = || quick_gelu(&x.linear(&w, Some(&b)), true).unwrap();
            let e_sep = err(&separate());
            let mut line = format!(
                "clip fc1 m={m}: cuBLAS + quick_gelu {:.4} ms (err {e_sep:.2e})",
                gpu_ms_per_call(&separate)
            );
            let fused = || linear_act(&x, &w, &b, Activation::QuickGelu).unwrap();
            let e = err(&fused());
            assert!(
                e <= e_sep * 1.01,
                "m={m}: error {e:.3e} against {e_sep:.3e}"
            );
            line += &format!(", fused {:.4} ms (err {e:.2e})", gpu_ms_per_call(&fused));
            eprintln!("{line}");
        }
    }
}
