//! DeepSeek MoE FFN (spec §2): fp32 softmax router, greedy top-k without renormalisation,
//! routed SwiGLU experts summed in fp32, plus always-on shared experts.

use super::config::DecoderConfig;
use super::layers::{swiglu, SwiGlu};
use super::weights::WeightPath;
use anyhow::{ensure, Result};
use tch::{Kind, Tensor};

/// How routed experts are evaluated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MoeDispatch {
    /// `Gathered` for at most `GATHER_MAX_TOKENS` tokens, else `Sorted`.
    Auto,
    /// Sort token slots by expert and run one SwiGLU per expert that received tokens. One host
    /// sync per layer (the per-expert counts), like HF `moe_infer`.
    Sorted,
    /// Gather each slot's expert weights and use batched matmuls. No host sync; copies
    /// k·3·F·H weights per token, so only good for a few tokens (decode).
    Gathered,
}

/// Token count up to which `Auto` picks `Gathered`.
pub const GATHER_MAX_TOKENS: i64 = 4;

#[derive(Debug)]
pub struct Moe {
    /// Router weight [E,H], kept in fp32 (spec §2: logits computed in fp32).
    gate_f32: Tensor,
    /// Stacked expert weights: gate/up [E,F,H], down [E,H,F].
    w_gate: Tensor,
    w_up: Tensor,
    w_down: Tensor,
    shared: Option<SwiGlu>,
    top_k: i64,
    scaling: f64,
    pub dispatch: MoeDispatch,
}

