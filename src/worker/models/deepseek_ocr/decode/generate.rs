//! Greedy generation (docs/deepseek-ocr.md §5): prefill, then a decode loop over the preallocated KV cache with
//! EOS stop, `max_new_tokens`, an optional forced length, and no-repeat-n-gram blocking (HF
//! whole-sequence semantics or the vLLM sliding-window variant). Batch rows are left-padded.

use crate::models::deepseek_ocr::decode::graph_decode::{DecodeSession, StepPath};
use crate::models::deepseek_ocr::{DeepseekOcr, PromptRow};
use crate::models::ngram_device::DeviceNgramBan;
use anyhow::{ensure, Result};
use llmprof::model::{GenerateConfig, GenerateOutput, NoRepeatNgram};
use llmprof::region::{RegionObserver, DECODE};
use std::collections::HashSet;
use tch::{Device, Kind, Tensor};

pub fn hf_banned(seq: &[i64], n: usize) -> Vec<i64> {
    if n == 0 || seq.len() + 1 < n {
        return Vec::new();
    }
    let prefix = &seq[seq.len() + 1 - n..];
    let mut out = Vec::new();
    if seq.len() >= n {
        for i in 0..=seq.len() - n {
            if &seq[i..i + n - 1] == prefix {
                out.push(seq[i + n - 1]);
            }
        }
    }
    out
}

