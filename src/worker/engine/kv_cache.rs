//! Decoder KV cache, per layer K/V [B, heads, slots, head_dim]: preallocated and written in
//! place (static), or grown by concatenation every step (HF `DynamicCache`, the eager baseline).
//! All rows share the slot counter; left-padded rows record their pad length, from which the
//! RoPE positions and the attention masks are derived (no host sync). The static cache also
//! keeps the counter on the device, so a CUDA graph can capture a decode step once and replay
//! it at any length.

use anyhow::{ensure, Result};
use tch::{Device, Kind, Tensor};

/// The cache's per-layer shape: layers × K [batch, kv_heads, slots, head_dim] and V [batch,
/// kv_heads, slots, v_head_dim].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KvDims {
    pub layers: i64,
    pub kv_heads: i64,
    pub head_dim: i64,
    /// The values' width: head_dim for ordinary attention; 0 where the keys carry the values
    /// (multi-head latent attention caches one latent per token, read as both).
    pub v_head_dim: i64,
}

/// How attention is masked for one forward call.
#[derive(Debug)]
pub enum AttnMask {
    /// Every query sees every cached key (single-token decode without padding).
    None,
    /// Plain causal mask aligned top-left (fresh prefill without padding).
    Causal,
    /// Boolean mask [B,1,T,L], true = attend.
    Explicit(Tensor),
    /// Additive mask [B,1,T,L] in the attention's dtype: 0 = attend, −∞ = hidden. Built once
    /// per decode step, so that fused attention does not convert a boolean mask in every layer.
    Additive(Tensor),
}

#[derive(Debug)]
pub struct KvCache {
    /// Static: [B, heads, capacity, head_dim]; growing: [B, heads, len, head_dim].
    k: Vec<Tensor>,
    v: Vec<Tensor>,
    growing: bool,
    len: i64,
    capacity: i64,
    batch: i64,
    pad: Vec<i64>,
    pad_t: Tensor,
    /// Slots written, on the device ([1] int64); equals `len` between steps.
    len_t: Tensor,
    /// Unique per cache in the process: what captured graphs that baked in its buffers key on.
    id: u64,
}

