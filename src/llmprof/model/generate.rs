//! What a generation request asks for and what it returns: greedy decoding with EOS stop,
//! `max_new_tokens`, an optional forced length and the no-repeat-n-gram rule. Every model's
//! generation loop takes these; the spec's `infer.*` and `runtime.optim.*` keys fill them.
use serde::{Deserialize, Serialize};

/// No-repeat-n-gram rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum NoRepeatNgram {
    Off,
    /// HF `no_repeat_ngram_size`: bans tokens completing any n-gram already present in the whole
    /// sequence (prompt included). HF demo: n = 20 (35 in eval mode).
    Hf {
        n: usize,
    },
    /// vLLM scripts' processor: bans tokens completing an n-gram seen within the last `window`
    /// generated ids (prompt excluded), except `exempt` ids (`<td>`, `</td>`). Scripts: 30/90,
    /// 20/50, 40/90.
    Window {
        n: usize,
        window: usize,
        exempt: Vec<i64>,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GenerateConfig {
    pub max_new_tokens: usize,
    pub no_repeat: NoRepeatNgram,
    /// Ignore EOS and produce exactly `max_new_tokens` tokens per row (benchmarking).
    pub force_max_new_tokens: bool,
    /// Without n-gram blocking and with `sync_free_decode`, tokens stay on the device; "all rows
    /// finished" is checked every this many steps (one host sync each).
    pub eos_check_interval: usize,
    /// Keep tokens on the device between steps (off: read each token on the host, one sync per
    /// step, like HF `generate`). The windowed n-gram rule runs on the device; HF's
    /// whole-sequence rule needs the host loop.
    pub sync_free_decode: bool,
    /// On a GPU, each step's greedy choice in llmprof's argmax kernel (`runtime.optim.
    /// argmax_kernel`) instead of libtorch's; the same choice. Absent: off.
    #[serde(default)]
    pub argmax_kernel: bool,
    /// Ids fed back in place of each step's choice, per row (at least `max_new_tokens` each;
    /// needs `force_max_new_tokens`): the argmax and the n-gram rule still run, so two settings
    /// can be timed over one token stream (scripts/bench_ngram.sh). `None`: greedy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay_tokens: Option<Vec<Vec<i64>>>,
}

impl Default for GenerateConfig {
    fn default() -> Self {
        GenerateConfig {
            max_new_tokens: 8192,
            no_repeat: NoRepeatNgram::Hf { n: 20 },
            force_max_new_tokens: false,
            eos_check_interval: 16,
            sync_free_decode: true,
            argmax_kernel: false,
            replay_tokens: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct GenerateOutput {
    /// New tokens per row, EOS and anything after it removed (unless forced).
    pub tokens: Vec<Vec<i64>>,
    /// Whether each row produced EOS.
    pub hit_eos: Vec<bool>,
    /// Decode steps run after prefill.
    pub decode_steps: usize,
    pub prompt_lens: Vec<usize>,
    /// With `GenerateConfig::replay_tokens`: each row's own choice at each step (argmax after
    /// the n-gram rule, given the replayed ids before it), for as many steps as `tokens` holds.
    pub chosen: Option<Vec<Vec<i64>>>,
}

impl GenerateConfig {
    /// This config for a batch of `rows`: `max_new_tokens` becomes the largest output length a
    /// row asks for, when every row asks for one (text datasets); otherwise it stays.
    pub fn for_batch(&self, rows: &[super::RequestInfo]) -> GenerateConfig {
        let asked: Option<Vec<usize>> = rows.iter().map(|r| r.output_len).collect();
        match asked.and_then(|v| v.into_iter().max()) {
            Some(n) if n > 0 => GenerateConfig {
                max_new_tokens: n,
                ..self.clone()
            },
            _ => self.clone(),
        }
    }
}

impl GenerateOutput {
    /// Cuts each row to the output length it asked for (a batch runs as long as its longest row).
    pub fn cap_rows(&mut self, rows: &[super::RequestInfo]) {
        for (tokens, r) in self.tokens.iter_mut().zip(rows) {
            if let Some(n) = r.output_len {
                tokens.truncate(n);
            }
        }
    }
}
