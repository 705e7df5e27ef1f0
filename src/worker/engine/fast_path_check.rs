//! Correctness of the fast path against the eager path: every `runtime.optim` switch alone, and
//! all of them together with the fixed-shape (CUDA-graph) decode step, run one seeded decoder on
//! the same left-padded prompts. Decode is teacher-forced with the fp32 eager tokens, so each
//! step compares like with like.
//! - fp32: greedy tokens must be identical to eager at every step.
//! - bf16: a variant rounds differently from eager bf16, so comparing the two only measures
//!   rounding noise. The check instead compares both with the fp32 eager logits (the same model
//!   before rounding) and fails when a variant's error exceeds the eager bf16 path's own error
//!   by more than [`BF16_ERROR_GROWTH_MAX`]: an optimisation may round differently, but it may
//!   not make bf16 less accurate.
//!
//! The CPU tests run it on each family's tiny architecture; on a GPU `llmprof debug fast-path`
//! runs it at full size, where the graphs are really captured. A family supplies its seeded
//! fp32 weights, their rounding to another dtype, and the model built from weights with a set
//! of switches.

use super::causal_lm::CausalLm;
use super::graph_decode::{DecodeSession, StepPath};
use super::switches::Switches;
use anyhow::Result;
use llmprof::dtype::Dtype;
use llmprof::optim::FamilyOptions;
use llmprof::region::NoopObserver;
use serde::Serialize;
use tch::{Device, Kind, Tensor};

/// Largest allowed ratio of a bf16 variant's logit error to the eager bf16 error (both against
/// fp32 eager). Correct variants only round differently, and on the tiny model their ratio
/// spread over 0.68–1.73 across seeds; a real defect (wrong mask, position or weight) gives
/// errors of order 1, far above.
pub const BF16_ERROR_GROWTH_MAX: f64 = 2.0;

/// One variant against the eager reference.
#[derive(Debug, Clone, Serialize)]
pub struct VariantCheck {
    pub variant: String,
    pub dtype: String,
    pub steps: usize,
    /// Steps (prefill's next token included) whose greedy token differs from fp32 eager.
    pub token_mismatches: usize,
    pub first_mismatch: Option<usize>,
    /// ‖logits − fp32 eager logits‖ / ‖fp32 eager logits‖ over all steps.
    pub rel_logit_error: f64,
    /// bf16 only: the same measure for the eager bf16 path (the rounding error it starts from).
    pub eager_bf16_rel_logit_error: Option<f64>,
    /// Graphs captured (0 without a GPU or on the eager step path).
    pub graphs_captured: usize,
    pub passed: bool,
}

