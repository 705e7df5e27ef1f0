//! A mixture-of-experts FFN (DeepSeek: docs/deepseek-ocr.md §2; Mixtral; Qwen3-MoE; DeepSeek-V3):
//! fp32 router, softmax or sigmoid scores (V3: the choice adds a correction bias, the weights do
//! not), top-k greedy or within the best groups of experts, renormalised where the model says
//! so, scaled by a routed factor; routed SwiGLU experts summed in fp32, plus always-on shared
//! experts where the model has them. A family gives the shape and its checkpoint's names
//! ([`MoeShape`], [`ExpertNames`]).

mod experts;

use super::moe_router::Router;
pub use super::moe_shape::{ExpertNames, MoeShape, HF_EXPERT_NAMES};
use super::moe_shared_slots::SharedAsExperts;
use crate::checkpoint::tensors::WeightPath;
use crate::ffi::{kernels, kernels_gemv};
use crate::models::layers::basic::{GateUp, SwiGlu};
use anyhow::{ensure, Result};
use llmprof::model::module_work::{COMBINE, ROUTER, ROUTING, SHARED_EXPERTS};
use llmprof::region::RegionObserver;
use tch::{Kind, Tensor};

/// How routed experts are evaluated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MoeDispatch {
    /// `Gathered` for at most `GATHER_MAX_TOKENS` tokens, else `Sorted` (the eager default).
    Auto,
    /// Sort token slots by expert and run one SwiGLU per expert that received tokens. One host
    /// sync per layer (the per-expert counts), like HF `moe_infer`.
    Sorted,
    /// Gather each slot's expert weights and use batched matmuls. No host sync; copies
    /// k·3·F·H weights per token, so only good for a few tokens (decode).
    Gathered,
    /// Sort token slots by expert and run three grouped GEMMs (`torch._grouped_mm`) with the
    /// group offsets on the device: no host sync, no weight copies, CUDA-graph capturable.
    Grouped,
}

/// Token count up to which `Auto` picks `Gathered`.
pub const GATHER_MAX_TOKENS: i64 = 4;

/// Token count up to which the routing-kernel path computes the router logits in llmprof's
/// kernel (a block per token and expert, built for decode steps); above, a prefill's logits come
/// from the fp32 GEMM, which reads each token's row once instead of once per expert.
pub const ROUTER_LOGITS_KERNEL_MAX_TOKENS: i64 = 256;

#[derive(Debug)]
pub struct Moe {
    router: Router,
    /// Stacked expert weights: gate/up [E,F,H] each or fused [E,2F,H]; down [E,H,F].
    gate_up: GateUp,
    w_down: Tensor,
    shared: Option<SwiGlu>,
    /// The shared experts also stacked after the routed ones, for decode steps whose slots fit
    /// the grouped GEMV (`model.optim.moe_shared_experts_fused`); `gate_up` and `w_down` are
    /// then views of these stacks.
    shared_as_experts: Option<SharedAsExperts>,
    pub dispatch: MoeDispatch,
    /// With `Grouped` dispatch on a CUDA device: the router logits in one llmprof kernel (up to
    /// [`ROUTER_LOGITS_KERNEL_MAX_TOKENS`]), then softmax, top-k and the expert sort in llmprof's
    /// routing kernel (one block for a decode step, many for a prefill;
    /// `model.optim.moe_routing_kernel`).
    pub routing_kernel: bool,
    /// With the routing kernel: the combine in llmprof's one kernel, reading the expert-sorted
    /// rows directly, for up to [`kernels::MOE_COMBINE_MAX_TOKENS`] tokens
    /// (`model.optim.moe_combine_kernel`).
    pub combine_kernel: bool,
    /// SwiGLU activations (routed and shared experts) in llmprof's kernel on a GPU
    /// (`runtime.optim.swiglu_kernel`); set with [`Moe::with_swiglu_kernel`].
    swiglu_kernel: bool,
    /// The routed experts of a step with at most [`kernels_gemv::MAX_GROUPED_ROWS`] token slots
    /// in llmprof's grouped GEMV kernel on a GPU (`runtime.optim.gemv_kernel`).
    gemv: bool,
    /// With `gemv`, `swiglu_kernel` and fused gate/up weights: the experts' activation in that
    /// grouped GEMV (`runtime.optim.gemv_swiglu`); set with [`Moe::with_gemv_swiglu`].
    gemv_swiglu: bool,
}

