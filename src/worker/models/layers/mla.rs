//! Multi-head latent attention (DeepSeek-V2/V3) over the compressed KV cache, in the absorbed
//! form llmprof::model::dense::mla describes: the cache holds one latent (RMSNorm'd, kv_lora_rank
//! wide) plus one RoPE key per token; each head's query folds in its key expansion W_UK, attends
//! over the latents as one shared K/V head, and its output goes through its value expansion W_UV
//! before o_proj. Interleaved RoPE pairs (DeepSeek's layout) are regrouped into halves once, in
//! the projection rows, so the shared rotate-half RoPE applies; q and k get the same
//! permutation, so their dot products are unchanged.
use super::attention::{apply_rope, masked_softmax};
use super::basic::RmsNorm;
use crate::checkpoint::tensors::WeightPath;
use crate::engine::kv_cache::{AttnMask, KvCache};
use anyhow::Result;
use llmprof::model::dense::Mla;
use llmprof::model::module_work::{CORE, O_PROJ, QKV, ROPE_KV};
use llmprof::region::RegionObserver;
use tch::Tensor;

/// The query projection: direct, or through the low-rank bottleneck with its norm.
#[derive(Debug)]
enum QueryProj {
    Direct(Tensor),
    LowRank { a: Tensor, norm: RmsNorm, b: Tensor },
}

#[derive(Debug)]
pub struct MlaAttention {
    q: QueryProj,
    /// [latent + rope, H]
    kv_a: Tensor,
    kv_norm: RmsNorm,
    /// Each head's key expansion [heads, nope, latent] and value expansion [heads, v, latent].
    w_uk: Tensor,
    w_uv: Tensor,
    o: Tensor,
    heads: i64,
    nope: i64,
    rope: i64,
    rank: i64,
    v_dim: i64,
    scale: f64,
}

/// Row order that turns interleaved RoPE pairs (x0, x1), (x2, x3) ... of `dim` rows starting at
/// `at` into halves (x0, x2, ... | x1, x3, ...), the other rows of `total` kept.
fn deinterleave_rows(total: i64, blocks: impl Iterator<Item = i64>, dim: i64) -> Vec<i64> {
    let mut order: Vec<i64> = (0..total).collect();
    for at in blocks {
        for j in 0..dim / 2 {
            order[(at + j) as usize] = at + 2 * j;
            order[(at + dim / 2 + j) as usize] = at + 2 * j + 1;
        }
    }
    order
}

impl MlaAttention {
    /// `vs` points at `model.layers.{i}.self_attn`; `eps` is the latent norms' epsilon.
    pub fn load(vs: &WeightPath, m: &Mla, heads: i64, eps: f64) -> Result<Self> {
        let (nope, rope, rank) = (m.qk_nope_head_dim, m.qk_rope_head_dim, m.kv_lora_rank);
        let qk = nope + rope;
        let regroup = |w: Tensor, blocks: Vec<i64>| -> Result<Tensor> {
            if !m.rope_interleave {
                return Ok(w);
            }
            let order = deinterleave_rows(w.size()[0], blocks.into_iter(), rope);
            let idx = Tensor::f_from_slice(&order)?.f_to_device(w.device())?;
            Ok(w.f_index_select(0, &idx)?)
        };
        let q_rope_rows = (0..heads).map(|h| h * qk + nope).collect::<Vec<_>>();
        let q = match m.q_lora_rank {
            None => QueryProj::Direct(regroup(vs.take("q_proj.weight")?, q_rope_rows)?),
            Some(_) => QueryProj::LowRank {
                a: vs.take("q_a_proj.weight")?,
                norm: RmsNorm::load(&vs.sub("q_a_layernorm"), eps)?,
                b: regroup(vs.take("q_b_proj.weight")?, q_rope_rows)?,
            },
        };
        let kv_b = vs
            .take("kv_b_proj.weight")?
            .f_view([heads, nope + m.v_head_dim, rank])?;
        Ok(MlaAttention {
            q,
            kv_a: regroup(vs.take("kv_a_proj_with_mqa.weight")?, vec![rank])?,
            kv_norm: RmsNorm::load(&vs.sub("kv_a_layernorm"), eps)?,
            w_uk: kv_b.f_narrow(1, 0, nope)?.f_contiguous()?,
            w_uv: kv_b.f_narrow(1, nope, m.v_head_dim)?.f_contiguous()?,
            o: vs.take("o_proj.weight")?,
            heads,
            nope,
            rope,
            rank,
            v_dim: m.v_head_dim,
            scale: m.softmax_scale(),
        })
    }