/// The variants checked: each switch alone on top of the eager presets (with the switches it
/// needs), then the fast presets with the graph step path over windows of `kv_bucket` slots.
/// A switch the family does not have is skipped (a dense model has no `grouped_moe`), and a
/// helper switch it does not have is left out of the variants that name it.
pub fn variants<F: FamilyOptions>(kv_bucket: i64) -> Vec<(String, Switches<F>, StepPath)> {
    let graph = StepPath::Graph { kv_bucket };
    // (variant, the switch it checks, the switches it turns on, step path)
    let table: [(&str, &str, &[&str], StepPath); 18] = [
        (
            "fused_projections",
            "fused_projections",
            &["fused_projections"],
            StepPath::Eager,
        ),
        (
            "grouped_moe",
            "grouped_moe",
            &["grouped_moe"],
            StepPath::Eager,
        ),
        (
            "moe_routing_kernel",
            "moe_routing_kernel",
            &["grouped_moe", "moe_routing_kernel"],
            StepPath::Eager,
        ),
        ("sdpa", "sdpa", &["sdpa"], StepPath::Eager),
        (
            "static_kv_cache",
            "static_kv_cache",
            &["static_kv_cache"],
            StepPath::Eager,
        ),
        (
            "fused_rms_norm",
            "fused_rms_norm",
            &["fused_rms_norm"],
            StepPath::Eager,
        ),
        (
            "swiglu_kernel",
            "swiglu_kernel",
            &["fused_projections", "swiglu_kernel"],
            StepPath::Eager,
        ),
        (
            "add_rms_norm_kernel",
            "add_rms_norm_kernel",
            &["fused_rms_norm", "add_rms_norm_kernel"],
            StepPath::Eager,
        ),
        (
            "gemv_kernel",
            "gemv_kernel",
            &["gemv_kernel"],
            StepPath::Eager,
        ),
        (
            "moe_combine_kernel",
            "moe_combine_kernel",
            &["grouped_moe", "moe_routing_kernel", "moe_combine_kernel"],
            StepPath::Eager,
        ),
        (
            "moe_shared_experts_fused",
            "moe_shared_experts_fused",
            &[
                "grouped_moe",
                "moe_routing_kernel",
                "moe_combine_kernel",
                "gemv_kernel",
                "moe_shared_experts_fused",
            ],
            StepPath::Eager,
        ),
        // The kernels run in the fixed-shape step only, so these variants take the graph path
        // (which needs the static cache, and for a MoE model the grouped dispatch).
        (
            "rope_kv_kernel+cuda_graph",
            "rope_kv_kernel",
            &[
                "fused_projections",
                "static_kv_cache",
                "grouped_moe",
                "rope_kv_kernel",
            ],
            graph,
        ),
        (
            "decode_attention_kernel+cuda_graph",
            "decode_attention_kernel",
            &["static_kv_cache", "grouped_moe", "decode_attention_kernel"],
            graph,
        ),
        (
            "decode_attention_tensor_cores+cuda_graph",
            "decode_attention_tensor_cores",
            &[
                "static_kv_cache",
                "grouped_moe",
                "decode_attention_kernel",
                "decode_attention_tensor_cores",
            ],
            graph,
        ),
        (
            "gemv_kernel+cuda_graph",
            "gemv_kernel",
            &["static_kv_cache", "grouped_moe", "gemv_kernel"],
            graph,
        ),
        // The fold needs the norm's kernel and, for q/k/v, the RoPE + KV-write kernel's path.
        (
            "gemv_add_rms_norm+cuda_graph",
            "gemv_add_rms_norm",
            &[
                "fused_projections",
                "static_kv_cache",
                "grouped_moe",
                "fused_rms_norm",
                "add_rms_norm_kernel",
                "rope_kv_kernel",
                "gemv_kernel",
                "gemv_add_rms_norm",
            ],
            graph,
        ),
        // The activation folded into the gate/up GEMVs (with the folded norm too: `all`).
        (
            "gemv_swiglu+cuda_graph",
            "gemv_swiglu",
            &[
                "fused_projections",
                "static_kv_cache",
                "grouped_moe",
                "swiglu_kernel",
                "gemv_kernel",
                "gemv_swiglu",
            ],
            graph,
        ),
        // Every kernel it changes the launch of, launched with it.
        (
            "programmatic_launch+cuda_graph",
            "programmatic_launch",
            &[
                "fused_projections",
                "static_kv_cache",
                "grouped_moe",
                "moe_routing_kernel",
                "moe_combine_kernel",
                "fused_rms_norm",
                "add_rms_norm_kernel",
                "swiglu_kernel",
                "rope_kv_kernel",
                "decode_attention_kernel",
                "decode_attention_tensor_cores",
                "gemv_kernel",
                "gemv_add_rms_norm",
                "gemv_swiglu",
                "programmatic_launch",
            ],
            graph,
        ),
    ];
    let eager = Switches::<F>::eager();
    let mut v: Vec<(String, Switches<F>, StepPath)> = table
        .into_iter()
        .filter_map(|(name, checked, on, path)| {
            let (switches, unknown) = eager.with_on(on);
            (!unknown.iter().any(|u| u == checked)).then(|| (name.to_string(), switches, path))
        })
        .collect();
    v.push(("all+cuda_graph".into(), Switches::<F>::fast(), graph));
    v
}