impl Moe {
    /// `vs` points at the layer's MoE (`model.layers.{i}.mlp`, Mixtral's `block_sparse_moe`);
    /// `fused` concatenates gate and up projections.
    pub fn load(vs: &WeightPath, shape: MoeShape, names: ExpertNames, fused: bool) -> Result<Self> {
        ensure!(
            (1..=shape.experts).contains(&shape.top_k),
            "top-k {} of {} experts",
            shape.top_k,
            shape.experts
        );
        let get = |what: &str| -> Result<Tensor> {
            let ws = (0..shape.experts)
                .map(|i| vs.sub("experts").sub(i).take(&format!("{what}.weight")))
                .collect::<Result<Vec<_>>>()?;
            Ok(Tensor::f_stack(&ws, 0)?)
        };
        Ok(Moe {
            router: Router::load(vs, names.router, shape.router())?,
            gate_up: GateUp::new(get(names.gate)?, get(names.up)?, fused)?,
            w_down: get(names.down)?,
            shared: if shape.shared {
                Some(SwiGlu::load(&vs.sub("shared_experts"), fused)?)
            } else {
                None
            },
            shared_as_experts: None,
            dispatch: MoeDispatch::Auto,
            routing_kernel: false,
            combine_kernel: false,
            swiglu_kernel: false,
            gemv: false,
            gemv_swiglu: false,
        })
    }

    /// This MoE with its SwiGLU activations (routed and shared experts) in llmprof's kernel on
    /// a GPU when `on`.
    pub fn with_swiglu_kernel(self, on: bool) -> Self {
        Moe {
            shared: self.shared.map(|s| s.with_kernel(on)),
            swiglu_kernel: on,
            ..self
        }
    }

    /// This MoE with its shared experts' projections in llmprof's GEMV kernel where it takes
    /// them, and its routed experts in the kernel's grouped form for steps of at most
    /// [`kernels_gemv::MAX_GROUPED_ROWS`] token slots (decode at batch 1-2), when `on`.
    pub fn with_gemv(self, on: bool) -> Self {
        Moe {
            shared: self.shared.map(|s| s.with_gemv(on)),
            gemv: on,
            ..self
        }
    }

    /// This MoE with the SwiGLU of its experts (routed, and shared where they run as a dense
    /// MLP) in the GEMV that projects their gate/up, where it takes the call, when `on`.
    pub fn with_gemv_swiglu(self, on: bool) -> Self {
        Moe {
            shared: self.shared.map(|s| s.with_gemv_swiglu(on)),
            gemv_swiglu: on,
            ..self
        }
    }

    /// This MoE with its shared experts also stacked after the routed experts when `on` and
    /// their shapes allow it ([`SharedAsExperts::stack`]), for decode steps on the routing and
    /// combine kernels and the grouped GEMV: set those first (on the CPU, or without them, the
    /// stacks would never be used and are not built).
    pub fn with_shared_experts_fused(mut self, on: bool) -> Result<Self> {
        let usable = on
            && self.gemv
            && self.routing_kernel
            && self.combine_kernel
            && self.w_down.device().is_cuda();
        let Some(shared) = self.shared.as_ref().filter(|_| usable) else {
            return Ok(self);
        };
        if let Some(stacked) = SharedAsExperts::stack(&self.gate_up, &self.w_down, shared)? {
            (self.gate_up, self.w_down) = stacked.routed(self.num_experts())?;
            self.shared_as_experts = Some(stacked);
        }
        Ok(self)
    }

