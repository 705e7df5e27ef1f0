//! Greedy generation (docs/deepseek-ocr.md §5), for any [`CausalLm`]: prefill, then a decode
//! loop over the KV cache with EOS stop, `max_new_tokens`, an optional forced length (or a
//! replayed token stream), and no-repeat-n-gram blocking (HF whole-sequence semantics or the vLLM
//! sliding-window variant).
//! Batch rows are left-padded.

use super::causal_lm::CausalLm;
use super::graph_decode::DecodeSession;
use super::kv_cache::KvCache;
use super::replay::Replay;
use crate::engine::ngram_device::DeviceNgramBan;
use crate::ffi::kernels_sampling::Argmax;
use anyhow::{ensure, Result};
use llmprof::model::{GenerateConfig, GenerateOutput, NoRepeatNgram};
use llmprof::region::{RegionObserver, DECODE, SAMPLING};
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

/// Greedy generation for a batch of `prompts` (their ids), decode steps run by `session`
/// (which keeps KV caches and captured graphs across calls); `prefill` fills the empty cache
/// and returns the last-position logits [B, vocab].
pub fn generate_with<M: CausalLm>(
    session: &mut DecodeSession,
    model: &M,
    prompts: &[&[i64]],
    prefill: impl FnOnce(&mut KvCache) -> Result<Tensor>,
    cfg: &GenerateConfig,
    obs: &dyn RegionObserver,
) -> Result<GenerateOutput> {
    ensure!(cfg.max_new_tokens > 0, "max_new_tokens must be > 0");
    let b = prompts.len();
    let prompt_lens: Vec<usize> = prompts.iter().map(|r| r.len()).collect();
    let t = prompt_lens.iter().copied().max().unwrap_or(0);
    let capacity = (t + cfg.max_new_tokens) as i64;
    let max_pos = model.max_positions();
    ensure!(
        capacity <= max_pos,
        "prompt ({t}) + max_new_tokens ({}) exceeds max_position_embeddings {max_pos}",
        cfg.max_new_tokens
    );
    let cache = session.begin(model, b as i64, capacity)?;
    let mut logits = prefill(cache)?; // (b, vocab)
    let eos = model.eos_token_id();
    let device = model.device();
    // Each step's greedy choice: llmprof's argmax kernel where asked and the logits suit it.
    crate::ffi::kernels::require(
        "runtime.optim.argmax_kernel",
        cfg.argmax_kernel && device.is_cuda(),
    )?;
    let argmax = Argmax::new(&logits, cfg.argmax_kernel)?;
    // The replayed ids go to the device before the decode region, so they are not timed.
    let device_loop = cfg.sync_free_decode && !matches!(cfg.no_repeat, NoRepeatNgram::Hf { .. });
    let mut replay = Replay::new(cfg, b, logits.size2()?.1, device, device_loop)?;
    let _d = obs.enter(DECODE);
    let mut decode_steps = 0;

    let device_rule = match &cfg.no_repeat {
        NoRepeatNgram::Off => Some(None),
        NoRepeatNgram::Window { n, window, exempt } => Some(Some(DeviceNgramBan::new(
            b as i64,
            *n,
            *window,
            exempt,
            logits.size2()?.1,
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
            let sampling = obs.enter_module(SAMPLING, None);
            if let Some(rule) = &ngram {
                rule.apply(&mut logits)?;
            }
            let mut next = argmax.choose(&logits)?; // (b)
            if let Some(replay) = &replay {
                next = replay.device_step(step, &next)?; // the choice is kept, then replaced
            }
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
            drop(sampling);
            logits = session.step(model, &next, obs)?;
            decode_steps += 1;
            crate::heartbeat::beat(|| format!("decode step {decode_steps}"));
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
            chosen: replay.map(|r| r.chosen(written)).transpose()?,
        });
    }

    // Host loop: one sync per step (sync_free_decode off, or HF's whole-sequence n-gram rule).
    let mut history: Vec<Vec<i64>> = prompts.iter().map(|r| r.to_vec()).collect();
    let mut gen: Vec<Vec<i64>> = vec![Vec::new(); b];
    let mut done = vec![false; b];
    for step in 0..cfg.max_new_tokens {
        let sampling = obs.enter_module(SAMPLING, None);
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
        let mut next = Vec::<i64>::try_from(&argmax.choose(&logits)?.f_to_device(Device::Cpu)?)?; // host sync
        if let Some(replay) = &mut replay {
            replay.host_step(step, &mut next);
        }
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
        let feed = Tensor::f_from_slice(&feed)?.f_to_device(device)?;
        drop(sampling);
        logits = session.step(model, &feed, obs)?;
        decode_steps += 1;
        crate::heartbeat::beat(|| format!("decode step {decode_steps}"));
    }
    let hit_eos = (0..b).map(|r| done[r] || gen[r].contains(&eos)).collect();
    let written = (decode_steps + 1).min(cfg.max_new_tokens);
    Ok(GenerateOutput {
        tokens: gen,
        hit_eos,
        decode_steps,
        prompt_lens,
        chosen: replay.map(|r| r.chosen(written)).transpose()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
