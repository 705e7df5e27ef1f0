//! DeepSeek-OCR's generation: the shared greedy loop (`engine::generate`) with the
//! model's own prefill (vision, then the decoder over the left-padded prompts).
use crate::engine::generate;
use crate::engine::graph_decode::{DecodeSession, StepPath};
use crate::models::deepseek_ocr::{DeepseekOcr, PromptRow};
use anyhow::Result;
use llmprof::model::{GenerateConfig, GenerateOutput};
use llmprof::region::RegionObserver;

/// Greedy generation for a batch of prompts with eager decode steps.
pub fn generate(
    model: &DeepseekOcr,
    rows: &[PromptRow],
    cfg: &GenerateConfig,
    obs: &dyn RegionObserver,
) -> Result<GenerateOutput> {
    let mut session = DecodeSession::new(model, StepPath::Eager)?;
    generate_with(&mut session, model, rows, cfg, obs)
}

/// Greedy generation for a batch of prompts, decode steps run by `session` (which keeps KV
/// caches and captured graphs across calls).
pub fn generate_with(
    session: &mut DecodeSession,
    model: &DeepseekOcr,
    rows: &[PromptRow],
    cfg: &GenerateConfig,
    obs: &dyn RegionObserver,
) -> Result<GenerateOutput> {
    let ids: Vec<&[i64]> = rows.iter().map(|r| r.ids).collect();
    generate::generate_with(
        session,
        model,
        &ids,
        |cache| model.prefill(rows, cache, obs),
        cfg,
        obs,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::deepseek_ocr::{ArchConfig, Part, Weights};
    use llmprof::model::NoRepeatNgram;
    use llmprof::region::NoopObserver;
    use std::collections::HashSet;
    use tch::{Device, Kind};

    /// 24 forced tokens under the windowed rule with n = 1 over the last 16 ids, which fires
    /// (the tiny model repeats ids within 24 tokens), on the device loop.
    fn windowed_rule() -> GenerateConfig {
        GenerateConfig {
            max_new_tokens: 24,
            no_repeat: NoRepeatNgram::Window {
                n: 1,
                window: 16,
                exempt: vec![296],
            },
            force_max_new_tokens: true,
            eos_check_interval: 2,
            sync_free_decode: true,
            argmax_kernel: false,
            replay_tokens: None,
        }
    }

    #[test]
    fn generation_modes_agree_and_stop() {
        let m = DeepseekOcr::synthetic(&ArchConfig::tiny(), 5, Device::Cpu, Kind::Float).unwrap();
        let obs = NoopObserver;
        let a: Vec<i64> = vec![0, 10, 11, 12, 13, 14];
        let bb: Vec<i64> = vec![0, 20, 21];
        let rows = [
            PromptRow {
                ids: &a,
                image: None,
            },
            PromptRow {
                ids: &bb,
                image: None,
            },
        ];
        let forced = GenerateConfig {
            max_new_tokens: 6,
            no_repeat: NoRepeatNgram::Off,
            force_max_new_tokens: true,
            eos_check_interval: 2,
            sync_free_decode: true,
            argmax_kernel: false,
            replay_tokens: None,
        };
        let out = generate(&m, &rows, &forced, &obs).unwrap();
        assert!(out.tokens.iter().all(|t| t.len() == 6));
        assert_eq!(out.decode_steps, 5);
        // Batched greedy equals each row alone.
        for (r, row) in rows.iter().enumerate() {
            let alone = generate(&m, std::slice::from_ref(row), &forced, &obs).unwrap();
            assert_eq!(alone.tokens[0], out.tokens[r], "row {r}");
        }
        // Host (n-gram) path with a rule that never fires equals the device path.
        let host = GenerateConfig {
            no_repeat: NoRepeatNgram::Hf { n: 50 },
            ..forced.clone()
        };
        assert_eq!(generate(&m, &rows, &host, &obs).unwrap().tokens, out.tokens);
        // One host sync per step (sync_free_decode off) gives the same tokens.
        let synced = GenerateConfig {
            sync_free_decode: false,
            ..forced.clone()
        };
        assert_eq!(
            generate(&m, &rows, &synced, &obs).unwrap().tokens,
            out.tokens
        );
        // The windowed rule on the device (sync-free) equals the host loop, with a rule that
        // fires (n=1 over the last 16 ids: the tiny model repeats ids within 24 tokens).
        let windowed = windowed_rule();
        let device = generate(&m, &rows, &windowed, &obs).unwrap();
        let host = generate(
            &m,
            &rows,
            &GenerateConfig {
                sync_free_decode: false,
                ..windowed.clone()
            },
            &obs,
        )
        .unwrap();
        assert_eq!(device.tokens, host.tokens);
        let plain = generate(
            &m,
            &rows,
            &GenerateConfig {
                no_repeat: NoRepeatNgram::Off,
                ..windowed.clone()
            },
            &obs,
        )
        .unwrap();
        assert_ne!(
            plain.tokens, device.tokens,
            "the rule should change the output"
        );
        // n=1 bans every token already in the sequence: no generated token repeats or is in the prompt.
        let ban_all = GenerateConfig {
            no_repeat: NoRepeatNgram::Hf { n: 1 },
            ..forced.clone()
        };
        let o = generate(&m, &rows[..1], &ban_all, &obs).unwrap();
        let mut seen: HashSet<i64> = a.iter().copied().collect();
        for t in &o.tokens[0] {
            assert!(seen.insert(*t), "token {t} repeated: {:?}", o.tokens[0]);
        }
    }

    /// A replayed stream is what every row emits, and what the model is fed: each step's kept
    /// choice equals a free greedy step after the prompt and the replayed ids before it, in the
    /// device loop and in the host loop. Replays that cannot feed every step are refused.
    #[test]
    fn replay_feeds_the_stream_and_keeps_the_choices() {
        let m = DeepseekOcr::synthetic(&ArchConfig::tiny(), 5, Device::Cpu, Kind::Float).unwrap();
        let obs = NoopObserver;
        let prompts: [Vec<i64>; 2] = [vec![0, 10, 11, 12, 13, 14], vec![0, 20, 21]];
        let run = |ps: &[Vec<i64>], g: &GenerateConfig| {
            let rows: Vec<PromptRow> = ps
                .iter()
                .map(|ids| PromptRow { ids, image: None })
                .collect();
            generate(&m, &rows, g, &obs)
        };
        let rule = windowed_rule();
        let ruled = run(&prompts, &rule).unwrap();
        assert_eq!(ruled.chosen, None, "no replay, no choices kept");
        let free = GenerateConfig {
            no_repeat: NoRepeatNgram::Off,
            ..rule.clone()
        };
        let plain = run(&prompts, &free).unwrap().tokens;
        assert_ne!(plain, ruled.tokens, "the rule should change the stream");
        for sync_free_decode in [true, false] {
            // The rule's stream replayed without the rule.
            let g = GenerateConfig {
                sync_free_decode,
                replay_tokens: Some(ruled.tokens.clone()),
                ..free.clone()
            };
            let o = run(&prompts, &g).unwrap();
            assert_eq!(o.tokens, ruled.tokens, "sync-free {sync_free_decode}");
            assert_eq!(o.decode_steps, ruled.decode_steps);
            let chosen = o.chosen.expect("choices kept while replaying");
            for (r, prompt) in prompts.iter().enumerate() {
                assert_eq!(chosen[r].len(), 24);
                for k in [0usize, 1, 7, 23] {
                    let fed: Vec<i64> = prompt
                        .iter()
                        .chain(&ruled.tokens[r][..k])
                        .copied()
                        .collect();
                    let one = GenerateConfig {
                        max_new_tokens: 1,
                        ..free.clone()
                    };
                    let want = run(std::slice::from_ref(&fed), &one).unwrap().tokens[0][0];
                    assert_eq!(
                        chosen[r][k], want,
                        "row {r} step {k}, sync-free {sync_free_decode}"
                    );
                }
            }
            // The rule's own stream under the rule: every choice is the replayed id.
            let g = GenerateConfig {
                sync_free_decode,
                replay_tokens: Some(ruled.tokens.clone()),
                ..rule.clone()
            };
            let o = run(&prompts, &g).unwrap();
            assert_eq!(o.chosen.as_ref(), Some(&ruled.tokens));
        }
        for (bad, why) in [
            (vec![ruled.tokens[0].clone()], "replayed token rows"),
            (
                vec![ruled.tokens[0][..23].to_vec(), ruled.tokens[1].clone()],
                "fewer than max_new_tokens",
            ),
            (
                vec![vec![-1; 24], ruled.tokens[1].clone()],
                "outside the vocabulary",
            ),
        ] {
            let g = GenerateConfig {
                replay_tokens: Some(bad),
                ..rule.clone()
            };
            let e = run(&prompts, &g).unwrap_err().to_string();
            assert!(e.contains(why), "{e}");
        }
        let unforced = GenerateConfig {
            force_max_new_tokens: false,
            replay_tokens: Some(ruled.tokens.clone()),
            ..rule.clone()
        };
        let e = run(&prompts, &unforced).unwrap_err().to_string();
        assert!(e.contains("infer.ignore_eos=true"), "{e}");
    }

    #[test]
    fn eos_stops_generation() {
        // Zero lm_head → all logits equal → argmax picks id 0 (first maximum); make 0 the EOS.
        let mut cfg = ArchConfig::tiny();
        cfg.tokens.eos_token_id = 0;
        let mut w =
            Weights::synthetic(&cfg, &[Part::Decoder], 5, Device::Cpu, Kind::Float).unwrap();
        let head = w.take("lm_head.weight").unwrap();
        let mut tensors = std::collections::HashMap::new();
        for n in w.names() {
            tensors.insert(n.to_string(), w.get(n).unwrap());
        }
        tensors.insert("lm_head.weight".into(), head.zeros_like());
        let m = DeepseekOcr::load(
            Weights::from_tensors(tensors, &[Part::Decoder], Device::Cpu, Kind::Float),
            &cfg,
        )
        .unwrap();
        let obs = NoopObserver;
        let p: Vec<i64> = vec![0, 10, 11];
        let rows = [PromptRow {
            ids: &p,
            image: None,
        }];
        for no_repeat in [
            NoRepeatNgram::Off,
            NoRepeatNgram::Window {
                n: 20,
                window: 50,
                exempt: vec![],
            },
        ] {
            let g = GenerateConfig {
                max_new_tokens: 5,
                no_repeat: no_repeat.clone(),
                force_max_new_tokens: false,
                eos_check_interval: 1,
                sync_free_decode: true,
                argmax_kernel: false,
                replay_tokens: None,
            };
            let o = generate(&m, &rows, &g, &obs).unwrap();
            assert!(
                o.tokens[0].is_empty() && o.hit_eos[0],
                "{no_repeat:?}: {o:?}"
            );
            assert_eq!(o.decode_steps, 0);
            // Forced length ignores EOS.
            let f = generate(
                &m,
                &rows,
                &GenerateConfig {
                    force_max_new_tokens: true,
                    ..g
                },
                &obs,
            )
            .unwrap();
            assert_eq!(f.tokens[0], vec![0; 5], "{no_repeat:?}");
            assert_eq!(f.decode_steps, 4);
        }
    }
}