/// The next [`KvCache`] id.
static NEXT_CACHE_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl KvCache {
    /// Allocates `layers × 2 × [batch, heads, capacity, head_dim]` zeros on `device` as `kind`
    /// (static), or empty per-layer tensors that grow up to `capacity` (`growing`).
    pub fn new(
        cfg: KvDims,
        batch: i64,
        capacity: i64,
        device: Device,
        kind: Kind,
        growing: bool,
    ) -> Result<Self> {
        ensure!(
            batch > 0 && capacity > 0,
            "KV cache needs batch > 0 and capacity > 0"
        );
        let slots = if growing { 0 } else { capacity };
        let shape = [batch, cfg.kv_heads, slots, cfg.head_dim];
        let v_shape = [batch, cfg.kv_heads, slots, cfg.v_head_dim];
        let mut k = Vec::new();
        let mut v = Vec::new();
        for _ in 0..cfg.layers {
            k.push(Tensor::f_zeros(shape, (kind, device))?);
            v.push(Tensor::f_zeros(v_shape, (kind, device))?);
        }
        Ok(KvCache {
            k,
            v,
            growing,
            len: 0,
            capacity,
            batch,
            pad: vec![0; batch as usize],
            pad_t: Tensor::f_zeros([batch], (Kind::Int64, device))?,
            len_t: Tensor::f_zeros([1], (Kind::Int64, device))?,
            id: NEXT_CACHE_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
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
        // In place: captured decode graphs read this tensor's storage.
        self.pad_t
            .f_copy_(&super::upload::ints_to_device(pad, self.pad_t.device())?)?;
        Ok(())
    }

    /// Empties the cache (keeps the allocation); padding goes back to zero.
    pub fn reset(&mut self) -> Result<()> {
        self.len = 0;
        self.pad = vec![0; self.batch as usize];
        let _ = self.pad_t.f_zero_()?;
        let _ = self.len_t.f_zero_()?;
        if self.growing {
            for t in self.k.iter_mut().chain(self.v.iter_mut()) {
                *t = t.f_narrow(2, 0, 0)?.f_contiguous()?;
            }
        }
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

    /// Whether the cache grows by concatenation (no fixed buffers to capture).
    pub fn is_growing(&self) -> bool {
        self.growing
    }

    /// This cache's id, unique in the process (another cache never reuses it, even at the
    /// same addresses).
    pub fn id(&self) -> u64 {
        self.id
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
    pub fn append(&mut self, layer: usize, k: &Tensor, v: &Tensor) -> Result<(Tensor, Tensor)> {
        let t = k.size()[2];
        ensure!(
            self.len + t <= self.capacity,
            "KV cache overflow: {} + {t} > capacity {}",
            self.len,
            self.capacity
        );
        if self.growing {
            self.k[layer] = Tensor::f_cat(&[&self.k[layer], k], 2)?;
            self.v[layer] = Tensor::f_cat(&[&self.v[layer], v], 2)?;
            return Ok((self.k[layer].shallow_clone(), self.v[layer].shallow_clone()));
        }
        self.k[layer].f_narrow(2, self.len, t)?.f_copy_(k)?;
        self.v[layer].f_narrow(2, self.len, t)?.f_copy_(v)?;
        Ok((
            self.k[layer].f_narrow(2, 0, self.len + t)?,
            self.v[layer].f_narrow(2, 0, self.len + t)?,
        ))
    }

    /// For a kernel that writes `t` new slots [len, len + t) of `layer` itself: the whole K and
    /// V buffers [B, kv_heads, capacity, head_dim] and the device-side counter [1] (= len), or
    /// `None` for a growing cache. Errors where the slots do not fit. Afterwards
    /// [`KvCache::window`] with len + t views the written slots.
    pub fn static_buffers_for(
        &self,
        layer: usize,
        t: i64,
    ) -> Result<Option<(&Tensor, &Tensor, &Tensor)>> {
        if self.growing {
            return Ok(None);
        }
        ensure!(
            self.len + t <= self.capacity,
            "KV cache overflow: {} + {t} > capacity {}",
            self.len,
            self.capacity
        );
        Ok(Some(self.device_step_buffers(layer)))
    }

    /// Marks `t` more slots as written (after all layers ran), on the host and the device.
    pub fn advance(&mut self, t: i64) -> Result<()> {
        self.len += t;
        let _ = self.len_t.f_add_scalar_(t)?;
        Ok(())
    }

    // ---- Decode at the device-side length (CUDA-graph capturable) -------------------------

    /// Checks that a single-token step at the device-side length fits, attending over the first
    /// `window` slots.
    pub fn check_device_step(&self, window: i64) -> Result<()> {
        ensure!(
            !self.growing,
            "a growing KV cache has no fixed slots to capture"
        );
        ensure!(
            self.len < window && window <= self.capacity,
            "decode window {window} must cover slot {} and fit capacity {}",
            self.len,
            self.capacity
        );
        Ok(())
    }

    /// Writes k, v [B,H,1,D] at the device-side slot counter and returns views of the first
    /// `window` slots (later slots are masked by [`KvCache::device_step_mask`]).
    pub fn append_at_device_len(
        &self,
        layer: usize,
        k: &Tensor,
        v: &Tensor,
        window: i64,
    ) -> Result<(Tensor, Tensor)> {
        let _ = self.k[layer]
            .shallow_clone()
            .f_index_copy_(2, &self.len_t, k)?;
        let _ = self.v[layer]
            .shallow_clone()
            .f_index_copy_(2, &self.len_t, v)?;
        self.window(layer, window)
    }

    /// `layer`'s whole K and V buffers [B, kv_heads, capacity, head_dim] and the device-side slot
    /// counter [1], for a kernel that writes the step's slot itself.
    pub fn device_step_buffers(&self, layer: usize) -> (&Tensor, &Tensor, &Tensor) {
        (&self.k[layer], &self.v[layer], &self.len_t)
    }

    /// Each row's left-padding length [B] on the device.
    pub fn device_pad(&self) -> &Tensor {
        &self.pad_t
    }

    /// Views of `layer`'s first `window` slots.
    pub fn window(&self, layer: usize, window: i64) -> Result<(Tensor, Tensor)> {
        Ok((
            self.k[layer].f_narrow(2, 0, window)?,
            self.v[layer].f_narrow(2, 0, window)?,
        ))
    }

    /// RoPE positions [B,1] of the next slot from the device-side counter.
    pub fn device_step_positions(&self) -> Result<Tensor> {
        Ok(self
            .len_t
            .f_unsqueeze(0)?
            .f_sub(&self.pad_t.f_unsqueeze(1)?)?
            .f_clamp_min(0)?)
    }

    /// Mask [B,1,1,window] for the next slot: keys from the row's pad length up to the slot.
    pub fn device_step_mask(&self, window: i64) -> Result<Tensor> {
        let j = Tensor::f_arange(window, (Kind::Int64, self.len_t.device()))?
            .f_view([1, 1, 1, window])?;
        let pad = self.pad_t.f_view([self.batch, 1, 1, 1])?;
        Ok(j.f_ge_tensor(&pad)?
            .f_logical_and(&j.f_le_tensor(&self.len_t.f_view([1, 1, 1, 1])?)?)?)
    }

    /// [`KvCache::device_step_mask`] as an additive mask in `kind` (0 visible, −∞ hidden),
    /// limited to the last `sliding` keys (the step's slot included) where given.
    pub fn device_step_additive_mask(
        &self,
        window: i64,
        kind: Kind,
        sliding: Option<i64>,
    ) -> Result<AttnMask> {
        let visible = self.device_step_mask(window)?;
        let visible = match sliding {
            Some(w) => {
                let j = Tensor::f_arange(window, (Kind::Int64, self.len_t.device()))?
                    .f_view([1, 1, 1, window])?;
                let first = self.len_t.f_view([1, 1, 1, 1])?.f_sub_scalar(w)?;
                visible.f_logical_and(&j.f_gt_tensor(&first)?)?
            }
            None => visible,
        };
        Ok(AttnMask::Additive(
            Tensor::f_where_scalar(&visible, 0.0, f64::NEG_INFINITY)?.f_to_kind(kind)?,
        ))
    }

    /// Moves the device-side counter by one (inside the captured step).
    pub fn advance_device_len(&self) -> Result<()> {
        let _ = self.len_t.shallow_clone().f_add_scalar_(1)?;
        Ok(())
    }

    /// Moves the host-side counter back by `t`, leaving the slots and the device-side counter
    /// as they are: before capturing a graph of work that already ran (the capture runs only
    /// its host side, which moves the host counter forward again).
    pub fn rewind_host_len(&mut self, t: i64) -> Result<()> {
        ensure!(
            (0..=self.len).contains(&t),
            "cannot move the KV cache's counter back by {t} from {}",
            self.len
        );
        self.len -= t;
        Ok(())
    }

    /// Moves the host-side counter by `t` after work that advanced the device side itself (a
    /// replayed decode step or prefill).
    pub fn advance_host_len(&mut self, t: i64) {
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
        self.attention_mask_within(t, None)
    }

    /// [`KvCache::attention_mask`] where each query sees only its last `sliding` keys (itself
    /// included: key slot j from query slot i when i − W < j), where given and reached.
    pub fn attention_mask_within(&self, t: i64, sliding: Option<i64>) -> Result<AttnMask> {
        let sliding = sliding.filter(|&w| self.len + t > w);
        let padded = self.pad.iter().any(|&p| p > 0);
        if !padded && sliding.is_none() {
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
        let visible = match sliding {
            Some(w) => visible.f_logical_and(&j.f_gt_tensor(&i.f_sub_scalar(w)?)?)?,
            None => visible,
        };
        Ok(AttnMask::Explicit(
            visible.f_logical_or(&j.f_eq_tensor(&i)?)?,
        )) // (b, 1, t, l)
    }
}
