//! DeepSeek MoE FFN (docs/deepseek-ocr.md §2): fp32 softmax router, greedy top-k without renormalisation,
//! routed SwiGLU experts summed in fp32, plus always-on shared experts.

use crate::checkpoint::tensors::WeightPath;
use crate::ffi::kernels;
use crate::models::layers::basic::{silu_mul_halves, silu_mul_last, GateUp, SwiGlu};
use anyhow::{ensure, Result};
use llmprof::model::deepseek_ocr::arch::DecoderConfig;
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
    /// Router weight [E,H], kept in fp32 (docs/deepseek-ocr.md §2: logits computed in fp32).
    gate_f32: Tensor,
    /// Stacked expert weights: gate/up [E,F,H] each or fused [E,2F,H]; down [E,H,F].
    gate_up: GateUp,
    w_down: Tensor,
    shared: Option<SwiGlu>,
    top_k: i64,
    scaling: f64,
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
}

impl Moe {
    /// `vs` points at `model.layers.{i}.mlp`; `fused` concatenates gate and up projections.
    pub fn load(vs: &WeightPath, cfg: &DecoderConfig, fused: bool) -> Result<Self> {
        ensure!(
            !cfg.norm_topk_prob,
            "norm_topk_prob=true is not implemented"
        );
        let e = cfg.n_routed_experts;
        let get = |what: &str| -> Result<Tensor> {
            let ws = (0..e)
                .map(|i| vs.sub("experts").sub(i).get(&format!("{what}.weight")))
                .collect::<Result<Vec<_>>>()?;
            Ok(Tensor::f_stack(&ws, 0)?)
        };
        Ok(Moe {
            gate_f32: vs.get("gate.weight")?.f_to_kind(Kind::Float)?,
            gate_up: GateUp::new(get("gate_proj")?, get("up_proj")?, fused)?,
            w_down: get("down_proj")?,
            shared: if cfg.n_shared_experts > 0 {
                Some(SwiGlu::load(&vs.sub("shared_experts"), fused)?)
            } else {
                None
            },
            top_k: cfg.num_experts_per_tok,
            scaling: cfg.routed_scaling_factor,
            dispatch: MoeDispatch::Auto,
            routing_kernel: false,
            combine_kernel: false,
            swiglu_kernel: false,
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

    /// Router logits in fp32: x [N,H] → [N,E].
    fn router_logits(&self, xs: &Tensor) -> Result<Tensor> {
        Ok(xs
            .f_to_kind(Kind::Float)?
            .f_linear::<Tensor>(&self.gate_f32, None)?)
    }

    /// Router: x [N,H] → (weights fp32 [N,k], expert ids [N,k]) — softmax probabilities of the
    /// top-k experts, unsorted, not renormalised, × routed_scaling_factor.
    pub fn route(&self, xs: &Tensor) -> Result<(Tensor, Tensor)> {
        let logits = self.router_logits(xs)?; // (n, e)
        let scores = logits.f_softmax(-1, Kind::Float)?;
        let (w, idx) = scores.f_topk(self.top_k, -1, true, false)?; // (n, k)
        let w = if self.scaling != 1.0 {
            w.f_mul_scalar(self.scaling)?
        } else {
            w
        };
        Ok((w, idx))
    }

    /// Whether this call routes with the CUDA kernels: grouped dispatch, bf16 on a GPU.
    fn uses_routing_kernel(&self, xs: &Tensor) -> bool {
        self.routing_kernel
            && self.dispatch == MoeDispatch::Grouped
            && xs.device().is_cuda()
            && grouped_mm_supported(xs)
            && self.num_experts() <= kernels::MOE_ROUTE_MAX_EXPERTS
    }

    /// x [B,T,H] → [B,T,H].
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let (b, t, h) = x.size3()?;
        let xs = x.f_reshape([b * t, h])?; // (n, h)
        if self.uses_routing_kernel(&xs) {
            let xs = xs.f_contiguous()?;
            let logits = if b * t <= ROUTER_LOGITS_KERNEL_MAX_TOKENS {
                kernels::router_logits(&xs, &self.gate_f32)?
            } else {
                self.router_logits(&xs)? // a prefill: cuBLAS's fp32 GEMM beats the GEMV kernel
            };
            let r = kernels::moe_route(&logits, &xs, self.top_k, self.scaling)?;
            let sorted = self.experts_on_sorted_rows(&r.sorted_x, &r.group_ends)?;
            if self.combine_kernel && b * t <= kernels::MOE_COMBINE_MAX_TOKENS {
                let shared = self.shared.as_ref().map(|s| s.forward(&xs)).transpose()?;
                let y = kernels::moe_combine(&sorted, &r.slot_pos, &r.weights, shared.as_ref())?;
                return Ok(y.f_view(x.size().as_slice())?);
            }
            let per_slot = unsort(&sorted, &r.order, b * t, self.top_k, h)?;
            return self.combine(&per_slot, &r.weights, &xs, x);
        }
        let (w, idx) = self.route(&xs)?;
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
            MoeDispatch::Gathered => self.experts_gathered(&xs, &idx)?,
            MoeDispatch::Grouped => self.experts_grouped(&xs, &idx)?,
            _ => self.experts_sorted(&xs, &idx)?,
        }; // (n, k, h) in model dtype
        self.combine(&per_slot, &w, &xs, x)
    }

    /// Σ_k weight·expert output in fp32, plus the shared experts: → x's shape and dtype.
    fn combine(&self, per_slot: &Tensor, w: &Tensor, xs: &Tensor, x: &Tensor) -> Result<Tensor> {
        let y = per_slot
            .f_to_kind(Kind::Float)?
            .f_mul(&w.f_unsqueeze(-1)?)?
            .f_sum_dim_intlist(1, false, Kind::Float)?; // (n, h) fp32
        let mut y = y.f_to_kind(x.kind())?;
        if let Some(s) = &self.shared {
            y = y.f_add(&s.forward(xs)?)?;
        }
        Ok(y.f_view(x.size().as_slice())?)
    }

    fn num_experts(&self) -> i64 {
        self.w_down.size()[0]
    }

    /// Token slots sorted by expert: (order [N·k] of slot indices, tokens per expert [E] int64),
    /// both on the device; counting uses scatter_add (bincount would read its max on the host).
    fn sort_slots(&self, idx: &Tensor) -> Result<(Tensor, Tensor)> {
        let flat = idx.f_reshape([-1])?; // (n·k)
        let ones = Tensor::f_ones([flat.size()[0]], (Kind::Int64, idx.device()))?;
        let counts = Tensor::f_zeros([self.num_experts()], (Kind::Int64, idx.device()))?
            .f_scatter_add(0, &flat, &ones)?;
        Ok((flat.f_argsort_stable(true, 0, false)?, counts))
    }

    /// Expert outputs per (token, slot) [N,k,H], evaluating each used expert once on its tokens.
    fn experts_sorted(&self, xs: &Tensor, idx: &Tensor) -> Result<Tensor> {
        let (n, h) = xs.size2()?;
        let k = self.top_k;
        let (order, counts) = self.sort_slots(idx)?;
        let counts = Vec::<i64>::try_from(&counts.f_to_device(tch::Device::Cpu)?)?; // host sync
        let sorted_x = xs.f_index_select(0, &order.f_floor_divide_scalar(k)?)?; // (n·k, h)
        let mut outs = Vec::new();
        let mut start = 0;
        for (ei, &cnt) in counts.iter().enumerate() {
            if cnt == 0 {
                continue;
            }
            let ei = ei as i64;
            let xe = sorted_x.f_narrow(0, start, cnt)?;
            let act = match &self.gate_up {
                GateUp::Split { gate, up } => GateUp::Split {
                    gate: gate.f_get(ei)?,
                    up: up.f_get(ei)?,
                },
                GateUp::Fused(w) => GateUp::Fused(w.f_get(ei)?),
            }
            .act(&xe, self.swiglu_kernel)?;
            outs.push(act.f_linear::<Tensor>(&self.w_down.f_get(ei)?, None)?);
            start += cnt;
        }
        let outs = Tensor::f_cat(&outs, 0)?; // (n·k, h), sorted order
        unsort(&outs, &order, n, k, h)
    }

    /// Same result via gathered weights and bmm, without host sync.
    fn experts_gathered(&self, xs: &Tensor, idx: &Tensor) -> Result<Tensor> {
        let (n, h) = xs.size2()?;
        let k = self.top_k;
        let flat = idx.f_reshape([-1])?; // (n·k)
        let xk = xs
            .f_unsqueeze(1)?
            .f_expand([n, k, h], false)?
            .f_reshape([n * k, h, 1])?; // (n·k, h, 1)
        let act = match &self.gate_up {
            GateUp::Split { gate, up } => {
                let g = gate.f_index_select(0, &flat)?; // (n·k, f, h)
                let u = up.f_index_select(0, &flat)?;
                g.f_bmm(&xk)?.f_silu()?.f_mul(&u.f_bmm(&xk)?)?
            }
            GateUp::Fused(w) => silu_mul_halves(&w.f_index_select(0, &flat)?.f_bmm(&xk)?, 1)?,
        }; // (n·k, f, 1)
        let d = self.w_down.f_index_select(0, &flat)?; // (n·k, h, f)
        Ok(d.f_bmm(&act)?.f_view([n, k, h])?) // (n, k, h)
    }

    /// Same result via grouped GEMMs over expert-sorted slots; group ends stay on the device.
    fn experts_grouped(&self, xs: &Tensor, idx: &Tensor) -> Result<Tensor> {
        let (order, counts) = self.sort_slots(idx)?;
        let offs = counts.f_cumsum(0, Kind::Int)?; // (e) int32 group ends
        let slot_token = order.f_floor_divide_scalar(self.top_k)?;
        let sorted = self.experts_on_sorted_rows(&xs.f_index_select(0, &slot_token)?, &offs)?;
        let (n, h) = xs.size2()?;
        unsort(&sorted, &order, n, self.top_k, h)
    }

    /// Grouped GEMMs over the token rows of the slots sorted by expert, `sorted_x` [N·k, H], with
    /// `offs` [E] int32 group ends → expert outputs [N·k, H] in sorted order.
    fn experts_on_sorted_rows(&self, sorted_x: &Tensor, offs: &Tensor) -> Result<Tensor> {
        // _grouped_mm takes B as [E, K, N]; the transposed views of [E, N, K] weights are the
        // column-major layout its CUDA kernel wants.
        let gmm = |a: &Tensor, w: &Tensor| -> Result<Tensor> {
            Ok(a.f_internal_grouped_mm::<&Tensor>(&w.f_transpose(1, 2)?, Some(offs), None, None)?)
        };
        let act = match &self.gate_up {
            GateUp::Split { gate, up } => {
                gmm(sorted_x, gate)?.f_silu()?.f_mul(&gmm(sorted_x, up)?)?
            }
            GateUp::Fused(w) => silu_mul_last(&gmm(sorted_x, w)?, self.swiglu_kernel)?,
        }; // (n·k, f)
        gmm(&act, &self.w_down) // (n·k, h), sorted order
    }
}

/// `_grouped_mm` runs on the CPU in any float dtype but on CUDA only in bf16; elsewhere
/// `Grouped` falls back to `Auto` (gathered weights for a few tokens, else the per-expert loop).
pub fn grouped_mm_supported(x: &Tensor) -> bool {
    x.device() == tch::Device::Cpu || x.kind() == Kind::BFloat16
}

/// Rows in expert-sorted order back to slot order, as [N,k,H].
fn unsort(sorted: &Tensor, order: &Tensor, n: i64, k: i64, h: i64) -> Result<Tensor> {
    Ok(sorted
        .f_empty_like()?
        .f_index_copy(0, order, sorted)?
        .f_view([n, k, h])?)
}

#[cfg(test)]
mod gpu_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::deepseek_ocr::checkpoint::weights::{Part, Weights};
    use llmprof::model::deepseek_ocr::arch::ArchConfig;
    use tch::Device;

