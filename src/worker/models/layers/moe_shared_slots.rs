//! A MoE's shared experts as experts of its grouped GEMVs (`model.optim.moe_shared_experts_fused`,
//! the fusion SGLang applies to DeepSeek-V3): a shared SwiGLU of intermediate S·F is S experts of
//! the routed experts' width F (SwiGLU is elementwise over the intermediate, and the down
//! projection a sum over it), stacked after the routed experts at load. The routing kernel then
//! gives each token S more slots (experts E.., weight 1), the grouped GEMVs run them with the
//! routed slots, and the combine sums them: three launches a layer fewer at a decode step.
//! The routed experts keep views of the first E experts of the stacks (no second copy).

use crate::models::layers::basic::{GateUp, SwiGlu};
use anyhow::Result;
use tch::Tensor;

/// The routed experts' weights with the shared experts stacked after them.
#[derive(Debug)]
pub struct SharedAsExperts {
    /// S: experts of the routed width that the shared experts make.
    pub count: i64,
    /// Gate/up over E + S experts: [E+S, F, H] each, or fused [E+S, 2F, H].
    pub gate_up: GateUp,
    /// Down over E + S experts: [E+S, H, F].
    pub w_down: Tensor,
}

impl SharedAsExperts {
    /// Stacks `shared` after the routed `gate_up` and `w_down` [E, H, F]; `None` where the
    /// shared experts cannot be split into experts of the routed width (their intermediate is not
    /// a multiple of F, GeGLU, other dtypes or devices).
    pub fn stack(gate_up: &GateUp, w_down: &Tensor, shared: &SwiGlu) -> Result<Option<Self>> {
        let [_, h, f] = w_down.size()[..] else {
            return Ok(None);
        };
        let [sh, sf] = shared.down.size()[..] else {
            return Ok(None);
        };
        let same = |t: &Tensor| t.kind() == w_down.kind() && t.device() == w_down.device();
        if shared.gelu_tanh || sh != h || f < 1 || sf % f != 0 || !same(&shared.down) {
            return Ok(None);
        }
        let count = sf / f;
        // Shared [S·F, H] rows → S experts [S, F, H]; shared down [H, S·F] → [S, H, F].
        let experts_of = |w: &Tensor| w.f_reshape([count, f, h]);
        let down = shared
            .down
            .f_reshape([h, count, f])?
            .f_permute([1, 0, 2])?
            .f_contiguous()?;
        let gate_up = match (gate_up, &shared.gate_up) {
            (GateUp::Fused(routed), GateUp::Fused(w)) if same(w) => {
                let (gate, up) = (w.f_narrow(0, 0, sf)?, w.f_narrow(0, sf, sf)?);
                let per_expert = Tensor::f_cat(&[experts_of(&gate)?, experts_of(&up)?], 1)?;
                GateUp::Fused(Tensor::f_cat(&[routed, &per_expert], 0)?)
            }
            (GateUp::Split { gate, up }, GateUp::Split { gate: sg, up: su })
                if same(sg) && same(su) =>
            {
                GateUp::Split {
                    gate: Tensor::f_cat(&[gate, &experts_of(sg)?], 0)?,
                    up: Tensor::f_cat(&[up, &experts_of(su)?], 0)?,
                }
            }
            _ => return Ok(None),
        };
        Ok(Some(SharedAsExperts {
            count,
            gate_up,
            w_down: Tensor::f_cat(&[w_down, &down], 0)?,
        }))
    }

    /// The routed experts' weights as views of the first `experts` experts of the stacks.
    pub fn routed(&self, experts: i64) -> Result<(GateUp, Tensor)> {
        let first = |t: &Tensor| t.f_narrow(0, 0, experts);
        let gate_up = match &self.gate_up {
            GateUp::Fused(w) => GateUp::Fused(first(w)?),
            GateUp::Split { gate, up } => GateUp::Split {
                gate: first(gate)?,
                up: first(up)?,
            },
        };
        Ok((gate_up, first(&self.w_down)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::{Device, Kind};

    /// The shared SwiGLU equals the sum of its S experts taken from the stacks (fp64 on the
    /// CPU), fused and split gate/up; the routed experts' views are the routed weights.
    #[test]
    fn the_stacked_shared_experts_sum_to_the_shared_mlp() {
        let (e, f, h, s) = (3i64, 4i64, 6i64, 2i64);
        let opts = (Kind::Double, Device::Cpu);
        for fused in [true, false] {
            let routed_gate = Tensor::randn([e, f, h], opts);
            let routed_up = Tensor::randn([e, f, h], opts);
            let routed_down = Tensor::randn([e, h, f], opts);
            let gate_up = GateUp::new(routed_gate.copy(), routed_up.copy(), fused).unwrap();
            let shared = SwiGlu {
                gate_up: GateUp::new(
                    Tensor::randn([s * f, h], opts),
                    Tensor::randn([s * f, h], opts),
                    fused,
                )
                .unwrap(),
                down: Tensor::randn([h, s * f], opts),
                kernel: false,
                gelu_tanh: false,
                gemv: false,
                gemv_swiglu: false,
            };
            let st = SharedAsExperts::stack(&gate_up, &routed_down, &shared)
                .unwrap()
                .expect("stackable");
            assert_eq!(st.count, s);
            let x = Tensor::randn([5, h], opts);
            let want = shared.forward(&x).unwrap();
            let mut got = Tensor::zeros([5, h], opts);
            for j in e..e + s {
                let (gate, up) = match &st.gate_up {
                    GateUp::Fused(w) => (w.get(j).narrow(0, 0, f), w.get(j).narrow(0, f, f)),
                    GateUp::Split { gate, up } => (gate.get(j), up.get(j)),
                };
                let act = x.matmul(&gate.tr()).silu() * x.matmul(&up.tr());
                got += act.matmul(&st.w_down.get(j).tr());
            }
            let err = (&got - &want).abs().max().double_value(&[]);
            assert!(
                err < 1e-9,
                "fused {fused}: shared MLP vs its experts: {err}"
            );
            let (routed, down) = st.routed(e).unwrap();
            assert!(down.equal(&routed_down));
            match routed {
                GateUp::Fused(w) => {
                    assert!(w.equal(&Tensor::cat(&[&routed_gate, &routed_up], 1)));
                }
                GateUp::Split { gate, up } => {
                    assert!(gate.equal(&routed_gate) && up.equal(&routed_up));
                }
            }
        }
    }

    /// A shared intermediate that is not a multiple of the routed width is left alone.
    #[test]
    fn shared_experts_of_another_width_are_not_stacked() {
        let opts = (Kind::Float, Device::Cpu);
        let gate_up = GateUp::new(
            Tensor::zeros([2, 4, 6], opts),
            Tensor::zeros([2, 4, 6], opts),
            true,
        )
        .unwrap();
        let shared = SwiGlu {
            gate_up: GateUp::new(
                Tensor::zeros([6, 6], opts),
                Tensor::zeros([6, 6], opts),
                true,
            )
            .unwrap(),
            down: Tensor::zeros([6, 6], opts),
            kernel: false,
            gelu_tanh: false,
            gemv: false,
            gemv_swiglu: false,
        };
        let st = SharedAsExperts::stack(&gate_up, &Tensor::zeros([2, 6, 4], opts), &shared);
        assert!(st.unwrap().is_none());
    }
}
