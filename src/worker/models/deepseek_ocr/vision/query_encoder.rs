//! DeepSeek-OCR-2's encoder after SAM (docs/deepseek-ocr.md §10): a Qwen2 decoder stack run as
//! an encoder over [N SAM tokens | N learned queries] of one view, keeping the query outputs after
//! the final norm. Image tokens attend to each other both ways and never to the queries; a query
//! attends to every image token and causally to the queries up to itself. Positions 0..2N−1,
//! rotate-half RoPE. `[B, C, h, w]` SAM features → `[B, N, C]` with N = h·w.
use crate::checkpoint::tensors::WeightPath;
use crate::engine::kv_cache::AttnMask;
use crate::models::deepseek_ocr::Switches;
use crate::models::layers::attention::{Attention, AttnShape, Rope};
use crate::models::layers::basic::{RmsNorm, SwiGlu};
use crate::models::layers::decoder::norm;
use anyhow::{bail, ensure, Result};
use llmprof::model::deepseek_ocr::vision_modules::{
    BLOCK, BLOCK_ATTENTION, BLOCK_FFN, PATCH_EMBED,
};
use llmprof::model::deepseek_ocr::QueryEncoderConfig;
use llmprof::model::module_work::FINAL_NORM;
use llmprof::region::RegionObserver;
use std::collections::BTreeMap;
use tch::{Kind, Tensor};

#[derive(Debug)]
struct EncoderLayer {
    input_ln: RmsNorm,
    attn: Attention,
    post_ln: RmsNorm,
    mlp: SwiGlu,
}

#[derive(Debug)]
pub struct QueryEncoder {
    layers: Vec<EncoderLayer>,
    norm: RmsNorm,
    /// Learned queries [N, C] by their count N.
    queries: BTreeMap<i64, Tensor>,
    rope: Rope,
}

/// The hybrid mask of `n` image tokens followed by `n` queries: [1,1,2n,2n], true = attend.
pub fn hybrid_mask(n: i64, device: tch::Device) -> Result<Tensor> {
    let pos = Tensor::f_arange(2 * n, (Kind::Int64, device))?;
    let q = pos.f_unsqueeze(1)?; // (2n, 1)
    let k = pos.f_unsqueeze(0)?; // (1, 2n)
    let key_is_image = k.f_lt(n)?;
    let causal_query = q.f_ge(n)?.f_logical_and(&k.f_le_tensor(&q)?)?;
    Ok(key_is_image
        .f_logical_or(&causal_query)?
        .f_view([1, 1, 2 * n, 2 * n])?)
}

