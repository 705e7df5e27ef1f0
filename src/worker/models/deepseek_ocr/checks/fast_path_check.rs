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
//! The CPU tests run it on the tiny architecture; on a GPU `llmprof debug fast-path` runs it at
//! full size, where the graphs are really captured.

use crate::models::deepseek_ocr::decode::graph_decode::{DecodeSession, StepPath};
use crate::models::deepseek_ocr::optim::ModelOptim;
use crate::models::deepseek_ocr::{ArchConfig, DeepseekOcr, Part, PromptRow, Weights};
use anyhow::Result;
use llmprof::dtype::Dtype;
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

/// The variants checked: each switch alone on top of the eager baseline, then everything on
/// with the graph step path over windows of `kv_bucket` slots.
pub fn variants(kv_bucket: i64) -> Vec<(String, ModelOptim, StepPath)> {
    let e = ModelOptim::EAGER;
    vec![
        (
            "fused_projections".into(),
            ModelOptim {
                fused_projections: true,
                ..e
            },
            StepPath::Eager,
        ),
        (
            "grouped_moe".into(),
            ModelOptim {
                grouped_moe: true,
                ..e
            },
            StepPath::Eager,
        ),
        (
            "sdpa".into(),
            ModelOptim { sdpa: true, ..e },
            StepPath::Eager,
        ),
        (
            "static_kv_cache".into(),
            ModelOptim {
                static_kv_cache: true,
                ..e
            },
            StepPath::Eager,
        ),
        (
            "fused_rms_norm".into(),
            ModelOptim {
                fused_rms_norm: true,
                ..e
            },
            StepPath::Eager,
        ),
        (
            "all+cuda_graph".into(),
            ModelOptim::FAST,
            StepPath::Graph { kv_bucket },
        ),
    ]
}

/// Greedy tokens [steps+1][B] and fp32 logits per step (on the CPU) of a teacher-forced run.
struct Trace {
    tokens: Vec<Vec<i64>>,
    logits: Vec<Tensor>,
    graphs_captured: usize,
}