/// Tokens banned by the vLLM sliding-window processor given the generated ids so far.
pub fn window_banned(gen: &[i64], n: usize, window: usize, exempt: &[i64]) -> Vec<i64> {
    if n == 0 || gen.len() < n {
        return Vec::new();
    }
    let prefix = &gen[gen.len() - (n - 1)..];
    let start = gen.len().saturating_sub(window);
    let end = gen.len() + 1 - n;
    let mut banned = HashSet::new();
    for i in start..end {
        if &gen[i..i + n - 1] == prefix {
            banned.insert(gen[i + n - 1]);
        }
    }
    let mut v: Vec<i64> = banned.into_iter().filter(|t| !exempt.contains(t)).collect();
    v.sort();
    v
}

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
    ensure!(cfg.max_new_tokens > 0, "max_new_tokens must be > 0");
    let b = rows.len();
    let prompt_lens: Vec<usize> = rows.iter().map(|r| r.ids.len()).collect();
    let t = prompt_lens.iter().copied().max().unwrap_or(0);
    let capacity = (t + cfg.max_new_tokens) as i64;
    let max_pos = model.config().decoder.max_position_embeddings;
    ensure!(
        capacity <= max_pos,
        "prompt ({t}) + max_new_tokens ({}) exceeds max_position_embeddings {max_pos}",
        cfg.max_new_tokens
    );
    let cache = session.begin(model, b as i64, capacity)?;
    let mut logits = model.prefill(rows, cache, obs)?; // (b, vocab)
    let eos = model.config().tokens.eos_token_id;
    let _d = obs.enter(DECODE);
    let device = model.device();
    let mut decode_steps = 0;

    let device_rule = match &cfg.no_repeat {
        NoRepeatNgram::Off => Some(None),
        NoRepeatNgram::Window { n, window, exempt } => Some(Some(DeviceNgramBan::new(
            b as i64,
            *n,
            *window,
            exempt,
            model.config().decoder.vocab_size,
            device,
        )?)),
        NoRepeatNgram::Hf { .. } => None, // whole-sequence rule: host loop
    };
    if let (true, Some(mut ngram)) = (cfg.sync_free_decode, device_rule) {
        // Device-resident loop: no host sync per step except the periodic EOS check; the
        // windowed n-gram rule runs on the device too.
        let out = Tensor::f_zeros([b as i64, cfg.max_new_tokens as i64], (Kind::Int64, device))?;
        let mut finished = Tensor::f_zeros([b as i64], (Kind::Bool, device))?;
        let eos_t = Tensor::f_full([b as i64], eos, (Kind::Int64, device))?;
        for step in 0..cfg.max_new_tokens {
            if let Some(rule) = &ngram {
                rule.apply(&mut logits)?;
            }
            let mut next = logits.f_argmax(-1, false)?; // (b)
            if !cfg.force_max_new_tokens {
                next = eos_t.f_where_self(&finished, &next)?;
                finished = finished.f_logical_or(&next.f_eq(eos)?)?;
            }
            if let Some(rule) = &mut ngram {
                rule.push(&next)?;
            }
            out.f_narrow(1, step as i64, 1)?
                .f_copy_(&next.f_unsqueeze(1)?)?;
            if step + 1 == cfg.max_new_tokens {
                break;
            }
            if !cfg.force_max_new_tokens
                && (step + 1) % cfg.eos_check_interval.max(1) == 0
                && bool::try_from(finished.f_all()?)?
            {
                break;
            }
            logits = session.step(model, &next, obs)?;
            decode_steps += 1;
        }
        let host = Vec::<i64>::try_from(&out.f_to_device(Device::Cpu)?.f_reshape([-1])?)?;
        let mut tokens = Vec::new();
        let mut hit_eos = Vec::new();
        // Rows written so far: the buffer is zero beyond the last written step.
        let written = (decode_steps + 1).min(cfg.max_new_tokens);
        for r in 0..b {
            let row = &host[r * cfg.max_new_tokens..r * cfg.max_new_tokens + written];
            let stop = if cfg.force_max_new_tokens {
                None
            } else {
                row.iter().position(|&x| x == eos)
            };
            hit_eos.push(stop.is_some() || (cfg.force_max_new_tokens && row.contains(&eos)));
            tokens.push(row[..stop.unwrap_or(row.len())].to_vec());
        }
        return Ok(GenerateOutput {
            tokens,
            hit_eos,
            decode_steps,
            prompt_lens,
        });
    }

    // Host loop: one sync per step (sync_free_decode off, or HF's whole-sequence n-gram rule).
    let mut history: Vec<Vec<i64>> = rows.iter().map(|r| r.ids.to_vec()).collect();
    let mut gen: Vec<Vec<i64>> = vec![Vec::new(); b];
    let mut done = vec![false; b];
    for step in 0..cfg.max_new_tokens {
        let mut ban_rows = Vec::new();
        let mut ban_cols = Vec::new();
        for r in 0..b {
            if done[r] {
                continue;
            }
            let banned = match &cfg.no_repeat {
                NoRepeatNgram::Hf { n } => hf_banned(&history[r], *n),
                NoRepeatNgram::Window { n, window, exempt } => {
                    window_banned(&gen[r], *n, *window, exempt)
                }
                NoRepeatNgram::Off => Vec::new(),
            };
            for tok in banned {
                ban_rows.push(r as i64);
                ban_cols.push(tok);
            }
        }
        if !ban_rows.is_empty() {
            let ri = Tensor::f_from_slice(&ban_rows)?.f_to_device(device)?;
            let ci = Tensor::f_from_slice(&ban_cols)?.f_to_device(device)?;
            let neg = Tensor::f_full([1], f64::NEG_INFINITY, (Kind::Float, device))?;
            let _ = logits.f_index_put_(&[Some(ri), Some(ci)], &neg, false)?;
        }
        let next = Vec::<i64>::try_from(&logits.f_argmax(-1, false)?.f_to_device(Device::Cpu)?)?; // host sync
        let mut feed = next.clone();
        for r in 0..b {
            if done[r] {
                feed[r] = eos;
                continue;
            }
            if next[r] == eos && !cfg.force_max_new_tokens {
                done[r] = true;
                continue;
            }
            gen[r].push(next[r]);
            history[r].push(next[r]);
        }
        if step + 1 == cfg.max_new_tokens || done.iter().all(|&d| d) {
            break;
        }
        logits = session.step(
            model,
            &Tensor::f_from_slice(&feed)?.f_to_device(device)?,
            obs,
        )?;
        decode_steps += 1;
    }
    let hit_eos = (0..b).map(|r| done[r] || gen[r].contains(&eos)).collect();
    Ok(GenerateOutput {
        tokens: gen,
        hit_eos,
        decode_steps,
        prompt_lens,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::deepseek_ocr::{ArchConfig, Part, Weights};
    use llmprof::region::NoopObserver;

    #[test]
    fn hf_ngram_hand_cases() {
        // Sequence a b c a b: for n=3 the prefix (a, b) was followed by c → ban c.
        assert_eq!(hf_banned(&[1, 2, 3, 1, 2], 3), vec![3]);
        assert_eq!(hf_banned(&[1, 2, 3, 1, 2], 2), vec![3]); // prefix (2) → 3
        assert_eq!(hf_banned(&[1, 2, 3, 1, 4], 3), Vec::<i64>::new());
        assert_eq!(hf_banned(&[1, 1], 2), vec![1]);
        assert_eq!(hf_banned(&[1], 3), Vec::<i64>::new());
    }

    #[test]
    fn window_ngram_hand_cases() {
        let g = [5, 6, 7, 5, 6];
        assert_eq!(window_banned(&g, 3, 100, &[]), vec![7]);
        // The earlier (5,6,7) starts at 0, outside a window of 4 (search starts at 1).
        assert_eq!(window_banned(&g, 3, 4, &[]), Vec::<i64>::new());
        assert_eq!(window_banned(&g, 3, 100, &[7]), Vec::<i64>::new());
        assert_eq!(window_banned(&[5, 6], 3, 100, &[]), Vec::<i64>::new());
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
        let windowed = GenerateConfig {
            max_new_tokens: 24,
            no_repeat: NoRepeatNgram::Window {
                n: 1,
                window: 16,
                exempt: vec![296],
            },
            ..forced.clone()
        };
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