    /// The shared experts stacked as experts, where a step of `tokens` on the routing kernel runs
    /// them as slots: with the combine kernel and the grouped GEMV, every slot within it.
    pub fn shared_as_slots(&self, tokens: i64) -> Option<&SharedAsExperts> {
        self.shared_as_experts.as_ref().filter(|s| {
            self.combine_kernel
                && self.gemv
                && tokens * (self.router.top_k + s.count) <= kernels_gemv::MAX_GROUPED_ROWS
        })
    }

    /// Router: x [N,H] → (weights fp32 [N,k], expert ids [N,k]) (see [`Router::top_k_of`]).
    pub fn route(&self, xs: &Tensor) -> Result<(Tensor, Tensor)> {
        self.router.top_k_of(&self.router.logits(xs)?)
    }

    /// Whether this call routes with the CUDA kernels: grouped dispatch, bf16 on a GPU, weights
    /// not renormalised (the kernel does not divide by their sum).
    fn uses_routing_kernel(&self, xs: &Tensor) -> bool {
        self.routes_with_kernel_on(xs.device(), xs.kind())
    }

    /// [`Moe::uses_routing_kernel`] for inputs on `device` of `kind`.
    fn routes_with_kernel_on(&self, device: tch::Device, kind: Kind) -> bool {
        self.routing_kernel
            && self.router.kernel_computes_it()
            && self.dispatch == MoeDispatch::Grouped
            && device.is_cuda()
            && grouped_mm_runs_on(device, kind)
            && self.num_experts() <= kernels::MOE_ROUTE_MAX_EXPERTS
    }

    /// x [B,T,H] → [B,T,H]. Marks the MoE's modules: `router` (logits), `routing` (softmax,
    /// top-k, the sort by expert), `experts_gate_up`, `experts_act`, `experts_down`, `combine`
    /// (back to token order, the weighted sum) and `shared_experts`, in every dispatch.
    pub fn forward(&self, x: &Tensor, obs: &dyn RegionObserver) -> Result<Tensor> {
        let (b, t, h) = x.size3()?;
        let xs = x.f_reshape([b * t, h])?; // (n, h)
        if self.uses_routing_kernel(&xs) {
            let (xs, logits) = {
                let _m = obs.enter_module(ROUTER, None);
                let xs = xs.f_contiguous()?;
                let logits = if b * t <= ROUTER_LOGITS_KERNEL_MAX_TOKENS {
                    kernels::router_logits(&xs, &self.router.gate_f32)?
                } else {
                    self.router.logits(&xs)? // a prefill: cuBLAS's fp32 GEMM beats the GEMV kernel
                };
                (xs, logits)
            };
            let top_k = self.router.top_k;
            let fused = self.shared_as_slots(b * t);
            let r = {
                let _m = obs.enter_module(ROUTING, None);
                let shared_slots = fused.map_or(0, |s| s.count);
                kernels::moe_route(&logits, &xs, top_k, shared_slots, self.router.scaling)?
            };
            let (gate_up, w_down) =
                fused.map_or((&self.gate_up, &self.w_down), |s| (&s.gate_up, &s.w_down));
            let sorted =
                self.experts_on_sorted_rows(&r.sorted_x, &r.group_ends, (gate_up, w_down), obs)?;
            // (`fused` implies the combine kernel; its slots already hold the shared experts.)
            if self.combine_kernel && b * t <= kernels::MOE_COMBINE_MAX_TOKENS {
                let shared = match fused {
                    Some(_) => None,
                    None => self.shared_forward(&xs, obs)?,
                };
                let _m = obs.enter_module(COMBINE, None);
                let y = kernels::moe_combine(&sorted, &r.slot_pos, &r.weights, shared.as_ref())?;
                return Ok(y.f_view(x.size().as_slice())?);
            }
            let per_slot = {
                let _m = obs.enter_module(COMBINE, None);
                unsort(&sorted, &r.order, b * t, self.router.top_k, h)?
            };
            return self.combine(&per_slot, &r.weights, &xs, x, obs);
        }
        let logits = {
            let _m = obs.enter_module(ROUTER, None);
            self.router.logits(&xs)?
        };
        let (w, idx) = {
            let _m = obs.enter_module(ROUTING, None);
            self.router.top_k_of(&logits)?
        };
        let dispatch = match self.dispatch {
            MoeDispatch::Grouped if !grouped_mm_supported(x) => MoeDispatch::Auto,
            d => d,
        };
        let dispatch = match dispatch {
            MoeDispatch::Auto if b * t <= GATHER_MAX_TOKENS => MoeDispatch::Gathered,
            MoeDispatch::Auto => MoeDispatch::Sorted,
            d => d,
        };
        let per_slot = match dispatch {
            MoeDispatch::Gathered => self.experts_gathered(&xs, &idx, obs)?,
            MoeDispatch::Grouped => self.experts_grouped(&xs, &idx, obs)?,
            _ => self.experts_sorted(&xs, &idx, obs)?,
        }; // (n, k, h) in model dtype
        self.combine(&per_slot, &w, &xs, x, obs)
    }