fn run(
    model: &DeepseekOcr,
    path: StepPath,
    prompts: &[Vec<i64>],
    steps: usize,
    forced: Option<&[Vec<i64>]>,
) -> Result<Trace> {
    let obs = NoopObserver;
    let rows: Vec<PromptRow> = prompts
        .iter()
        .map(|p| PromptRow {
            ids: p,
            image: None,
        })
        .collect();
    let longest = prompts.iter().map(Vec::len).max().unwrap_or(0);
    let mut session = DecodeSession::new(model, path)?;
    let cache = session.begin(model, rows.len() as i64, (longest + steps + 1) as i64)?;
    let mut logits = model.prefill(&rows, cache, &obs)?;
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

/// Seeded fp32 decoder weights, made once and shared by every variant (libtorch's generator
/// is global, so regenerating them per variant is only reproducible without concurrent users).
fn decoder_weights(cfg: &ArchConfig, seed: i64, device: Device) -> Result<Weights> {
    Weights::synthetic(cfg, &[Part::Decoder], seed, device, Kind::Float)
}

/// Relative L2 error ‖a − b‖ / ‖b‖ over the logits of all steps of two traces (a max-based
/// measure is dominated by single outliers and too noisy to compare roundings).
fn rel_l2_error(a: &Trace, b: &Trace) -> Result<f64> {
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

/// Runs every variant in fp32 and in bf16 against the fp32 eager reference for `steps` decode
/// steps.
pub fn check(
    cfg: &ArchConfig,
    device: Device,
    seed: i64,
    prompts: &[Vec<i64>],
    steps: usize,
    kv_bucket: i64,
) -> Result<Vec<VariantCheck>> {
    let w32 = decoder_weights(cfg, seed, device)?;
    let reference = {
        let m = DeepseekOcr::load_with(w32.shallow_clone(), cfg, &ModelOptim::EAGER)?;
        run(&m, StepPath::Eager, prompts, steps, None)?
    };
    let forced = Some(&reference.tokens[..]);
    let mut out = Vec::new();
    for dtype in [Dtype::F32, Dtype::Bf16] {
        let kind = crate::models::device::kind(dtype);
        let w = if kind == Kind::Float {
            w32.shallow_clone()
        } else {
            w32.to_kind(kind)?
        };
        let eager_err = if kind == Kind::Float {
            None
        } else {
            let m = DeepseekOcr::load_with(w.shallow_clone(), cfg, &ModelOptim::EAGER)?;
            Some(rel_l2_error(
                &run(&m, StepPath::Eager, prompts, steps, forced)?,
                &reference,
            )?)
        };
        for (name, optim, path) in variants(kv_bucket) {
            let m = DeepseekOcr::load_with(w.shallow_clone(), cfg, &optim)?;
            let t = run(&m, path, prompts, steps, forced)?;
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

/// Left-padded text prompts of `lens` tokens, ids drawn from a seeded stream below `vocab`.
pub fn prompts(lens: &[usize], vocab: i64, seed: u64) -> Vec<Vec<i64>> {
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
                    ((x >> 33) % (vocab as u64 - 1)) as i64 + 1
                })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_switch_matches_eager_in_fp32_and_keeps_bf16_accuracy() {
        let cfg = ArchConfig::tiny();
        // Two rows of different lengths: left padding, masks and per-row positions matter.
        let p = prompts(&[23, 9], cfg.decoder.vocab_size, 1);
        // A 16-slot bucket makes the fixed-shape step cross five KV windows.
        let checks = check(&cfg, Device::Cpu, 5, &p, 64, 16).unwrap();
        assert_eq!(checks.len(), 2 * variants(16).len());
        for c in &checks {
            assert!(c.passed, "{c:?}");
            if c.dtype == "fp32" {
                assert!(c.rel_logit_error < 1e-5, "{c:?}");
            } else {
                // bf16 really rounds: a zero error would mean the bf16 run used fp32 weights.
                assert!(c.eager_bf16_rel_logit_error.unwrap() > 1e-4, "{c:?}");
            }
        }
    }

    #[test]
    fn a_wrong_model_is_far_outside_the_bf16_bound() {
        // What a defect looks like to the measure: another model's logits (different weights)
        // against the reference give an error of order 1, far above the bound times the eager
        // bf16 error (~1e-2).
        let cfg = ArchConfig::tiny();
        let p = prompts(&[12], cfg.decoder.vocab_size, 4);
        let trace = |seed: i64| {
            let w = decoder_weights(&cfg, seed, Device::Cpu).unwrap();
            let m = DeepseekOcr::load_with(w, &cfg, &ModelOptim::EAGER).unwrap();
            run(&m, StepPath::Eager, &p, 8, None).unwrap()
        };
        let (a, b) = (trace(1), trace(2));
        assert_eq!(rel_l2_error(&a, &a).unwrap(), 0.0);
        let e = rel_l2_error(&b, &a).unwrap();
        assert!(e > 0.5, "{e}");
    }

    #[test]
    fn a_session_reuses_its_cache_across_requests_of_other_lengths() {
        let cfg = ArchConfig::tiny();
        let w = decoder_weights(&cfg, 3, Device::Cpu).unwrap();
        let m = DeepseekOcr::load_with(w.shallow_clone(), &cfg, &ModelOptim::FAST).unwrap();
        let eager = DeepseekOcr::load_with(w, &cfg, &ModelOptim::EAGER).unwrap();
        let path = StepPath::Graph { kv_bucket: 8 };
        let mut session = DecodeSession::new(&m, path).unwrap();
        for lens in [[20usize, 5], [7, 12], [20, 5]] {
            let p = prompts(&lens, cfg.decoder.vocab_size, lens[0] as u64);
            let want = run(&eager, StepPath::Eager, &p, 12, None).unwrap().tokens;
            let rows: Vec<PromptRow> = p.iter().map(|ids| PromptRow { ids, image: None }).collect();
            let gen = llmprof::model::GenerateConfig {
                max_new_tokens: 13,
                no_repeat: llmprof::model::NoRepeatNgram::Off,
                force_max_new_tokens: true,
                eos_check_interval: 4,
                sync_free_decode: true,
            };
            let got = crate::models::deepseek_ocr::decode::generate::generate_with(
                &mut session,
                &m,
                &rows,
                &gen,
                &NoopObserver,
            )
            .unwrap();
            for (r, row) in got.tokens.iter().enumerate() {
                let col: Vec<i64> = want.iter().map(|s| s[r]).collect();
                assert_eq!(row, &col, "lens {lens:?} row {r}");
            }
        }
        // One cache for batch 2, resized once (the second request needed no more slots).
        assert!(session.cache().unwrap().capacity() >= 33);
    }
}