    /// Per-token loop over experts, router recomputed on the host (softmax, sort, no renorm).
    fn naive(w: &Weights, layer: i64, cfg: &ArchConfig, x: &Tensor) -> Tensor {
        let d = &cfg.decoder;
        let p = format!("model.layers.{layer}.mlp");
        let gate = w.get(&format!("{p}.gate.weight")).unwrap();
        let (n, _) = x.size2().unwrap();
        let mut rows = Vec::new();
        for t in 0..n {
            let xt = x.get(t).unsqueeze(0); // (1, h)
            let logits = Vec::<f32>::try_from(&xt.matmul(&gate.tr()).view([-1])).unwrap();
            let m = logits.iter().cloned().fold(f32::MIN, f32::max);
            let z: f32 = logits.iter().map(|l| (l - m).exp()).sum();
            let mut probs: Vec<(usize, f32)> = logits
                .iter()
                .map(|l| (l - m).exp() / z)
                .enumerate()
                .collect();
            probs.sort_by(|a, b| b.1.partial_cmp(&a.1).unwrap());
            let mut acc = Tensor::zeros([1, d.hidden_size], (Kind::Float, Device::Cpu));
            for &(e, pr) in probs.iter().take(d.num_experts_per_tok as usize) {
                let ep = format!("{p}.experts.{e}");
                let g = w.get(&format!("{ep}.gate_proj.weight")).unwrap();
                let u = w.get(&format!("{ep}.up_proj.weight")).unwrap();
                let dn = w.get(&format!("{ep}.down_proj.weight")).unwrap();
                let o = (xt.matmul(&g.tr()).silu() * xt.matmul(&u.tr())).matmul(&dn.tr());
                acc += o * (pr as f64);
            }
            let sp = format!("{p}.shared_experts");
            let g = w.get(&format!("{sp}.gate_proj.weight")).unwrap();
            let u = w.get(&format!("{sp}.up_proj.weight")).unwrap();
            let dn = w.get(&format!("{sp}.down_proj.weight")).unwrap();
            acc += (xt.matmul(&g.tr()).silu() * xt.matmul(&u.tr())).matmul(&dn.tr());
            rows.push(acc);
        }
        Tensor::cat(&rows, 0)
    }