    /// The shared experts on x [N,H] (`shared_experts`), when the model has them.
    fn shared_forward(&self, xs: &Tensor, obs: &dyn RegionObserver) -> Result<Option<Tensor>> {
        let _m = obs.enter_module(SHARED_EXPERTS, None);
        self.shared.as_ref().map(|s| s.forward(xs)).transpose()
    }

    /// Σ_k weight·expert output in fp32, plus the shared experts: → x's shape and dtype.
    fn combine(
        &self,
        per_slot: &Tensor,
        w: &Tensor,
        xs: &Tensor,
        x: &Tensor,
        obs: &dyn RegionObserver,
    ) -> Result<Tensor> {
        let y = {
            let _m = obs.enter_module(COMBINE, None);
            per_slot
                .f_to_kind(Kind::Float)?
                .f_mul(&w.f_unsqueeze(-1)?)?
                .f_sum_dim_intlist(1, false, Kind::Float)? // (n, h) fp32
                .f_to_kind(x.kind())?
        };
        let shared = self.shared_forward(xs, obs)?;
        let _m = obs.enter_module(COMBINE, None);
        let y = match shared {
            Some(s) => y.f_add(&s)?,
            None => y,
        };
        Ok(y.f_view(x.size().as_slice())?)
    }

    fn num_experts(&self) -> i64 {
        self.w_down.size()[0]
    }
}

impl super::decoder::FeedForward for Moe {
    fn forward(&self, x: &Tensor, obs: &dyn RegionObserver) -> Result<Tensor> {
        Moe::forward(self, x, obs)
    }

    fn shared_experts_as_slots(&self, tokens: i64) -> bool {
        // A step's input has the weights' device and dtype.
        self.shared_as_slots(tokens).is_some()
            && self.routes_with_kernel_on(self.w_down.device(), self.w_down.kind())
    }

    fn modules(&self) -> (llmprof::region::Module, llmprof::region::Module) {
        (
            llmprof::model::module_work::MOE,
            llmprof::model::module_work::MOE_NORM,
        )
    }
}

/// `_grouped_mm` runs on the CPU in any float dtype but on CUDA only in bf16; elsewhere
/// `Grouped` falls back to `Auto` (gathered weights for a few tokens, else the per-expert loop).
pub fn grouped_mm_supported(x: &Tensor) -> bool {
    grouped_mm_runs_on(x.device(), x.kind())
}

/// [`grouped_mm_supported`] for a tensor on `device` of `kind`.
fn grouped_mm_runs_on(device: tch::Device, kind: Kind) -> bool {
    device == tch::Device::Cpu || kind == Kind::BFloat16
}

/// Rows in expert-sorted order back to slot order, as [N,k,H].
pub(crate) fn unsort(sorted: &Tensor, order: &Tensor, n: i64, k: i64, h: i64) -> Result<Tensor> {
    Ok(sorted
        .f_empty_like()?
        .f_index_copy(0, order, sorted)?
        .f_view([n, k, h])?)
}
