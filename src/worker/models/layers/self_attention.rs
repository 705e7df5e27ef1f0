//! A decoder layer's self-attention: GQA ([`Attention`]) or multi-head latent attention
//! ([`MlaAttention`]), behind the calls the decoder stack makes.
use super::attention::Attention;
use super::block_input::BlockInput;
use super::mla::MlaAttention;
use crate::engine::kv_cache::{AttnMask, KvCache};
use anyhow::Result;
use llmprof::region::RegionObserver;
use tch::Tensor;

#[derive(Debug)]
pub enum SelfAttention {
    Gqa(Attention),
    Mla(MlaAttention),
}

impl SelfAttention {
    /// x [B,T,H] → [B,T,H], writing this call's keys into `cache` for `layer`.
    pub fn forward(
        &self,
        x: &Tensor,
        cos_sin: &(Tensor, Tensor),
        at: (&mut KvCache, usize),
        mask: &AttnMask,
        obs: &dyn RegionObserver,
    ) -> Result<Tensor> {
        match self {
            SelfAttention::Gqa(a) => a.forward(x, cos_sin, at, mask, obs),
            SelfAttention::Mla(a) => a.forward(x, cos_sin, at, mask, obs),
        }
    }

    /// One token per row at the cache's device-side slot (capturable).
    pub fn forward_device_step(
        &self,
        x: BlockInput,
        cos_sin: &(Tensor, Tensor),
        at: (&KvCache, usize),
        window: (&AttnMask, i64),
        obs: &dyn RegionObserver,
    ) -> Result<Tensor> {
        match self {
            SelfAttention::Gqa(a) => a.forward_device_step(x, cos_sin, at, window, obs),
            SelfAttention::Mla(a) => a.forward_device_step(x.normed()?, cos_sin, at, window, obs),
        }
    }

    /// The q/k/v projection a one-row decode step on `device` may take already run, an add +
    /// RMSNorm folded into it ([`Attention::rope_kv_projection`]; GQA only).
    pub fn rope_kv_projection(&self, device: tch::Device) -> Option<(&Tensor, Option<&Tensor>)> {
        match self {
            SelfAttention::Gqa(a) => a.rope_kv_projection(device),
            SelfAttention::Mla(_) => None,
        }
    }

    /// Whether decode steps over `window` slots attend through llmprof's kernel (GQA only).
    pub fn uses_decode_kernel(&self, device: tch::Device, window: i64) -> bool {
        match self {
            SelfAttention::Gqa(a) => a.uses_decode_kernel(device, window),
            SelfAttention::Mla(_) => false,
        }
    }
}
