//! The generation loop's config from the run's `infer.*` and engine switches (the model's
//! `GenerateConfig` is plain data; the spec fills it).
use super::RunSpec;
use crate::model::{GenerateConfig, NoRepeatNgram};

impl RunSpec {
    /// The generation config of this run (`infer.*`, `runtime.optim.sync_free_decode`/`eos_check_interval`)
    /// for up to `max_new_tokens` tokens; `ngram_exempt` are the ids the windowed n-gram rule
    /// never bans (the model's table-cell tokens).
    pub fn generate_config(&self, ngram_exempt: &[i64], max_new_tokens: usize) -> GenerateConfig {
        let n = self.infer.no_repeat_ngram_size as usize;
        GenerateConfig {
            max_new_tokens,
            no_repeat: match (n, self.infer.ngram_window) {
                (0, _) => NoRepeatNgram::Off,
                (n, None) => NoRepeatNgram::Hf { n },
                (n, Some(w)) => NoRepeatNgram::Window {
                    n,
                    window: w as usize,
                    exempt: ngram_exempt.to_vec(),
                },
            },
            force_max_new_tokens: self.infer.ignore_eos,
            eos_check_interval: self.runtime.optim.eos_check_interval as usize,
            sync_free_decode: self.runtime.optim.sync_free_decode,
            argmax_kernel: self.runtime.optim.argmax_kernel,
            replay_tokens: None,
        }
    }
}