impl QueryEncoder {
    /// `vs` points at `model.qwen2_model`; `pixels_per_token` sizes the query tables.
    pub fn load(
        vs: &WeightPath,
        cfg: &QueryEncoderConfig,
        pixels_per_token: i64,
        optim: &Switches,
    ) -> Result<Self> {
        let stack = vs.sub("model").sub("model");
        let shape = AttnShape::gqa(
            cfg.num_attention_heads,
            cfg.num_key_value_heads,
            cfg.head_dim,
            true,
        );
        let layers = (0..cfg.num_hidden_layers)
            .map(|i| {
                let l = stack.sub("layers").sub(i);
                Ok(EncoderLayer {
                    input_ln: norm(&l.sub("input_layernorm"), cfg.rms_norm_eps, &optim.engine)?,
                    attn: Attention::load(
                        &l.sub("self_attn"),
                        shape,
                        optim.engine.fused_projections,
                        optim.engine.sdpa,
                    )?,
                    post_ln: norm(
                        &l.sub("post_attention_layernorm"),
                        cfg.rms_norm_eps,
                        &optim.engine,
                    )?,
                    mlp: SwiGlu::load(&l.sub("mlp"), optim.engine.fused_projections)?
                        .with_kernel(optim.engine.swiglu_kernel),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let mut queries = BTreeMap::new();
        for &side in &cfg.query_views {
            let n = QueryEncoderConfig::queries(side, pixels_per_token);
            let table = vs.get(&format!("query_{side}.weight"))?;
            ensure!(
                table.size() == [n, cfg.hidden_size],
                "query_{side}.weight has shape {:?}, expected [{n}, {}]",
                table.size(),
                cfg.hidden_size
            );
            queries.insert(n, table);
        }
        Ok(QueryEncoder {
            layers,
            norm: norm(&stack.sub("norm"), cfg.rms_norm_eps, &optim.engine)?,
            queries,
            rope: Rope::new(cfg.head_dim, cfg.rope_theta, vs.device())?,
        })
    }

    /// sam [B, C, h, w] → query outputs [B, h·w, C].
    pub fn forward(&self, sam: &Tensor, obs: &dyn RegionObserver) -> Result<Tensor> {
        let embed = obs.enter_module(PATCH_EMBED, None);
        let (b, c, h, w) = sam.size4()?;
        let n = h * w;
        let Some(table) = self.queries.get(&n) else {
            bail!(
                "the query encoder has learned queries for {:?} tokens per view, not {n} ({h}×{w})",
                self.queries.keys().collect::<Vec<_>>()
            );
        };
        let tokens = sam.f_flatten(2, 3)?.f_transpose(1, 2)?; // (b, n, c)
        let queries = table
            .f_to_kind(tokens.kind())?
            .f_unsqueeze(0)?
            .f_expand([b, n, c], false)?;
        let mut x = Tensor::f_cat(&[tokens, queries], 1)?; // (b, 2n, c)
        let dev = x.device();
        let positions = Tensor::f_arange(2 * n, (Kind::Int64, dev))?
            .f_unsqueeze(0)?
            .f_expand([b, 2 * n], false)?;
        let cos_sin = self.rope.cos_sin(&positions, x.kind())?;
        let mask = AttnMask::Explicit(hybrid_mask(n, dev)?);
        drop(embed);
        for (i, l) in self.layers.iter().enumerate() {
            let _b = obs.enter_module(BLOCK, Some(i as u32));
            let h1 = {
                let _a = obs.enter_module(BLOCK_ATTENTION, None);
                let a = l
                    .attn
                    .forward_uncached(&l.input_ln.forward(&x)?, &cos_sin, &mask)?;
                x.f_add(&a)?
            };
            let _f = obs.enter_module(BLOCK_FFN, None);
            let f = l.mlp.forward(&l.post_ln.forward(&h1)?)?;
            x = h1.f_add(&f)?;
        }
        let _n = obs.enter_module(FINAL_NORM, None);
        self.norm.forward(&x.f_narrow(1, n, n)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use llmprof::region::NoopObserver;
    use tch::Device;

    #[test]
    fn hybrid_mask_matches_the_reference_pattern() {
        // transformers' DeepseekOcr2 mask for 3 image tokens and 3 queries (rows = queries):
        // image rows see the 3 image tokens; query rows see them plus queries up to themselves.
        let m = hybrid_mask(3, Device::Cpu).unwrap().view([6, 6]);
        let rows: Vec<String> = (0..6)
            .map(|i| {
                (0..6)
                    .map(|j| {
                        if m.int64_value(&[i, j]) != 0 {
                            '1'
                        } else {
                            '0'
                        }
                    })
                    .collect()
            })
            .collect();
        assert_eq!(
            rows,
            ["111000", "111000", "111000", "111100", "111110", "111111"]
        );
    }

    #[test]
    fn queries_see_images_and_earlier_queries_only() {
        use crate::models::deepseek_ocr::{ArchConfig, Part, Weights};
        let cfg = ArchConfig::tiny_ocr2();
        let w = Weights::synthetic(&cfg, &[Part::Encoder], 2, Device::Cpu, Kind::Float).unwrap();
        let qcfg = cfg.query_encoder.clone().unwrap();
        let root = w.root();
        let vs = root.sub("model").sub("qwen2_model");
        let enc = QueryEncoder::load(&vs, &qcfg, 64, &Switches::eager()).unwrap();
        let fused = QueryEncoder::load(&vs, &qcfg, 64, &Switches::fast()).unwrap();
        let sam = Tensor::randn([2, 32, 2, 2], (Kind::Float, Device::Cpu));
        let out = enc.forward(&sam, &NoopObserver).unwrap();
        assert_eq!(out.size(), vec![2, 4, 32]);
        let err = (&fused.forward(&sam, &NoopObserver).unwrap() - &out)
            .abs()
            .max()
            .double_value(&[]);
        assert!(err < 1e-5, "fused projections and SDPA: {err}");
        // Query k attends to queries ≤ k: changing query 2 changes outputs 2 and 3 only.
        let mut changed = QueryEncoder::load(&vs, &qcfg, 64, &Switches::eager()).unwrap();
        let table = changed.queries.get(&4).unwrap() + 0.0;
        let _ = table.get(2).fill_(0.5);
        changed.queries.insert(4, table);
        let out2 = changed.forward(&sam, &NoopObserver).unwrap();
        let row = |t: &Tensor, k: i64| t.select(1, k);
        for k in 0..4 {
            let d = (row(&out2, k) - row(&out, k)).abs().max().double_value(&[]);
            if k < 2 {
                assert_eq!(d, 0.0, "query {k} must not see query 2");
            } else {
                assert!(d > 1e-4, "query {k} must see query 2");
            }
        }
        // Every query sees every image token: changing the last SAM token changes query 0.
        let sam2 = sam.copy();
        let _ = sam2.select(2, 1).select(2, 1).fill_(3.0);
        let d = (row(&enc.forward(&sam2, &NoopObserver).unwrap(), 0) - row(&out, 0))
            .abs()
            .max()
            .double_value(&[]);
        assert!(d > 1e-4);
        // A view size without a table is a clear error.
        let e = enc.forward(
            &Tensor::zeros([1, 32, 3, 3], (Kind::Float, Device::Cpu)),
            &NoopObserver,
        );
        assert!(format!("{:#}", e.unwrap_err()).contains("not 9"));
    }
}