/// Greedy tokens [steps+1][B] and fp32 logits per step (on the CPU) of a teacher-forced run.
pub struct Trace {
    pub tokens: Vec<Vec<i64>>,
    logits: Vec<Tensor>,
    graphs_captured: usize,
}

/// Runs `model` on `prompts` for `steps` decode steps (teacher-forced with `forced` tokens).
pub fn run<M: CausalLm>(
    model: &M,
    path: StepPath,
    prompts: &[Vec<i64>],
    steps: usize,
    forced: Option<&[Vec<i64>]>,
) -> Result<Trace> {
    let obs = NoopObserver;
    let rows: Vec<&[i64]> = prompts.iter().map(Vec::as_slice).collect();
    let longest = prompts.iter().map(Vec::len).max().unwrap_or(0);
    let mut session = DecodeSession::new(model, path)?;
    let cache = session.begin(model, rows.len() as i64, (longest + steps + 1) as i64)?;
    let mut logits = model.prefill_text(&rows, cache, &obs)?;
    let mut trace = Trace {
        tokens: Vec::new(),
        logits: Vec::new(),
        graphs_captured: 0,
    };
    for step in 0..=steps {
        let host = logits.f_to_device(Device::Cpu)?.f_to_kind(Kind::Float)?;
        trace
            .tokens
            .push(Vec::<i64>::try_from(&host.f_argmax(-1, false)?)?);
        trace.logits.push(host);
        if step == steps {
            break;
        }
        let feed = match forced {
            Some(f) => f[step].clone(),
            None => trace.tokens[step].clone(),
        };
        let feed = Tensor::f_from_slice(&feed)?.f_to_device(model.device())?;
        logits = session.step(model, &feed, &obs)?;
    }
    trace.graphs_captured = session.stats.graphs_captured;
    Ok(trace)
}

/// One prompt's last-position logits (fp32, on the CPU) and `greedy_n` greedy tokens, decoded on
/// `path`: what `llmprof debug logits` writes for the parity checks against HF transformers.
pub fn greedy<M: CausalLm>(
    model: &M,
    path: StepPath,
    ids: &[i64],
    greedy_n: usize,
) -> Result<(Tensor, Vec<i64>)> {
    let trace = run(
        model,
        path,
        &[ids.to_vec()],
        greedy_n.saturating_sub(1),
        None,
    )?;
    let prompt = trace.logits[0].f_select(0, 0)?;
    let tokens = trace.tokens.iter().take(greedy_n).map(|t| t[0]).collect();
    Ok((prompt, tokens))
}

/// Relative L2 error ‖a − b‖ / ‖b‖ over the logits of all steps of two traces (a max-based
/// measure is dominated by single outliers and too noisy to compare roundings).
pub fn rel_l2_error(a: &Trace, b: &Trace) -> Result<f64> {
    let (mut diff2, mut norm2) = (0.0, 0.0);
    for (x, y) in a.logits.iter().zip(&b.logits) {
        diff2 += x
            .f_sub(y)?
            .f_square()?
            .f_sum(Kind::Double)?
            .f_double_value(&[])?;
        norm2 += y.f_square()?.f_sum(Kind::Double)?.f_double_value(&[])?;
    }
    Ok((diff2 / norm2.max(1e-300)).sqrt())
}

/// How the check gets a family's model: seeded fp32 weights made once and shared by every
/// variant (libtorch's generator is global, so regenerating them per variant is only
/// reproducible without concurrent users), their copy in another dtype, and a model built from
/// weights with given switches.
pub trait CheckSubject {
    type Weights;
    type Model: CausalLm;
    /// The family's own switches (`model.optim`).
    type Own: FamilyOptions;
    fn weights_f32(&self) -> Result<Self::Weights>;
    fn to_kind(&self, w: &Self::Weights, kind: Kind) -> Result<Self::Weights>;
    fn build(&self, w: &Self::Weights, switches: &Switches<Self::Own>) -> Result<Self::Model>;
}

