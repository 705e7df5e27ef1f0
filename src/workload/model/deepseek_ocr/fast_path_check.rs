//! Correctness of the fast path against the eager path: every `runtime.optim` switch alone, and
//! all of them together with the fixed-shape (CUDA-graph) decode step, run the same seeded
//! decoder on the same left-padded prompts. Decode is teacher-forced with the eager tokens, so
//! each step compares like with like: greedy tokens must be identical in fp32, and logits must
//! stay within a relative tolerance in bf16. The CPU tests run it on the tiny architecture; on a
//! GPU `llmprof debug fast-path` runs it at full size, where the graphs are really captured.

use super::graph_decode::{DecodeSession, StepPath};
use super::optim::ModelOptim;
use super::{ArchConfig, DeepseekOcr, Part, PromptRow, Weights};
use anyhow::Result;
use llmprof::region::NoopObserver;
use serde::Serialize;
use tch::{Device, Kind, Tensor};

/// Largest |logit difference| / largest |eager logit| over all steps allowed in bf16.
pub const BF16_REL_TOLERANCE: f64 = 3e-2;

/// One variant against the eager reference.
#[derive(Debug, Clone, Serialize)]
pub struct VariantCheck {
    pub variant: String,
    pub dtype: String,
    pub steps: usize,
    /// Steps (prefill's next token included) whose greedy token differs from the eager one.
    pub token_mismatches: usize,
    pub first_mismatch: Option<usize>,
    pub max_rel_logit_diff: f64,
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

/// Seeded decoder weights, made once and shared by every variant (libtorch's generator is
/// global, so regenerating them per variant is only reproducible without concurrent users).
fn decoder_weights(cfg: &ArchConfig, seed: i64, device: Device, kind: Kind) -> Result<Weights> {
    Weights::synthetic(cfg, &[Part::Decoder], seed, device, kind)
}

/// Runs every variant against the eager reference in `kind` for `steps` decode steps.
pub fn check(
    cfg: &ArchConfig,
    device: Device,
    kind: Kind,
    seed: i64,
    prompts: &[Vec<i64>],
    steps: usize,
    kv_bucket: i64,
) -> Result<Vec<VariantCheck>> {
    let weights = decoder_weights(cfg, seed, device, kind)?;
    let reference = {
        let m = DeepseekOcr::load_with(weights.shallow_clone(), cfg, &ModelOptim::EAGER)?;
        run(&m, StepPath::Eager, prompts, steps, None)?
    };
    let dtype = if kind == Kind::BFloat16 {
        "bf16"
    } else {
        "fp32"
    };
    let mut out = Vec::new();
    for (name, optim, path) in variants(kv_bucket) {
        let m = DeepseekOcr::load_with(weights.shallow_clone(), cfg, &optim)?;
        let t = run(&m, path, prompts, steps, Some(&reference.tokens))?;
        drop(m);
        let mismatched: Vec<usize> = (0..t.tokens.len())
            .filter(|&i| t.tokens[i] != reference.tokens[i])
            .collect();
        let mut rel: f64 = 0.0;
        for (a, b) in t.logits.iter().zip(&reference.logits) {
            let scale = b.f_abs()?.f_max()?.f_double_value(&[])?.max(1e-30);
            let diff = a.f_sub(b)?.f_abs()?.f_max()?.f_double_value(&[])?;
            rel = rel.max(diff / scale);
        }
        let passed = if kind == Kind::Float {
            mismatched.is_empty()
        } else {
            rel <= BF16_REL_TOLERANCE
        };
        out.push(VariantCheck {
            variant: name,
            dtype: dtype.into(),
            steps,
            token_mismatches: mismatched.len(),
            first_mismatch: mismatched.first().copied(),
            max_rel_logit_diff: rel,
            graphs_captured: t.graphs_captured,
            passed,
        });
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
    fn every_switch_matches_eager_for_64_greedy_steps_in_fp32() {
        let cfg = ArchConfig::tiny();
        // Two rows of different lengths: left padding, masks and per-row positions matter.
        let p = prompts(&[23, 9], cfg.decoder.vocab_size, 1);
        // A 16-slot bucket makes the fixed-shape step cross five KV windows.
        let checks = check(&cfg, Device::Cpu, Kind::Float, 5, &p, 64, 16).unwrap();
        assert_eq!(checks.len(), variants(16).len());
        for c in &checks {
            assert!(c.passed, "{c:?}");
            assert!(c.max_rel_logit_diff < 1e-4, "{c:?}");
        }
    }

    #[test]
    fn fast_path_logits_stay_within_bf16_tolerance() {
        let cfg = ArchConfig::tiny();
        let p = prompts(&[17, 30], cfg.decoder.vocab_size, 2);
        let checks = check(&cfg, Device::Cpu, Kind::BFloat16, 9, &p, 16, 8).unwrap();
        for c in &checks {
            assert!(c.passed, "{c:?}");
        }
    }

    #[test]
    fn a_session_reuses_its_cache_across_requests_of_other_lengths() {
        let cfg = ArchConfig::tiny();
        let w = decoder_weights(&cfg, 3, Device::Cpu, Kind::Float).unwrap();
        let m = DeepseekOcr::load_with(w.shallow_clone(), &cfg, &ModelOptim::FAST).unwrap();
        let eager = DeepseekOcr::load_with(w, &cfg, &ModelOptim::EAGER).unwrap();
        let path = StepPath::Graph { kv_bucket: 8 };
        let mut session = DecodeSession::new(&m, path).unwrap();
        for lens in [[20usize, 5], [7, 12], [20, 5]] {
            let p = prompts(&lens, cfg.decoder.vocab_size, lens[0] as u64);
            let want = run(&eager, StepPath::Eager, &p, 12, None).unwrap().tokens;
            let rows: Vec<PromptRow> = p.iter().map(|ids| PromptRow { ids, image: None }).collect();
            let gen = super::super::generate::GenerateConfig {
                max_new_tokens: 13,
                no_repeat: super::super::generate::NoRepeatNgram::Off,
                force_max_new_tokens: true,
                eos_check_interval: 4,
                sync_free_decode: true,
            };
            let got =
                super::super::generate::generate_with(&mut session, &m, &rows, &gen, &NoopObserver)
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
