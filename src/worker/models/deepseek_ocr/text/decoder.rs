//! DeepSeek-V2-style decoder (docs/deepseek-ocr.md §2) on the shared stack: plain MHA, dense
//! SwiGLU in the first `first_k_dense_replace` layers and the MoE after, untied lm_head.
use crate::checkpoint::tensors::WeightPath;
use crate::engine::kv_cache::KvDims;
use crate::models::deepseek_ocr::text::moe::{self, MoeDispatch};
use crate::models::deepseek_ocr::Switches;
use crate::models::layers::attention::AttnShape;
use crate::models::layers::basic::SwiGlu;
pub use crate::models::layers::decoder::Decoder;
use crate::models::layers::decoder::{DecoderDims, FeedForward};
use anyhow::Result;
use llmprof::model::deepseek_ocr::arch::DecoderConfig;

/// The shared stack's dimensions of the DeepSeek-OCR decoder.
pub fn dims(cfg: &DecoderConfig) -> DecoderDims {
    DecoderDims {
        layers: cfg.num_hidden_layers,
        attn: AttnShape::gqa(
            cfg.num_attention_heads,
            cfg.num_key_value_heads,
            cfg.head_dim,
            false,
        ),
        rms_norm_eps: cfg.rms_norm_eps,
        rope_theta: cfg.rope_theta,
        rope_scaling: None,
        max_positions: cfg.max_position_embeddings,
        tie_word_embeddings: false,
        sandwich: None,
        mla: None,
        sliding: None,
    }
}

/// The KV cache shape of the decoder.
pub fn kv_dims(cfg: &DecoderConfig) -> KvDims {
    dims(cfg).kv()
}

/// Loads the decoder from the root `vs` (names `model.embed_tokens…`, `lm_head.weight`).
pub fn load(vs: &WeightPath, cfg: &DecoderConfig, o: &Switches) -> Result<Decoder> {
    Decoder::load(vs, &dims(cfg), &o.engine, |mlp, i| {
        Ok(if i < cfg.first_k_dense_replace {
            Box::new(
                SwiGlu::load(mlp, o.engine.fused_projections)?
                    .with_kernel(o.engine.swiglu_kernel)
                    .with_gemv(o.engine.gemv_kernel)
                    .with_gemv_swiglu(o.engine.gemv_swiglu),
            ) as Box<dyn FeedForward>
        } else {
            let mut moe = moe::load(mlp, cfg, o.engine.fused_projections)?
                .with_swiglu_kernel(o.engine.swiglu_kernel)
                .with_gemv(o.engine.gemv_kernel)
                .with_gemv_swiglu(o.engine.gemv_swiglu);
            if o.own.grouped_moe {
                moe.dispatch = MoeDispatch::Grouped;
            }
            moe.routing_kernel = o.own.moe_routing_kernel;
            moe.combine_kernel = o.own.moe_combine_kernel;
            // After the switches it runs on: it stacks the weights only where they are used.
            Box::new(moe.with_shared_experts_fused(o.own.moe_shared_experts_fused)?)
        })
    })
}
