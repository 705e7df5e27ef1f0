//! The windowed no-repeat-n-gram rule (`NoRepeatNgram::Window`, the rule DeepSeek-OCR's
//! reference decoding uses) evaluated on the device, so that decoding with it needs no host sync
//! per step. Same semantics as the host rule (`window_banned`): ban every token that completes an
//! n-gram seen within the last `window` generated ids (prompt excluded), except the exempt ids.
//!
//! Fixed shapes: the last `window` generated ids live in a `(batch, window)` buffer, newest last.
//! The candidate n-grams are the buffer's `window - n + 1` sliding windows; candidate `j` bans
//! its last id when its first n − 1 ids equal the newest n − 1 and that id is not exempt. Slots
//! not yet written hold distinct negative ids (−1 − slot), which equal neither a token nor each
//! other, so a candidate that reaches into them never matches (n ≥ 2; n = 1 keeps an explicit
//! count). Bans are applied with `scatter_reduce(amin)`, so a token listed twice (banned once,
//! kept once) is banned, as in the host rule. About ten small kernels per step, no host sync.
//!
//! On a GPU (with a build that has llmprof's CUDA kernels, which bootstrap.sh builds) the same
//! rule is two kernels per step instead (`csrc/kernels/ngram.cu`: ban, shift); the tests hold
//! both to the host rule on every device present.
use crate::ffi::kernels;
use anyhow::{ensure, Result};
use tch::{Device, Kind, Tensor};

pub struct DeviceNgramBan {
    n: i64,
    window: i64,
    /// `(batch, window)` int64: the last `window` generated ids, newest last; unwritten slots
    /// hold −1 − slot.
    recent: Tensor,
    /// n = 1 only: generated ids so far (0-d int64) and the candidate slots, to mask unwritten
    /// slots (with n = 1 there is nothing to compare, so the negative ids alone cannot).
    len: Tensor,
    starts: Tensor,
    /// `(vocab)` bool, true where an id may be banned; empty when nothing is exempt.
    bannable: Option<Tensor>,
    /// Ban and shift with llmprof's CUDA kernels.
    kernels: bool,
}

impl DeviceNgramBan {
    pub fn new(
        batch: i64,
        n: usize,
        window: usize,
        exempt: &[i64],
        vocab: i64,
        device: Device,
    ) -> Result<Self> {
        let (n, window) = (n as i64, window as i64);
        let w = window.max(1);
        let recent = Tensor::f_arange(w, (Kind::Int64, device))?
            .f_neg()?
            .f_sub_scalar(1)?
            .f_unsqueeze(0)?
            .f_repeat([batch, 1])?;
        ensure!(
            exempt.iter().all(|&t| (0..vocab).contains(&t)),
            "n-gram exempt ids {exempt:?} must lie in the vocabulary (0..{vocab})"
        );
        let bannable = if exempt.is_empty() {
            None
        } else {
            let ids = Tensor::f_from_slice(exempt)?.f_to_device(device)?;
            let ones = Tensor::f_ones([vocab], (Kind::Bool, device))?;
            let falses = Tensor::f_zeros([exempt.len() as i64], (Kind::Bool, device))?;
            Some(ones.f_index_put(&[Some(ids)], &falses, false)?)
        };
        Ok(DeviceNgramBan {
            n,
            window,
            recent,
            len: Tensor::f_zeros([], (Kind::Int64, device))?,
            starts: Tensor::f_arange((window - n + 1).max(0), (Kind::Int64, device))?,
            bannable,
            kernels: device.is_cuda() && kernels::available() && w <= kernels::NGRAM_MAX_WINDOW,
        })
    }

    /// Sets the logits of banned tokens to −∞ in place (`logits`: `(batch, vocab)`).
    pub fn apply(&self, logits: &mut Tensor) -> Result<()> {
        let (n, window) = (self.n, self.window);
        if n <= 0 || window < n {
            return Ok(()); // no n-gram fits in the window: nothing is ever banned
        }
        if self.kernels && logits.is_contiguous() && logits.kind() == Kind::Float {
            return Ok(kernels::ngram_ban(
                logits,
                &self.recent,
                n,
                self.bannable.as_ref(),
            )?);
        }
        let grams = self.recent.f_unfold(1, n, 1)?; // (batch, candidates, n)
        let mut ban = if n == 1 {
            let written = self
                .starts
                .f_ge_tensor(&self.len.f_neg()?.f_add_scalar(window)?)?;
            written
                .f_unsqueeze(0)?
                .f_expand([grams.size()[0], -1], false)?
        } else {
            let newest = self
                .recent
                .f_narrow(1, window - (n - 1), n - 1)?
                .f_unsqueeze(1)?;
            grams
                .f_narrow(2, 0, n - 1)?
                .f_eq_tensor(&newest)?
                .f_all_dim(2, false)? // (batch, candidates)
        };
        // Unwritten slots hold negative ids: index with 0 there (never banned through `ban`).
        let token = grams.f_select(2, n - 1)?.f_clamp_min(0)?; // (batch, candidates)
        if let Some(bannable) = &self.bannable {
            let ok = bannable.f_index(&[Some(&token)])?;
            ban = ban.f_logical_and(&ok)?;
        }
        let kept = logits.f_gather(1, &token, false)?;
        let banned = kept.f_masked_fill(&ban, f64::NEG_INFINITY)?;
        // `f_internal_scatter_reduce_` is tch's name for `Tensor.scatter_reduce_` (the
        // `f_scatter_reduce_` wrapper is the older `scatter_(reduce=)`, which has no amin).
        let _ = logits.f_internal_scatter_reduce_(1, &token, &banned, "amin", true)?;
        Ok(())
    }

