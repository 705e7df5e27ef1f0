//! The fast-path check (`engine::fast_path_check`) on DeepSeek-OCR's decoder: seeded
//! decoder-only weights, every switch including `grouped_moe`.
use crate::engine::fast_path_check::{self, CheckSubject, VariantCheck};
use crate::models::deepseek_ocr::Switches;
use crate::models::deepseek_ocr::{ArchConfig, DeepseekOcr, Part, Weights};
use anyhow::Result;
use tch::{Device, Kind};

/// DeepSeek-OCR's decoder of `cfg` with seeded weights on `device`.
pub struct Subject {
    pub cfg: ArchConfig,
    pub device: Device,
    pub seed: i64,
}

impl CheckSubject for Subject {
    type Own = llmprof::model::deepseek_ocr::DeepseekOcrOptim;
    type Weights = Weights;
    type Model = DeepseekOcr;
    fn weights_f32(&self) -> Result<Weights> {
        Weights::synthetic(
            &self.cfg,
            &[Part::Decoder],
            self.seed,
            self.device,
            Kind::Float,
        )
    }
    fn to_kind(&self, w: &Weights, kind: Kind) -> Result<Weights> {
        w.to_kind(kind)
    }
    fn build(&self, w: &Weights, optim: &Switches) -> Result<DeepseekOcr> {
        DeepseekOcr::load_with(w.shallow_clone(), &self.cfg, optim)
    }
}

/// Every variant against eager on `cfg`'s decoder (see [`fast_path_check::check`]).
pub fn check(
    subject: &Subject,
    prompts: &[Vec<i64>],
    steps: usize,
    kv_bucket: i64,
) -> Result<Vec<VariantCheck>> {
    fast_path_check::check(subject, prompts, steps, kv_bucket)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::fast_path_check::{prompts, rel_l2_error, run, variants};
    use crate::engine::graph_decode::{DecodeSession, StepPath};
    use crate::models::deepseek_ocr::PromptRow;
    use llmprof::region::NoopObserver;

    #[test]
    fn every_switch_matches_eager_in_fp32_and_keeps_bf16_accuracy() {
        let cfg = ArchConfig::tiny();
        // Two rows of different lengths: left padding, masks and per-row positions matter.
        let p = prompts(
            &[23, 9],
            cfg.decoder.vocab_size,
            1,
            &[cfg.tokens.image_token_id],
        );
        // A 16-slot bucket makes the fixed-shape step cross five KV windows.
        let checks = check(
            &Subject {
                cfg: cfg.clone(),
                device: Device::Cpu,
                seed: 5,
            },
            &p,
            64,
            16,
        )
        .unwrap();
        let variants = variants::<llmprof::model::deepseek_ocr::DeepseekOcrOptim>(16);
        // Every switch of the decoder's table, the MoE ones included, and all together.
        assert_eq!(variants.len(), 19);
        assert_eq!(checks.len(), 2 * variants.len());
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
        let p = prompts(
            &[12],
            cfg.decoder.vocab_size,
            4,
            &[cfg.tokens.image_token_id],
        );
        let trace = |seed: i64| {
            let s = Subject {
                cfg: cfg.clone(),
                device: Device::Cpu,
                seed,
            };
            let m = s
                .build(&s.weights_f32().unwrap(), &Switches::eager())
                .unwrap();
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
        let w = Subject {
            cfg: cfg.clone(),
            device: Device::Cpu,
            seed: 3,
        }
        .weights_f32()
        .unwrap();
        let m = DeepseekOcr::load_with(w.shallow_clone(), &cfg, &Switches::fast()).unwrap();
        let eager = DeepseekOcr::load_with(w, &cfg, &Switches::eager()).unwrap();
        let path = StepPath::Graph { kv_bucket: 8 };
        let mut session = DecodeSession::new(&m, path).unwrap();
        for lens in [[20usize, 5], [7, 12], [20, 5]] {
            let p = prompts(
                &lens,
                cfg.decoder.vocab_size,
                lens[0] as u64,
                &[cfg.tokens.image_token_id],
            );
            let want = run(&eager, StepPath::Eager, &p, 12, None).unwrap().tokens;
            let rows: Vec<PromptRow> = p.iter().map(|ids| PromptRow { ids, image: None }).collect();
            let gen = llmprof::model::GenerateConfig {
                max_new_tokens: 13,
                no_repeat: llmprof::model::NoRepeatNgram::Off,
                force_max_new_tokens: true,
                eos_check_interval: 4,
                sync_free_decode: true,
                argmax_kernel: true,
                replay_tokens: None,
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
