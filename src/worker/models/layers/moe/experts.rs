//! How a MoE layer evaluates its routed experts on the token slots the router chose
//! ([`super::MoeDispatch`]): each used expert once on its sorted tokens, each slot's expert
//! gathered (a few tokens), or grouped GEMMs over the slots sorted by expert (llmprof's grouped
//! GEMV for a decode step's few slots, which may apply SwiGLU itself; libtorch's grouped GEMM
//! otherwise).
use super::{unsort, Moe};
use crate::ffi::kernels_gemv;
use crate::models::layers::basic::{silu_mul_halves, GateUp, GateUpOut};
use anyhow::Result;
use llmprof::model::module_work::{COMBINE, EXPERTS_ACT, EXPERTS_DOWN, EXPERTS_GATE_UP, ROUTING};
use llmprof::region::RegionObserver;
use tch::{Kind, Tensor};

impl Moe {
    /// Token slots sorted by expert: (order [N·k] of slot indices, tokens per expert [E] int64),
    /// both on the device; counting uses scatter_add (bincount would read its max on the host).
    pub(super) fn sort_slots(&self, idx: &Tensor) -> Result<(Tensor, Tensor)> {
        let flat = idx.f_reshape([-1])?; // (n·k)
        let ones = Tensor::f_ones([flat.size()[0]], (Kind::Int64, idx.device()))?;
        let counts = Tensor::f_zeros([self.num_experts()], (Kind::Int64, idx.device()))?
            .f_scatter_add(0, &flat, &ones)?;
        Ok((flat.f_argsort_stable(true, 0, false)?, counts))
    }

    /// Expert outputs per (token, slot) [N,k,H], evaluating each used expert once on its tokens.
    pub(super) fn experts_sorted(
        &self,
        xs: &Tensor,
        idx: &Tensor,
        obs: &dyn RegionObserver,
    ) -> Result<Tensor> {
        let (n, h) = xs.size2()?;
        let k = self.router.top_k;
        let (order, counts, sorted_x) = {
            let _m = obs.enter_module(ROUTING, None);
            let (order, counts) = self.sort_slots(idx)?;
            let counts = Vec::<i64>::try_from(&counts.f_to_device(tch::Device::Cpu)?)?; // host sync
            let sorted_x = xs.f_index_select(0, &order.f_floor_divide_scalar(k)?)?; // (n·k, h)
            (order, counts, sorted_x)
        };
        let mut outs = Vec::new();
        let mut start = 0;
        for (ei, &cnt) in counts.iter().enumerate() {
            if cnt == 0 {
                continue;
            }
            let ei = ei as i64;
            let xe = sorted_x.f_narrow(0, start, cnt)?;
            let gu = {
                let _m = obs.enter_module(EXPERTS_GATE_UP, None);
                match &self.gate_up {
                    GateUp::Split { gate, up } => GateUp::Split {
                        gate: gate.f_get(ei)?,
                        up: up.f_get(ei)?,
                    },
                    GateUp::Fused(w) => GateUp::Fused(w.f_get(ei)?),
                }
                .project(&xe, false, kernels_gemv::GemvAct::None)?
            };
            let act = {
                let _m = obs.enter_module(EXPERTS_ACT, None);
                gu.act(self.swiglu_kernel)?
            };
            let _m = obs.enter_module(EXPERTS_DOWN, None);
            outs.push(act.f_linear::<Tensor>(&self.w_down.f_get(ei)?, None)?);
            start += cnt;
        }
        let _m = obs.enter_module(COMBINE, None);
        let outs = Tensor::f_cat(&outs, 0)?; // (n·k, h), sorted order
        unsort(&outs, &order, n, k, h)
    }

