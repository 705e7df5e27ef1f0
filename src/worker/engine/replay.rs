//! A recorded token stream fed back during generation (`GenerateConfig::replay_tokens`): each
//! step still chooses (argmax after the n-gram rule), the replayed id replaces the choice, and
//! the choice is kept, so two settings can be timed over one stream and the model's agreement
//! with the stream can be read (`GenerateOutput::chosen`).
use anyhow::{bail, ensure, Result};
use llmprof::model::GenerateConfig;
use tch::{Device, Kind, Tensor};

pub struct Replay<'a> {
    /// The replayed ids per row (`GenerateConfig::replay_tokens`).
    rows: &'a [Vec<i64>],
    steps: usize,
    /// Device loop: the replayed ids as `(steps, rows)` on the device (a step's ids are one
    /// contiguous row) and the choices written beside them.
    on_device: Option<(Tensor, Tensor)>,
    /// Host loop: the choices per row.
    chosen: Vec<Vec<i64>>,
}

impl<'a> Replay<'a> {
    /// The replay `cfg` asks for over `rows` rows with ids in `0..vocab`, its ids on `device`
    /// when `device_loop`; `None` without one. Refused: an unforced length (a replayed stream
    /// has no EOS stop), another row count, rows shorter than `max_new_tokens`, ids outside
    /// the vocabulary.
    pub fn new(
        cfg: &'a GenerateConfig,
        rows: usize,
        vocab: i64,
        device: Device,
        device_loop: bool,
    ) -> Result<Option<Replay<'a>>> {
        let Some(replay) = &cfg.replay_tokens else {
            return Ok(None);
        };
        check(cfg, replay, rows, vocab)?;
        let steps = cfg.max_new_tokens;
        let on_device = if device_loop {
            let ids: Vec<i64> = (0..steps)
                .flat_map(|s| replay.iter().map(move |row| row[s]))
                .collect();
            let ids = Tensor::f_from_slice(&ids)?
                .f_reshape([steps as i64, rows as i64])?
                .f_to_device(device)?;
            let chosen = ids.f_zeros_like()?;
            Some((ids, chosen))
        } else {
            None
        };
        Ok(Some(Replay {
            rows: replay,
            steps,
            on_device,
            chosen: vec![Vec::with_capacity(steps); rows],
        }))
    }

    /// Device loop: keeps step `step`'s `choice` (`(rows)` int64) and returns the replayed ids.
    pub fn device_step(&self, step: usize, choice: &Tensor) -> Result<Tensor> {
        let Some((ids, chosen)) = &self.on_device else {
            bail!("replay built for the host loop used in the device loop");
        };
        chosen.f_get(step as i64)?.f_copy_(choice)?;
        Ok(ids.f_get(step as i64)?)
    }

    /// Host loop: keeps step `step`'s choices and puts the replayed ids in their place.
    pub fn host_step(&mut self, step: usize, next: &mut [i64]) {
        for ((id, row), chosen) in next.iter_mut().zip(self.rows).zip(&mut self.chosen) {
            chosen.push(*id);
            *id = row[step];
        }
    }

    /// Each row's choices over the first `written` steps.
    pub fn chosen(self, written: usize) -> Result<Vec<Vec<i64>>> {
        let Some((_, chosen)) = self.on_device else {
            return Ok(self
                .chosen
                .into_iter()
                .map(|mut row| {
                    row.truncate(written);
                    row
                })
                .collect());
        };
        let rows = self.rows.len();
        let by_step = Vec::<i64>::try_from(
            &chosen
                .f_narrow(0, 0, written.min(self.steps) as i64)?
                .f_to_kind(Kind::Int64)?
                .f_to_device(Device::Cpu)?
                .f_reshape([-1])?,
        )?;
        Ok((0..rows)
            .map(|r| by_step.iter().skip(r).step_by(rows).copied().collect())
            .collect())
    }
}

fn check(cfg: &GenerateConfig, replay: &[Vec<i64>], rows: usize, vocab: i64) -> Result<()> {
    ensure!(
        cfg.force_max_new_tokens,
        "replayed tokens need a forced length (infer.ignore_eos=true): a replayed stream has no EOS stop"
    );
    ensure!(
        replay.len() == rows,
        "{} replayed token rows for a batch of {rows} rows: give one row of ids per batch row",
        replay.len()
    );
    for (r, row) in replay.iter().enumerate() {
        ensure!(
            row.len() >= cfg.max_new_tokens,
            "replayed row {r} has {} ids, fewer than max_new_tokens ({}): record the stream with at least as many tokens",
            row.len(),
            cfg.max_new_tokens
        );
        if let Some(bad) = row[..cfg.max_new_tokens]
            .iter()
            .find(|&&id| !(0..vocab).contains(&id))
        {
            bail!("replayed row {r} holds id {bad}, outside the vocabulary (0..{vocab})");
        }
    }
    Ok(())
}
