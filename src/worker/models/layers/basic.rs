//! Small building blocks shared by the encoders and the decoder: Linear, LayerNorm, SwiGLU MLP
//! (RMSNorm: rms_norm.rs, re-exported here). Each is loaded by official tensor names from a
//! [`WeightPath`].

use crate::checkpoint::tensors::WeightPath;
use crate::ffi::{kernels_gemv, kernels_vision};
use anyhow::Result;
use llmprof::model::module_work::{ACT, DOWN, GATE_UP};
use llmprof::region::RegionObserver;
use tch::Tensor;

pub use super::gate_up::{silu_mul_halves, silu_mul_last, GateUp, GateUpOut};
pub use super::rms_norm::RmsNorm;

/// `y = x·Wᵀ + b` (weight `[out, in]`).
#[derive(Debug)]
pub struct Linear {
    pub weight: Tensor,
    pub bias: Option<Tensor>,
}

impl Linear {
    /// Loads `{vs}.weight` and, if `with_bias`, `{vs}.bias`.
    pub fn load(vs: &WeightPath, with_bias: bool) -> Result<Self> {
        let weight = vs.get("weight")?;
        let bias = if with_bias {
            Some(vs.get("bias")?)
        } else {
            None
        };
        Ok(Linear { weight, bias })
    }

    pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        Ok(xs.f_linear(&self.weight, self.bias.as_ref())?)
    }
}

/// LayerNorm over the last dim, with affine parameters.
#[derive(Debug)]
pub struct LayerNorm {
    pub weight: Tensor,
    pub bias: Tensor,
    pub eps: f64,
    /// [`LayerNorm::add_forward`] in llmprof's one kernel on a GPU
    /// (`model.optim.add_layer_norm_kernel`).
    pub add_kernel: bool,
}

impl LayerNorm {
    pub fn load(vs: &WeightPath, eps: f64) -> Result<Self> {
        Ok(LayerNorm {
            weight: vs.get("weight")?,
            bias: vs.get("bias")?,
            eps,
            add_kernel: false,
        })
    }

    pub fn with_add_kernel(self, add_kernel: bool) -> Self {
        LayerNorm { add_kernel, ..self }
    }

    /// `x + delta` and its norm: (sum, norm(sum)). In llmprof's one kernel when `add_kernel` is
    /// set and the tensors suit it (CUDA, one dtype, equal shapes, a row width the kernel takes);
    /// else an add and [`LayerNorm::forward`].
    pub fn add_forward(&self, x: &Tensor, delta: &Tensor) -> Result<(Tensor, Tensor)> {
        if self.add_kernel_takes(x, delta)? && x.size() == delta.size() {
            return self.add_kernel(x, delta, None);
        }
        let sum = x.f_add(delta)?;
        let normed = self.forward(&sum)?;
        Ok((sum, normed))
    }

    /// Whether [`LayerNorm::add_forward`] and [`LayerNorm::add_windows_forward`] run llmprof's
    /// kernel for these tensors: `add_kernel` set, CUDA, one dtype, a row width it takes.
    pub fn add_kernel_takes(&self, x: &Tensor, delta: &Tensor) -> Result<bool> {
        let kind = x.kind();
        Ok(self.add_kernel
            && x.device().is_cuda()
            && [delta.kind(), self.weight.kind(), self.bias.kind()] == [kind; 3]
            && kernels_vision::add_layer_norm_fits(kind, self.weight.size1()?))
    }

    /// [`LayerNorm::add_forward`] of the grid `x` [B,H,W,C] and `delta` holding the same tokens
    /// cut into `win` windows over the grid padded to their multiples, [B·windows, win_h·win_w,
    /// C]: the kernel reads each row's delta where the window put it, so the windows need no
    /// merge copy. Only where [`LayerNorm::add_kernel_takes`] holds.
    pub fn add_windows_forward(
        &self,
        x: &Tensor,
        delta: &Tensor,
        win: (i64, i64),
    ) -> Result<(Tensor, Tensor)> {
        anyhow::ensure!(
            self.add_kernel_takes(x, delta)?,
            "a windowed residual add needs the add + LayerNorm kernel (model.optim.add_layer_norm_kernel on a GPU)"
        );
        self.add_kernel(x, delta, Some(win))
    }

    /// The add + LayerNorm kernel on contiguous `x` and `delta` (`delta_windows`: see
    /// [`kernels_vision::add_layer_norm`]).
    fn add_kernel(
        &self,
        x: &Tensor,
        delta: &Tensor,
        delta_windows: Option<(i64, i64)>,
    ) -> Result<(Tensor, Tensor)> {
        let (x, delta) = (x.f_contiguous()?, delta.f_contiguous()?);
        Ok(kernels_vision::add_layer_norm(
            &x,
            &delta,
            (&self.weight, &self.bias),
            self.eps,
            delta_windows,
        )?)
    }

    pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let c = self.weight.size1()?;
        Ok(xs.f_layer_norm([c], Some(&self.weight), Some(&self.bias), self.eps, true)?)
    }
}

/// SwiGLU MLP: `down(silu(gate(x)) ⊙ up(x))`, bias-free (dense layer, shared experts).
#[derive(Debug)]
pub struct SwiGlu {
    pub gate_up: GateUp,
    pub down: Tensor,
    /// The activation in llmprof's kernel on a GPU (`runtime.optim.swiglu_kernel`).
    pub kernel: bool,
    /// GELU (tanh approximation) on the gate instead of SiLU: GeGLU (Gemma).
    pub gelu_tanh: bool,
    /// Its projections in llmprof's GEMV kernel where it takes them (`runtime.optim.gemv_kernel`).
    pub gemv: bool,
    /// With `gemv`, `kernel` and fused projections: the activation in the gate/up GEMV where it
    /// takes the call (one row: decode at batch 1; `runtime.optim.gemv_swiglu`).
    pub gemv_swiglu: bool,
}

impl SwiGlu {
    /// Loads `gate_proj`, `up_proj`, `down_proj`; `fused` concatenates gate and up.
    pub fn load(vs: &WeightPath, fused: bool) -> Result<Self> {
        Ok(SwiGlu {
            gate_up: GateUp::new(
                vs.take("gate_proj.weight")?,
                vs.take("up_proj.weight")?,
                fused,
            )?,
            down: vs.take("down_proj.weight")?,
            kernel: false,
            gelu_tanh: false,
            gemv: false,
            gemv_swiglu: false,
        })
    }

    /// Loads `gate_up_proj` ([gate; up] as one weight, Phi-3) and `down_proj`; `fused` keeps
    /// gate and up in one matmul.
    pub fn load_packed(vs: &WeightPath, fused: bool) -> Result<Self> {
        let w = vs.take("gate_up_proj.weight")?;
        let f = w.size()[0] / 2;
        Ok(SwiGlu {
            gate_up: GateUp::new(w.f_narrow(0, 0, f)?, w.f_narrow(0, f, f)?, fused)?,
            down: vs.take("down_proj.weight")?,
            kernel: false,
            gelu_tanh: false,
            gemv: false,
            gemv_swiglu: false,
        })
    }

    /// This MLP with its activation in llmprof's kernel on a GPU when `on`.
    pub fn with_kernel(self, on: bool) -> Self {
        SwiGlu { kernel: on, ..self }
    }

    /// This MLP with its projections in llmprof's GEMV kernel where it takes them, when `on`.
    pub fn with_gemv(self, on: bool) -> Self {
        SwiGlu { gemv: on, ..self }
    }

    /// This MLP with its activation in the gate/up GEMV where it takes the call, when `on`.
    pub fn with_gemv_swiglu(self, on: bool) -> Self {
        SwiGlu {
            gemv_swiglu: on,
            ..self
        }
    }

    /// What the gate/up GEMV applies: SwiGLU where `gemv_swiglu`, `gemv` and `kernel` are on
    /// and the MLP is SwiGLU (not GeGLU); nothing otherwise.
    pub fn gemv_act(&self) -> kernels_gemv::GemvAct {
        match self.gemv_swiglu && self.gemv && self.kernel && !self.gelu_tanh {
            true => kernels_gemv::GemvAct::SwiGlu,
            false => kernels_gemv::GemvAct::None,
        }
    }

    /// This MLP as GeGLU: GELU (tanh) on the gate; llmprof's SiLU kernel is not used.
    pub fn with_gelu_tanh(self, on: bool) -> Self {
        SwiGlu {
            gelu_tanh: on,
            kernel: self.kernel && !on,
            ..self
        }
    }

    /// The gate's activation times up.
    fn activate(&self, gu: GateUpOut) -> Result<Tensor> {
        match self.gelu_tanh {
            true => gu.gelu_tanh_mul(),
            false => gu.act(self.kernel),
        }
    }

    pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let gu = self.gate_up.project(xs, self.gemv, self.gemv_act())?;
        self.down(&self.activate(gu)?)
    }

    fn down(&self, a: &Tensor) -> Result<Tensor> {
        Ok(kernels_gemv::linear_or_torch(
            a, &self.down, None, self.gemv,
        )?)
    }

    /// [`SwiGlu::forward`] with its parts marked as the decoder MLP's modules (`gate_up`, `act`,
    /// `down`); the same kernels in the same order.
    pub fn forward_marked(&self, xs: &Tensor, obs: &dyn RegionObserver) -> Result<Tensor> {
        let gu = {
            let _m = obs.enter_module(GATE_UP, None);
            self.gate_up.project(xs, self.gemv, self.gemv_act())?
        };
        self.act_down_marked(gu, obs)
    }

    /// The fused gate/up weight [2F, H] where the projections run in llmprof's GEMV (a folded
    /// add + RMSNorm may project with it, [`SwiGlu::act_down_marked`] then taking the output).
    pub fn fused_gate_up(&self) -> Option<&Tensor> {
        match (&self.gate_up, self.gemv) {
            (GateUp::Fused(w), true) => Some(w),
            _ => None,
        }
    }

    /// The activation and `down` of [`SwiGlu::forward_marked`] from the gate/up projection.
    pub fn act_down_marked(&self, gu: GateUpOut, obs: &dyn RegionObserver) -> Result<Tensor> {
        let a = match gu {
            // Activated in the gate/up GEMV: nothing runs under `act`.
            GateUpOut::Activated(a) => a,
            gu => {
                let _m = obs.enter_module(ACT, None);
                self.activate(gu)?
            }
        };
        let _m = obs.enter_module(DOWN, None);
        self.down(&a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ffi::kernels;
    use crate::test_util::values_differing;
    use tch::{Device, Kind};

    /// The SwiGLU kernel against silu and the multiply over the halves in libtorch, bit for bit,
    /// in fp32 and bf16, for decode-sized rows (the element kernel) and prefill-sized ones: halves
    /// of 896 (the 16-byte vector kernel from 1,171 rows), of 897 and an input starting off a
    /// 16-byte boundary (the element kernel); the kernel each call took is checked too.
    #[test]
    #[ignore = "needs a CUDA GPU and a build with llmprof's kernels: cargo test -- --ignored on the GPU machine"]
    fn silu_mul_kernel_equals_libtorch_on_a_gpu() {
        assert!(tch::Cuda::is_available(), "no CUDA device");
        let dev = Device::Cuda(0);
        for kind in [Kind::Float, Kind::BFloat16] {
            for rows in [1i64, 32, 1000, 1500] {
                for (f, offset) in [(896i64, 0i64), (897, 0), (896, 1)] {
                    let flat = Tensor::randn([rows * 2 * f + offset], (kind, dev)) * 4.0;
                    let gu = flat.narrow(0, offset, rows * 2 * f).view([rows, 2 * f]);
                    let got = silu_mul_last(&gu, true).unwrap();
                    let want = silu_mul_halves(&gu, -1).unwrap();
                    let differ = values_differing(&got, &want);
                    assert_eq!(
                        differ, 0,
                        "{kind:?}, {rows} rows of 2 × {f}, offset {offset}: {differ} values differ"
                    );
                    let vectors = kernels::silu_mul_uses_vectors(&gu, &got).unwrap();
                    let expected = rows * f >= 1 << 20 && f == 896 && offset == 0;
                    assert_eq!(
                        vectors, expected,
                        "{kind:?}, {rows} rows of 2 × {f}, offset {offset}"
                    );
                }
            }
        }
    }

    fn layer_norm_on(c: i64, kind: Kind, dev: Device, add_kernel: bool) -> LayerNorm {
        LayerNorm {
            weight: Tensor::rand([c], (kind, dev)) + 0.5,
            bias: Tensor::randn([c], (kind, dev)) * 0.1,
            eps: 1e-6,
            add_kernel,
        }
    }

    /// Which row widths the add + LayerNorm kernel takes: whole warp-wide passes of 16-byte
    /// vectors, at most eight.
    #[test]
    fn add_layer_norm_kernel_takes_whole_vector_passes() {
        use crate::ffi::kernels_vision::add_layer_norm_fits;
        for (kind, hidden, fits) in [
            (Kind::BFloat16, 768, true),
            (Kind::BFloat16, 1024, true),
            (Kind::BFloat16, 2048, true),
            (Kind::BFloat16, 2304, false),
            (Kind::BFloat16, 1000, false),
            (Kind::Float, 768, true),
            (Kind::Float, 1024, true),
            (Kind::Float, 1280, false),
            (Kind::Half, 256, true),
            (Kind::Float, 0, false),
        ] {
            assert_eq!(add_layer_norm_fits(kind, hidden), fits, "{kind:?} {hidden}");
        }
    }

    /// Off a GPU the switch changes nothing: add_forward is the add and libtorch's LayerNorm.
    #[test]
    fn add_layer_norm_off_a_gpu_is_the_add_and_the_norm() {
        let ln = layer_norm_on(768, Kind::Float, Device::Cpu, true);
        let x = Tensor::randn([2, 3, 768], (Kind::Float, Device::Cpu));
        let delta = Tensor::randn([2, 3, 768], (Kind::Float, Device::Cpu));
        let (sum, normed) = ln.add_forward(&x, &delta).unwrap();
        let want_sum = &x + &delta;
        assert!(sum.equal(&want_sum));
        assert!(normed.equal(&ln.forward(&want_sum).unwrap()));
    }

    /// The add + LayerNorm kernel against an add and libtorch's LayerNorm: the sum bit for bit;
    /// the norm within 4 ulp of the dtype plus 1e-5 (the statistics add in another order; near
    /// zero, where weight·x̂ and the bias cancel, the fp32 difference is absolute), for SAM's
    /// and CLIP's widths in fp32 and bf16; a width the kernel does not take falls back.
    #[test]
    #[ignore = "needs a CUDA GPU and a build with llmprof's kernels: cargo test -- --ignored on the GPU machine"]
    fn add_layer_norm_kernel_matches_libtorch_on_a_gpu() {
        assert!(tch::Cuda::is_available(), "no CUDA device");
        let dev = Device::Cuda(0);
        for (kind, ulp) in [
            (Kind::Float, 2f64.powi(-23)),
            (Kind::BFloat16, 2f64.powi(-7)),
        ] {
            for (shape, c) in [
                (vec![1i64, 768], 768i64),
                (vec![2, 5, 7, 768], 768),
                (vec![3000, 768], 768),
                (vec![9, 101, 1024], 1024),
                (vec![4, 1280], 1280),
            ] {
                let ln = layer_norm_on(c, kind, dev, true);
                let x = Tensor::randn(shape.as_slice(), (kind, dev)) * 2.0 + 0.3;
                let delta = Tensor::randn(shape.as_slice(), (kind, dev));
                let (sum, out) = ln.add_forward(&x, &delta).unwrap();
                let want_sum = &x + &delta;
                assert!(sum.equal(&want_sum), "{kind:?} {shape:?}: sums differ");
                let want = ln.forward(&want_sum).unwrap().to_kind(Kind::Float);
                let diff = (out.to_kind(Kind::Float) - &want).abs();
                let over = diff
                    .gt_tensor(&(want.abs() * (4.0 * ulp) + 1e-5))
                    .sum(Kind::Int64)
                    .int64_value(&[]);
                assert_eq!(over, 0, "{kind:?} {shape:?}: {over} values off");
            }
        }
    }

    /// The add + RMSNorm kernel against an add and libtorch's fused RMSNorm: the sum bit for
    /// bit; the norm within 4 ulp of the dtype (the mean square adds in another order, which
    /// moves the fp32 scale by a few ulp; in bf16 that flips at most one rounding), in fp32 and
    /// bf16. Every grid the launcher picks: rows of whole 16-byte vectors a block of 256 threads
    /// per row (1, 32, 128, 900 and a prefill's 1,100 rows; 1,280, 4,096 and, in fp32, 8,192
    /// channels: one to eight vectors a thread), rows that are not whole vectors the scalar
    /// block per row (1,004 channels).
    #[test]
    #[ignore = "needs a CUDA GPU and a build with llmprof's kernels: cargo test -- --ignored on the GPU machine"]
    fn add_rms_norm_kernel_matches_libtorch_on_a_gpu() {
        crate::ffi::kernels::with_each_launch_policy(|| {
            assert!(tch::Cuda::is_available(), "no CUDA device");
            let dev = Device::Cuda(0);
            for (kind, ulp) in [
                (Kind::Float, 2f64.powi(-23)),
                (Kind::BFloat16, 2f64.powi(-7)),
            ] {
                for (rows, hidden) in [
                    (1i64, 1280i64),
                    (32, 1280),
                    (128, 4096),
                    (900, 1280),
                    (900, 4096),
                    (900, 8192),
                    (1100, 1280),
                    (1100, 4096),
                    (900, 1004),
                ] {
                    let x = Tensor::randn([rows, 1, hidden], (kind, dev));
                    let delta = Tensor::randn([rows, 1, hidden], (kind, dev)) * 0.5;
                    let norm = RmsNorm {
                        weight: Tensor::rand([hidden], (kind, dev)) + 0.5,
                        eps: 1e-6,
                        fused: true,
                        add_kernel: true,
                        gemv_fold: false,
                    };
                    let (sum, out) = norm.add_forward(&x, &delta).unwrap();
                    let want_sum = &x + &delta;
                    assert!(
                        sum.equal(&want_sum),
                        "{kind:?}, {rows}x{hidden}: sums differ"
                    );
                    let want = norm.forward(&want_sum).unwrap().to_kind(Kind::Float);
                    let diff = (out.to_kind(Kind::Float) - &want).abs();
                    let over = diff
                        .gt_tensor(&(want.abs() * (4.0 * ulp) + 1e-30))
                        .sum(Kind::Int64)
                        .int64_value(&[]);
                    assert_eq!(
                        over, 0,
                        "{kind:?}, {rows}x{hidden}: {over} values off by more than 4 ulp"
                    );
                }
            }
        });
    }
}
