//! The decoder's two ends: the token embedding (each rank's vocabulary rows under tensor
//! parallelism), the step's RoPE tables, and the logits.
use super::{Decoder, Rope, RopeTables};
use crate::ffi::kernels_gemv;
use anyhow::Result;
use llmprof::model::module_work::{EMBED, LM_HEAD};
use llmprof::region::RegionObserver;
use llmprof::region::COMMUNICATION;
use tch::{Kind, Tensor};

impl Decoder {
    /// ids [B,T] (int64) → embeddings [B,T,H] (× Gemma's embedding scale where it has one), as
    /// the module `embed`.
    pub fn embed(&self, ids: &Tensor, obs: &dyn RegionObserver) -> Result<Tensor> {
        let _m = obs.enter_module(EMBED, None);
        let e = match &self.tp {
            // This rank's rows only; the others' ids look up zeros, and the ranks' sum is the
            // whole lookup.
            Some((comm, offset)) => {
                let rows = self.embed.size()[0];
                let local = ids.f_sub_scalar(*offset)?;
                let mine = local.f_ge(0)?.f_logical_and(&local.f_lt(rows)?)?;
                let e = Tensor::f_embedding(
                    &self.embed,
                    &local.f_clamp(0, rows - 1)?,
                    -1,
                    false,
                    false,
                )?
                .f_mul(&mine.f_unsqueeze(-1)?.f_to_kind(self.embed.kind())?)?;
                let _c = obs.enter_module(COMMUNICATION, None);
                comm.all_reduce_sum(&e)?
            }
            None => Tensor::f_embedding(&self.embed, ids, -1, false, false)?,
        };
        match self.embed_scale {
            Some(scale) => Ok(e.f_mul_scalar(scale)?),
            None => Ok(e),
        }
    }

    /// The RoPE tables of `positions`: the global ones, and the local layers' where there are
    /// some; computed, or with `below` (a bound on the positions) gathered from kept tables
    /// ([`Rope::cos_sin_below`]).
    pub(super) fn rope_tables(
        &self,
        positions: &Tensor,
        below: Option<i64>,
        kind: Kind,
    ) -> Result<RopeTables> {
        let cos_sin_of = |r: &Rope| match below {
            Some(b) => r.cos_sin_below(positions, b, kind),
            None => r.cos_sin(positions, kind),
        };
        Ok(RopeTables {
            global: cos_sin_of(&self.rope)?,
            local: self.rope_local.as_ref().map(cos_sin_of).transpose()?,
        })
    }

    /// hidden [..., H] → fp32 logits [..., vocab], as the module `lm_head`.
    pub fn logits(&self, hidden: &Tensor, obs: &dyn RegionObserver) -> Result<Tensor> {
        let _m = obs.enter_module(LM_HEAD, None);
        let logits =
            kernels_gemv::linear_or_torch(hidden, &self.lm_head, None, self.optim.gemv_kernel)?
                .f_to_kind(Kind::Float)?;
        match &self.tp {
            // Each rank's vocabulary slice, concatenated in rank order.
            Some((comm, _)) => {
                let _c = obs.enter_module(COMMUNICATION, None);
                comm.all_gather_last(&logits)
            }
            None => Ok(logits),
        }
    }
}