    /// Same result via gathered weights and bmm, without host sync.
    pub(super) fn experts_gathered(
        &self,
        xs: &Tensor,
        idx: &Tensor,
        obs: &dyn RegionObserver,
    ) -> Result<Tensor> {
        let (n, h) = xs.size2()?;
        let k = self.router.top_k;
        let flat = idx.f_reshape([-1])?; // (n·k)
        let xk = xs
            .f_unsqueeze(1)?
            .f_expand([n, k, h], false)?
            .f_reshape([n * k, h, 1])?; // (n·k, h, 1)
        let gu = {
            let _m = obs.enter_module(EXPERTS_GATE_UP, None);
            match &self.gate_up {
                GateUp::Split { gate, up } => {
                    let g = gate.f_index_select(0, &flat)?; // (n·k, f, h)
                    let u = up.f_index_select(0, &flat)?;
                    GateUpOut::Split(g.f_bmm(&xk)?, u.f_bmm(&xk)?)
                }
                GateUp::Fused(w) => GateUpOut::Fused(w.f_index_select(0, &flat)?.f_bmm(&xk)?),
            }
        };
        let act = {
            let _m = obs.enter_module(EXPERTS_ACT, None);
            match gu {
                GateUpOut::Split(g, u) => g.f_silu()?.f_mul(&u)?,
                GateUpOut::Fused(gu) => silu_mul_halves(&gu, 1)?,
                GateUpOut::Activated(a) => a,
            }
        }; // (n·k, f, 1)
        let _m = obs.enter_module(EXPERTS_DOWN, None);
        let d = self.w_down.f_index_select(0, &flat)?; // (n·k, h, f)
        Ok(d.f_bmm(&act)?.f_view([n, k, h])?) // (n, k, h)
    }

    /// Same result via grouped GEMMs over expert-sorted slots; group ends stay on the device.
    pub(super) fn experts_grouped(
        &self,
        xs: &Tensor,
        idx: &Tensor,
        obs: &dyn RegionObserver,
    ) -> Result<Tensor> {
        let (order, offs, rows) = {
            let _m = obs.enter_module(ROUTING, None);
            let (order, counts) = self.sort_slots(idx)?;
            let offs = counts.f_cumsum(0, Kind::Int)?; // (e) int32 group ends
            let slot_token = order.f_floor_divide_scalar(self.router.top_k)?;
            (order, offs, xs.f_index_select(0, &slot_token)?)
        };
        let sorted =
            self.experts_on_sorted_rows(&rows, &offs, (&self.gate_up, &self.w_down), obs)?;
        let (n, h) = xs.size2()?;
        let _m = obs.enter_module(COMBINE, None);
        unsort(&sorted, &order, n, self.router.top_k, h)
    }

    /// Grouped GEMMs over the token rows of the slots sorted by expert, `sorted_x` [N·k, H], with
    /// `offs` [E] int32 group ends and the experts' (gate/up, down) weights → expert outputs
    /// [N·k, H] in sorted order.
    pub(super) fn experts_on_sorted_rows(
        &self,
        sorted_x: &Tensor,
        offs: &Tensor,
        (gate_up, w_down): (&GateUp, &Tensor),
        obs: &dyn RegionObserver,
    ) -> Result<Tensor> {
        // A few slots (a decode step): the grouped GEMV streams each slot's expert's weight
        // (an expert with two slots, twice). Else _grouped_mm, which takes B as [E, K, N]: the
        // transposed views of [E, N, K] weights are the column-major layout its kernel wants.
        let gmm = |a: &Tensor, w: &Tensor| -> Result<Tensor> {
            if self.gemv && kernels_gemv::grouped_fits(a, w, offs) {
                return Ok(kernels_gemv::linear_grouped(
                    a,
                    w,
                    offs,
                    kernels_gemv::GemvAct::None,
                )?);
            }
            Ok(a.f_internal_grouped_mm::<&Tensor>(&w.f_transpose(1, 2)?, Some(offs), None, None)?)
        };
        let fold_act = self.gemv && self.gemv_swiglu && self.swiglu_kernel;
        let gu = {
            let _m = obs.enter_module(EXPERTS_GATE_UP, None);
            match gate_up {
                GateUp::Split { gate, up } => {
                    GateUpOut::Split(gmm(sorted_x, gate)?, gmm(sorted_x, up)?)
                }
                GateUp::Fused(w) if fold_act && kernels_gemv::grouped_fits(sorted_x, w, offs) => {
                    let act = kernels_gemv::GemvAct::SwiGlu;
                    GateUpOut::Activated(kernels_gemv::linear_grouped(sorted_x, w, offs, act)?)
                }
                GateUp::Fused(w) => GateUpOut::Fused(gmm(sorted_x, w)?),
            }
        };
        let act = match gu {
            // Activated in the grouped GEMV: nothing runs under `experts_act`.
            GateUpOut::Activated(a) => a,
            gu => {
                let _m = obs.enter_module(EXPERTS_ACT, None);
                gu.act(self.swiglu_kernel)?
            }
        }; // (n·k, f)
        let _m = obs.enter_module(EXPERTS_DOWN, None);
        gmm(&act, w_down) // (n·k, h), sorted order
    }
}