    /// x [B,T,H] → (query [B,heads,T,latent+rope] with W_UK folded in, this call's cache rows
    /// [B,1,T,latent+rope]), RoPE applied to both. Marks `qkv` and `rope_kv`.
    fn query_and_latent(
        &self,
        x: &Tensor,
        cos_sin: &(Tensor, Tensor),
        obs: &dyn RegionObserver,
    ) -> Result<(Tensor, Tensor)> {
        let (b, t, _) = x.size3()?;
        let (q, kv) = {
            let _m = obs.enter_module(QKV, None);
            let q = match &self.q {
                QueryProj::Direct(w) => x.f_linear::<Tensor>(w, None)?,
                QueryProj::LowRank { a, norm, b } => norm
                    .forward(&x.f_linear::<Tensor>(a, None)?)?
                    .f_linear::<Tensor>(b, None)?,
            };
            let kv = x.f_linear::<Tensor>(&self.kv_a, None)?; // (b, t, rank + rope)
            let latent = self.kv_norm.forward(&kv.f_narrow(-1, 0, self.rank)?)?;
            let q = q
                .f_view([b, t, self.heads, self.nope + self.rope])?
                .f_transpose(1, 2)?; // (b, heads, t, nope + rope)
            (q, (latent, kv.f_narrow(-1, self.rank, self.rope)?))
        };
        let (q_pe, row) = {
            let _m = obs.enter_module(ROPE_KV, None);
            let (cos, sin) = cos_sin; // (b, 1, t, rope)
            let q_pe = apply_rope(&q.f_narrow(-1, self.nope, self.rope)?, cos, sin)?;
            let k_pe = apply_rope(&kv.1.f_unsqueeze(1)?, cos, sin)?; // (b, 1, t, rope)
            let row = Tensor::f_cat(&[&kv.0.f_unsqueeze(1)?, &k_pe], -1)?; // (b, 1, t, rank + rope)
            (q_pe, row)
        };
        let _m = obs.enter_module(CORE, None);
        let q_abs = q.f_narrow(-1, 0, self.nope)?.f_matmul(&self.w_uk)?; // (b, heads, t, rank)
        Ok((Tensor::f_cat(&[&q_abs, &q_pe], -1)?, row))
    }

    /// No separate values in the cache: an empty [B,1,T,0] for its V slot.
    fn no_values(row: &Tensor) -> Result<Tensor> {
        let (b, _, t, _) = row.size4()?;
        Ok(Tensor::f_empty([b, 1, t, 0], (row.kind(), row.device()))?)
    }

    /// Attention of `query` over the cached rows `keys` [B,1,L,latent+rope] (their first
    /// kv_lora_rank columns are the values), the value expansion and o_proj → [B,T,H]. Marks
    /// `core` and `o_proj`.
    fn attend(
        &self,
        query: &Tensor,
        keys: &Tensor,
        mask: &AttnMask,
        obs: &dyn RegionObserver,
    ) -> Result<Tensor> {
        let (b, n, t, w) = query.size4()?;
        let o = {
            let _m = obs.enter_module(CORE, None);
            // Every head's queries against the one shared K/V head: the heads fold into the
            // rows of one matmul each way (no copy of the latents per head). Explicit matmuls
            // and an fp32 softmax, not libtorch's fused attention: on DeepSeek-V3's shapes (128
            // heads, 576-wide keys) its bf16 prefill put the logits 19 % from eager's
            // (reports/gpu-runs.md, session 28).
            let l = keys.size()[2];
            let scores = query
                .f_reshape([b, 1, n * t, w])?
                .f_matmul(&keys.f_transpose(-2, -1)?)?
                .f_view([b, n, t, l])?
                .f_mul_scalar(self.scale)?;
            let p = masked_softmax(&scores, mask)?.f_to_kind(query.kind())?;
            let values = keys.f_narrow(-1, 0, self.rank)?; // (b, 1, l, rank)
            let o = p
                .f_reshape([b, 1, n * t, l])?
                .f_matmul(&values)?
                .f_view([b, n, t, self.rank])?;
            o.f_matmul(&self.w_uv.f_transpose(1, 2)?)? // (b, heads, t, v)
                .f_transpose(1, 2)?
                .f_reshape([b, t, n * self.v_dim])?
        };
        let _m = obs.enter_module(O_PROJ, None);
        Ok(o.f_linear::<Tensor>(&self.o, None)?)
    }

    /// x [B,T,H] → [B,T,H]; writes this call's latents into `cache` for `layer`.
    pub fn forward(
        &self,
        x: &Tensor,
        cos_sin: &(Tensor, Tensor),
        (cache, layer): (&mut KvCache, usize),
        mask: &AttnMask,
        obs: &dyn RegionObserver,
    ) -> Result<Tensor> {
        let (query, row) = self.query_and_latent(x, cos_sin, obs)?;
        let (keys, _) = {
            let _m = obs.enter_module(ROPE_KV, None);
            cache.append(layer, &row, &Self::no_values(&row)?)?
        };
        self.attend(&query, &keys, mask, obs)
    }

    /// One token per row at the cache's device-side slot, over the first `window` slots
    /// (capturable; see `Attention::forward_device_step`).
    pub fn forward_device_step(
        &self,
        x: &Tensor,
        cos_sin: &(Tensor, Tensor),
        (cache, layer): (&KvCache, usize),
        (mask, window): (&AttnMask, i64),
        obs: &dyn RegionObserver,
    ) -> Result<Tensor> {
        let (query, row) = self.query_and_latent(x, cos_sin, obs)?;
        let (keys, _) = {
            let _m = obs.enter_module(ROPE_KV, None);
            cache.append_at_device_len(layer, &row, &Self::no_values(&row)?, window)?
        };
        self.attend(&query, &keys, mask, obs)
    }
}

#[cfg(test)]
mod tests {
    use super::deinterleave_rows;

    #[test]
    fn interleaved_pairs_become_halves_within_each_block() {
        // Two heads of 2 nope + 4 rope rows: rope rows (2,3,4,5) → (2,4,3,5), (8,9,10,11) →
        // (8,10,9,11); nope rows stay.
        let order = deinterleave_rows(12, [2, 8].into_iter(), 4);
        assert_eq!(order, vec![0, 1, 2, 4, 3, 5, 6, 7, 8, 10, 9, 11]);
    }
}