impl Moe {
    /// `vs` points at `model.layers.{i}.mlp`.
    pub fn load(vs: &WeightPath, cfg: &DecoderConfig) -> Result<Self> {
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
            w_gate: get("gate_proj")?,
            w_up: get("up_proj")?,
            w_down: get("down_proj")?,
            shared: if cfg.n_shared_experts > 0 {
                Some(SwiGlu::load(&vs.sub("shared_experts"))?)
            } else {
                None
            },
            top_k: cfg.num_experts_per_tok,
            scaling: cfg.routed_scaling_factor,
            dispatch: MoeDispatch::Auto,
        })
    }

    /// Router: x [N,H] → (weights fp32 [N,k], expert ids [N,k]) — softmax probabilities of the
    /// top-k experts, unsorted, not renormalised, × routed_scaling_factor.
    pub fn route(&self, xs: &Tensor) -> Result<(Tensor, Tensor)> {
        let logits = xs
            .f_to_kind(Kind::Float)?
            .f_linear::<Tensor>(&self.gate_f32, None)?; // (n, e)
        let scores = logits.f_softmax(-1, Kind::Float)?;
        let (w, idx) = scores.f_topk(self.top_k, -1, true, false)?; // (n, k)
        let w = if self.scaling != 1.0 {
            w.f_mul_scalar(self.scaling)?
        } else {
            w
        };
        Ok((w, idx))
    }

    /// x [B,T,H] → [B,T,H].
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let (b, t, h) = x.size3()?;
        let xs = x.f_reshape([b * t, h])?; // (n, h)
        let (w, idx) = self.route(&xs)?;
        let dispatch = match self.dispatch {
            MoeDispatch::Auto if b * t <= GATHER_MAX_TOKENS => MoeDispatch::Gathered,
            MoeDispatch::Auto => MoeDispatch::Sorted,
            d => d,
        };
        let per_slot = match dispatch {
            MoeDispatch::Gathered => self.experts_gathered(&xs, &idx)?,
            _ => self.experts_sorted(&xs, &idx)?,
        }; // (n, k, h) in model dtype
        let y = per_slot
            .f_to_kind(Kind::Float)?
            .f_mul(&w.f_unsqueeze(-1)?)?
            .f_sum_dim_intlist(1, false, Kind::Float)?; // (n, h) fp32
        let mut y = y.f_to_kind(x.kind())?;
        if let Some(s) = &self.shared {
            y = y.f_add(&s.forward(&xs)?)?;
        }
        Ok(y.f_view([b, t, h])?)
    }

    /// Expert outputs per (token, slot) [N,k,H], evaluating each used expert once on its tokens.
    fn experts_sorted(&self, xs: &Tensor, idx: &Tensor) -> Result<Tensor> {
        let (n, h) = xs.size2()?;
        let k = self.top_k;
        let e = self.w_gate.size()[0];
        let flat = idx.f_reshape([-1])?; // (n·k)
        let ones = Tensor::f_ones([n * k], (Kind::Int64, xs.device()))?;
        let counts =
            Tensor::f_zeros([e], (Kind::Int64, xs.device()))?.f_scatter_add(0, &flat, &ones)?;
        let counts = Vec::<i64>::try_from(&counts.f_to_device(tch::Device::Cpu)?)?; // host sync
        let order = flat.f_argsort_stable(true, 0, false)?; // (n·k) slots sorted by expert
        let sorted_x = xs.f_index_select(0, &order.f_floor_divide_scalar(k)?)?; // (n·k, h)
        let mut outs = Vec::new();
        let mut start = 0;
        for (ei, &cnt) in counts.iter().enumerate() {
            if cnt == 0 {
                continue;
            }
            let ei = ei as i64;
            let xe = sorted_x.f_narrow(0, start, cnt)?;
            outs.push(swiglu(
                &xe,
                &self.w_gate.f_get(ei)?,
                &self.w_up.f_get(ei)?,
                &self.w_down.f_get(ei)?,
            )?);
            start += cnt;
        }
        let outs = Tensor::f_cat(&outs, 0)?; // (n·k, h), sorted order
        let mut back = outs.f_empty_like()?;
        back = back.f_index_copy(0, &order, &outs)?; // (n·k, h), slot order
        Ok(back.f_view([n, k, h])?)
    }

    /// Same result via gathered weights and bmm, without host sync.
    fn experts_gathered(&self, xs: &Tensor, idx: &Tensor) -> Result<Tensor> {
        let (n, h) = xs.size2()?;
        let k = self.top_k;
        let flat = idx.f_reshape([-1])?; // (n·k)
        let g = self.w_gate.f_index_select(0, &flat)?; // (n·k, f, h)
        let u = self.w_up.f_index_select(0, &flat)?; // (n·k, f, h)
        let d = self.w_down.f_index_select(0, &flat)?; // (n·k, h, f)
        let xk = xs
            .f_unsqueeze(1)?
            .f_expand([n, k, h], false)?
            .f_reshape([n * k, h, 1])?; // (n·k, h, 1)
        let act = g.f_bmm(&xk)?.f_silu()?.f_mul(&u.f_bmm(&xk)?)?; // (n·k, f, 1)
        Ok(d.f_bmm(&act)?.f_view([n, k, h])?) // (n, k, h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::model::deepseek_ocr::config::ArchConfig;
    use crate::workload::model::deepseek_ocr::weights::{Part, Weights};
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
    fn moe_matches_naive_loop_for_both_dispatches() {
        let cfg = ArchConfig::tiny();
        let w = Weights::synthetic(&cfg, &[Part::Decoder], 3, Device::Cpu, Kind::Float).unwrap();
        let mut moe = Moe::load(&w.root().sub("model.layers.1.mlp"), &cfg.decoder).unwrap();
        let x = Tensor::randn([2, 5, cfg.decoder.hidden_size], (Kind::Float, Device::Cpu));
        let want = naive(&w, 1, &cfg, &x.view([10, -1]));
        for d in [
            MoeDispatch::Sorted,
            MoeDispatch::Gathered,
            MoeDispatch::Auto,
        ] {
            moe.dispatch = d;
            let got = moe.forward(&x).unwrap().view([10, -1]);
            let err = (&got - &want).abs().max().double_value(&[]);
            assert!(err < 1e-4, "{d:?}: max abs err {err}");
        }
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
