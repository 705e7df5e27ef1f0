//! Sliding-window attention: which layers slide (Mistral, Mixtral and Phi-3: all; Qwen2/3 with
//! `use_sliding_window`: those from `max_window_layers` on; Gemma 3: its local layers) and how
//! many keys a query sees there (at most the window, itself included, as transformers' sliding
//! masks allow: key j is seen from query i when i − W < j ≤ i; `DenseArch::keys_seen`).

/// The window config.json sets, and the first layer that slides (all before it attend over the
/// whole context); `None` where no layer slides.
pub fn from_hf_config(v: &serde_json::Value, model_type: &str, layers: i64) -> Option<(i64, i64)> {
    let window = v.get("sliding_window").and_then(|x| x.as_i64())?;
    match model_type {
        "mistral" | "mixtral" | "phi3" | "gemma3_text" => Some((window, 0)),
        // transformers' Qwen3-MoE has no max_window_layers: every layer slides.
        "qwen3_moe" => (v.get("use_sliding_window").and_then(|x| x.as_bool()) == Some(true))
            .then_some((window, 0)),
        "qwen2" | "qwen3" => {
            let on = v.get("use_sliding_window").and_then(|x| x.as_bool()) == Some(true);
            // transformers' default max_window_layers is 28.
            let from = v
                .get("max_window_layers")
                .and_then(|x| x.as_i64())
                .unwrap_or(28);
            (on && from < layers).then_some((window, from))
        }
        _ => None,
    }
}

/// Keys the `s` queries of a fresh prefill see in all, in a layer that slides over `w` keys:
/// W(W+1)/2 + (s − W)·W once s passes W, else s(s+1)/2.
pub fn prefill_keys_sliding(s: f64, w: f64) -> f64 {
    if s > w {
        w * (w + 1.0) / 2.0 + (s - w) * w
    } else {
        s * (s + 1.0) / 2.0
    }
}
