//! Preallocated static KV cache for the decoder: per layer K/V [B, heads, capacity, head_dim].
//! All rows share the slot counter; left-padded rows record their pad length, from which the
//! RoPE positions and the attention masks are derived (no host sync).

use super::config::DecoderConfig;
use anyhow::{ensure, Result};
use tch::{Device, Kind, Tensor};

/// How attention is masked for one forward call.
#[derive(Debug)]
pub enum AttnMask {
    /// Every query sees every cached key (single-token decode without padding).
    None,
    /// Plain causal mask aligned top-left (fresh prefill without padding).
    Causal,
    /// Boolean mask [B,1,T,L], true = attend.
    Explicit(Tensor),
}

#[derive(Debug)]
pub struct KvCache {
    k: Vec<Tensor>,
    v: Vec<Tensor>,
    len: i64,
    capacity: i64,
    batch: i64,
    pad: Vec<i64>,
    pad_t: Tensor,
}

impl KvCache {
    /// Allocates `layers × 2 × [batch, heads, capacity, head_dim]` zeros on `device` as `kind`.
    pub fn new(
        cfg: &DecoderConfig,
        batch: i64,
        capacity: i64,
        device: Device,
        kind: Kind,
    ) -> Result<Self> {
        ensure!(
            batch > 0 && capacity > 0,
            "KV cache needs batch > 0 and capacity > 0"
        );
        let shape = [batch, cfg.num_key_value_heads, capacity, cfg.head_dim];
        let mut k = Vec::new();
        let mut v = Vec::new();
        for _ in 0..cfg.num_hidden_layers {
            k.push(Tensor::f_zeros(shape, (kind, device))?);
            v.push(Tensor::f_zeros(shape, (kind, device))?);
        }
        Ok(KvCache {
            k,
            v,
            len: 0,
            capacity,
            batch,
            pad: vec![0; batch as usize],
            pad_t: Tensor::f_zeros([batch], (Kind::Int64, device))?,
        })
    }

    /// Sets the left-pad length of every row; only before the first write.
    pub fn set_left_padding(&mut self, pad: &[i64]) -> Result<()> {
        ensure!(self.len == 0, "left padding must be set on an empty cache");
        ensure!(
            pad.len() as i64 == self.batch,
            "{} pad lengths for batch {}",
            pad.len(),
            self.batch
        );
        self.pad = pad.to_vec();
        self.pad_t = Tensor::f_from_slice(pad)?.f_to_device(self.pad_t.device())?;
        Ok(())
    }

    /// Empties the cache (keeps the allocation); padding goes back to zero.
    pub fn reset(&mut self) -> Result<()> {
        self.len = 0;
        self.pad = vec![0; self.batch as usize];
        self.pad_t = self.pad_t.f_zero_()?;
        Ok(())
    }

    /// Slots written so far (identical for all rows, pads included).
    pub fn len(&self) -> i64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn capacity(&self) -> i64 {
        self.capacity
    }

    pub fn batch(&self) -> i64 {
        self.batch
    }

    pub fn left_padding(&self) -> &[i64] {
        &self.pad
    }

    /// Bytes held by the cache.
    pub fn bytes(&self) -> i64 {
        self.k
            .iter()
            .chain(&self.v)
            .map(|t| t.numel() as i64 * t.kind().elt_size_in_bytes() as i64)
            .sum()
    }

    /// Writes k, v [B,H,T,D] into `layer` at slots [len, len+T) and returns views of slots
    /// [0, len+T). The slot counter moves only in [`KvCache::advance`].
    pub fn append(&self, layer: usize, k: &Tensor, v: &Tensor) -> Result<(Tensor, Tensor)> {
        let t = k.size()[2];
        ensure!(
            self.len + t <= self.capacity,
            "KV cache overflow: {} + {t} > capacity {}",
            self.len,
            self.capacity
        );
        self.k[layer].f_narrow(2, self.len, t)?.f_copy_(k)?;
        self.v[layer].f_narrow(2, self.len, t)?.f_copy_(v)?;
        Ok((
            self.k[layer].f_narrow(2, 0, self.len + t)?,
            self.v[layer].f_narrow(2, 0, self.len + t)?,
        ))
    }

    /// Marks `t` more slots as written (after all layers ran).
    pub fn advance(&mut self, t: i64) {
        self.len += t;
    }

    /// RoPE positions [B,T] of the next `t` slots: slot − pad, clamped at 0 for pad slots.
    pub fn positions(&self, t: i64) -> Result<Tensor> {
        let dev = self.pad_t.device();
        let slots = Tensor::f_arange(t, (Kind::Int64, dev))?
            .f_add_scalar(self.len)?
            .f_unsqueeze(0)?; // (1, t)
        Ok(slots.f_sub(&self.pad_t.f_unsqueeze(1)?)?.f_clamp_min(0)?) // (b, t)
    }

    /// Mask for `t` new query slots against keys [0, len+t). Pad keys are hidden; a pad query
    /// sees itself only, so no softmax row is empty (no NaN).
    pub fn attention_mask(&self, t: i64) -> Result<AttnMask> {
        let padded = self.pad.iter().any(|&p| p > 0);
        if !padded {
            if t == 1 {
                return Ok(AttnMask::None);
            }
            if self.len == 0 {
                return Ok(AttnMask::Causal);
            }
        }
        let dev = self.pad_t.device();
        let l = self.len + t;
        let j = Tensor::f_arange(l, (Kind::Int64, dev))?.f_view([1, 1, 1, l])?;
        let i = Tensor::f_arange(t, (Kind::Int64, dev))?
            .f_add_scalar(self.len)?
            .f_view([1, 1, t, 1])?;
        let pad = self.pad_t.f_view([self.batch, 1, 1, 1])?;
        let visible = j.f_ge_tensor(&pad)?.f_logical_and(&j.f_le_tensor(&i)?)?;
        Ok(AttnMask::Explicit(
            visible.f_logical_or(&j.f_eq_tensor(&i)?)?,
        )) // (b, 1, t, l)
    }
}
