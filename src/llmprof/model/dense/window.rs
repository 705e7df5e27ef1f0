//! Sliding-window attention: which layers slide (Mistral, Mixtral and Phi-3: all; Qwen2/3 with
//! `use_sliding_window`: those from `max_window_layers` on; Gemma 3: its local layers) and how
//! many keys a query sees there (at most the window, itself included, as transformers' sliding
//! masks allow: key j is seen from query i when i − W < j ≤ i).
use super::arch::DenseArch;

/// The window config.json sets, and the first layer that slides (all before it attend over the
/// whole context); `None` where no layer slides.
pub fn from_hf_config(v: &serde_json::Value, model_type: &str, layers: i64) -> Option<(i64, i64)> {
    let window = v.get("sliding_window").and_then(|x| x.as_i64())?;
    match model_type {
        "mistral" | "mixtral" | "phi3" | "gemma3_text" => Some((window, 0)),
        "qwen2" | "qwen3" | "qwen3_moe" => {
            let on = v.get("use_sliding_window").and_then(|x| x.as_bool()) == Some(true);
            let from = v
                .get("max_window_layers")
                .and_then(|x| x.as_i64())
                .unwrap_or(layers);
            (on && from < layers).then_some((window, from))
        }
        _ => None,
    }
}

impl DenseArch {
    /// The layers whose attention slides over the last `sliding_window` keys.
    pub fn sliding_layers(&self) -> Vec<i64> {
        match (&self.sliding_window, &self.sandwich) {
            (None, _) => Vec::new(),
            (Some(_), Some(s)) => s.local_layers.clone(),
            (Some(_), None) => (self.first_sliding_layer..self.num_hidden_layers).collect(),
        }
    }

    /// Keys a query at context length `context` (itself included) attends to in `layer`.
    pub fn keys_seen(&self, layer: i64, context: f64) -> f64 {
        match self.sliding_window {
            Some(w) if self.sliding_layers().contains(&layer) => context.min(w as f64),
            _ => context,
        }
    }

    /// Σ over all layers of the keys a decode step's query sees at `context`.
    pub fn keys_seen_all_layers(&self, context: f64) -> f64 {
        (0..self.num_hidden_layers)
            .map(|l| self.keys_seen(l, context))
            .sum()
    }

    /// Σ over all layers and the `s` tokens of a fresh prefill of the keys each sees
    /// (s(s+1)/2 per full layer; per sliding layer W(W+1)/2 + (s − W)·W once s passes W).
    pub fn prefill_keys_all_layers(&self, s: f64) -> f64 {
        let full = s * (s + 1.0) / 2.0;
        (0..self.num_hidden_layers)
            .map(|l| match self.sliding_window {
                Some(w) if s > w as f64 && self.sliding_layers().contains(&l) => {
                    let w = w as f64;
                    w * (w + 1.0) / 2.0 + (s - w) * w
                }
                _ => full,
            })
            .sum()
    }
}