    /// Appends this step's ids (`next`: `(batch)` int64) to every row.
    pub fn push(&mut self, next: &Tensor) -> Result<()> {
        if self.kernels {
            let next = next.f_to_kind(Kind::Int64)?.f_contiguous()?;
            return Ok(kernels::ngram_push(&self.recent, &next)?);
        }
        let w = self.window.max(1);
        let shifted = Tensor::f_cat(
            &[
                self.recent.f_narrow(1, 1, w - 1)?,
                next.f_unsqueeze(1)?.f_to_kind(Kind::Int64)?,
            ],
            1,
        )?;
        self.recent.f_copy_(&shifted)?;
        if self.n == 1 {
            let _ = self.len.f_add_scalar_(1)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::generate::window_banned;

    /// A small deterministic generator (SplitMix64) for the random sequences.
    fn next(state: &mut u64) -> u64 {
        *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Banned ids of each row after applying the device rule to zero logits.
    fn device_bans(ban: &DeviceNgramBan, batch: i64, vocab: i64, dev: Device) -> Vec<Vec<i64>> {
        let mut logits = Tensor::zeros([batch, vocab], (Kind::Float, dev));
        ban.apply(&mut logits).unwrap();
        let flat = Vec::<f32>::try_from(&logits.reshape([-1]).to_device(Device::Cpu)).unwrap();
        (0..batch as usize)
            .map(|r| {
                (0..vocab as usize)
                    .filter(|&t| flat[r * vocab as usize + t] == f32::NEG_INFINITY)
                    .map(|t| t as i64)
                    .collect()
            })
            .collect()
    }

    /// Every device this machine has: the CPU (libtorch ops) and, with a GPU, CUDA (the kernels).
    fn devices() -> Vec<Device> {
        let mut d = vec![Device::Cpu];
        if tch::Cuda::is_available() {
            d.push(Device::Cuda(0));
        }
        d
    }

    #[test]
    fn device_rule_bans_what_the_host_rule_bans_at_every_step() {
        for dev in devices() {
            bans_match_the_host_rule(dev);
        }
    }

    fn bans_match_the_host_rule(dev: Device) {
        // Small vocabularies make repeats (and so bans) frequent; each case runs 120 steps.
        let mut seed = 7u64;
        let mut total_bans = 0;
        for (n, window, vocab, exempt) in [
            (3usize, 10usize, 4i64, vec![]),
            (2, 5, 3, vec![1]),
            (4, 50, 3, vec![0, 2]),
            (20, 50, 2, vec![]),
            (3, 3, 3, vec![]),
            (5, 4, 3, vec![]), // window < n: never bans
            (1, 6, 5, vec![]),
        ] {
            let batch = 3i64;
            let mut ban = DeviceNgramBan::new(batch, n, window, &exempt, vocab, dev).unwrap();
            assert_eq!(ban.kernels, dev.is_cuda() && kernels::available());
            let mut gen: Vec<Vec<i64>> = vec![Vec::new(); batch as usize];
            for step in 0..120 {
                let got = device_bans(&ban, batch, vocab, dev);
                for r in 0..batch as usize {
                    let want = window_banned(&gen[r], n, window, &exempt);
                    assert_eq!(
                        got[r], want,
                        "{dev:?} n={n} window={window} step={step} row={r}"
                    );
                    total_bans += want.len();
                }
                let ids: Vec<i64> = (0..batch)
                    .map(|_| (next(&mut seed) % vocab as u64) as i64)
                    .collect();
                for (r, id) in ids.iter().enumerate() {
                    gen[r].push(*id);
                }
                ban.push(&Tensor::from_slice(&ids).to_device(dev)).unwrap();
            }
        }
        assert!(
            total_bans > 500,
            "{dev:?}: the cases should ban often: {total_bans}"
        );
    }
}