/// Runs every variant in fp32 and in bf16 against the fp32 eager reference for `steps` decode
/// steps.
pub fn check<S: CheckSubject>(
    subject: &S,
    prompts: &[Vec<i64>],
    steps: usize,
    kv_bucket: i64,
) -> Result<Vec<VariantCheck>> {
    let w32 = subject.weights_f32()?;
    let reference = {
        let m = subject.build(&w32, &Switches::eager())?;
        run(&m, StepPath::Eager, prompts, steps, None)?
    };
    let forced = Some(&reference.tokens[..]);
    let mut out = Vec::new();
    for dtype in [Dtype::F32, Dtype::Bf16] {
        let kind = crate::engine::device::kind(dtype);
        let converted;
        let w = if kind == Kind::Float {
            &w32
        } else {
            converted = subject.to_kind(&w32, kind)?;
            &converted
        };
        let eager_err = if kind == Kind::Float {
            None
        } else {
            let m = subject.build(w, &Switches::eager())?;
            Some(rel_l2_error(
                &run(&m, StepPath::Eager, prompts, steps, forced)?,
                &reference,
            )?)
        };
        for (name, optim, path) in variants::<S::Own>(kv_bucket) {
            crate::ffi::kernels::set_programmatic_launch(optim.engine.programmatic_launch);
            let m = subject.build(w, &optim)?;
            let t = run(&m, path, prompts, steps, forced);
            crate::ffi::kernels::set_programmatic_launch(false);
            let t = t?;
            drop(m);
            let mismatched: Vec<usize> = (0..t.tokens.len())
                .filter(|&i| t.tokens[i] != reference.tokens[i])
                .collect();
            let rel = rel_l2_error(&t, &reference)?;
            let passed = match eager_err {
                None => mismatched.is_empty(),
                Some(e) => rel <= e * BF16_ERROR_GROWTH_MAX,
            };
            out.push(VariantCheck {
                variant: name,
                dtype: dtype.name().into(),
                steps,
                token_mismatches: mismatched.len(),
                first_mismatch: mismatched.first().copied(),
                rel_logit_error: rel,
                eager_bf16_rel_logit_error: eager_err,
                graphs_captured: t.graphs_captured,
                passed,
            });
        }
    }
    Ok(out)
}

/// Left-padded text prompts of `lens` tokens, ids drawn from a seeded stream in 1..vocab. An id in
/// `avoid` (a special id such as `<image>`, which would ask prefill for an image) becomes the
/// next id that is not.
pub fn prompts(lens: &[usize], vocab: i64, seed: u64, avoid: &[i64]) -> Vec<Vec<i64>> {
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    lens.iter()
        .map(|&n| {
            (0..n)
                .map(|_| {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let mut id = ((x >> 33) % (vocab as u64 - 1)) as i64 + 1;
                    while avoid.contains(&id) {
                        id = id % (vocab - 1) + 1;
                    }
                    id
                })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::prompts;

    #[test]
    fn prompts_skip_the_ids_to_avoid_and_change_nothing_else() {
        // A 5-id vocabulary draws every id in 1..5 many times over 200 tokens.
        let free = prompts(&[200], 5, 3, &[]);
        assert!((1..5).all(|id| free[0].contains(&id)), "{free:?}");
        let avoided = prompts(&[200], 5, 3, &[2, 3]);
        assert!(!avoided[0].contains(&2) && !avoided[0].contains(&3));
        for (a, f) in avoided[0].iter().zip(&free[0]) {
            // 2 and 3 move on to 4; every other draw is the same.
            let want = if *f == 2 || *f == 3 { 4 } else { *f };
            assert_eq!(*a, want);
        }
    }
}