    #[test]
    fn moe_matches_naive_loop_for_every_dispatch() {
        let cfg = ArchConfig::tiny();
        let w = Weights::synthetic(&cfg, &[Part::Decoder], 3, Device::Cpu, Kind::Float).unwrap();
        let x = Tensor::randn([2, 5, cfg.decoder.hidden_size], (Kind::Float, Device::Cpu));
        let want = naive(&w, 1, &cfg, &x.view([10, -1]));
        for fused in [false, true] {
            let mut moe =
                Moe::load(&w.root().sub("model.layers.1.mlp"), &cfg.decoder, fused).unwrap();
            for d in [
                MoeDispatch::Sorted,
                MoeDispatch::Gathered,
                MoeDispatch::Grouped,
                MoeDispatch::Auto,
            ] {
                moe.dispatch = d;
                let got = moe.forward(&x).unwrap().view([10, -1]);
                let err = (&got - &want).abs().max().double_value(&[]);
                assert!(err < 1e-4, "{d:?} fused={fused}: max abs err {err}");
            }
        }
        let moe = Moe::load(&w.root().sub("model.layers.1.mlp"), &cfg.decoder, false).unwrap();
        // Not renormalised: routed weights sum to < 1 with 2 of 8 experts.
        let (wts, _) = moe.route(&x.view([10, -1])).unwrap();
        let max_sum = wts
            .sum_dim_intlist(1, false, Kind::Float)
            .max()
            .double_value(&[]);
        assert!(
            max_sum < 0.999,
            "top-k weights look renormalised: {max_sum}"
        );
    }
}
