//! DeepSeek-OCR's (and DeepSeek-OCR-2's) architecture from the HF `config.json` of a checkpoint
//! (docs/deepseek-ocr.md §1, §10): the fields config.json sets, DeepseekV2Config's defaults for
//! the rest. DeepSeek-OCR-2's vision encoder is hard-coded in its code, as here.
use super::arch::*;
use anyhow::{bail, ensure, Context, Result};
use std::path::Path;

impl ArchConfig {
    /// Maps the HF `config.json` of `deepseek-ai/DeepSeek-OCR` (docs/deepseek-ocr.md §1). Fields config.json omits
    /// take the DeepseekV2Config defaults; vision dims come from `vision_config.width.*` where
    /// present, otherwise the hard-coded constants the official code uses.
    pub fn from_hf_config_json(path: &Path) -> Result<Self> {
        let cfg = Self::mapped_from_hf_config_json(path)?;
        cfg.validate()
            .with_context(|| format!("config mapped from {}", path.display()))?;
        Ok(cfg)
    }

    /// [`ArchConfig::from_hf_config_json`] before the architecture's own consistency checks
    /// (the image token id, for one, comes from the tokenizer, not config.json): what a
    /// checkpoint's config says, field by field, for comparing with a chosen architecture.
    pub fn mapped_from_hf_config_json(path: &Path) -> Result<Self> {
        Self::mapped_from_hf_config(&crate::model::config_json::read(path)?)
    }

    /// [`ArchConfig::mapped_from_hf_config_json`] from the parsed JSON.
    pub fn mapped_from_hf_config(v: &serde_json::Value) -> Result<Self> {
        let vision = v.get("vision_config");
        // DeepSeek-OCR-2 names its encoder `deepencoderv2` and has a `qwen2-0-5b` width entry.
        let ocr2 = vision
            .and_then(|vc| vc.get("model_name"))
            .and_then(|x| x.as_str())
            == Some("deepencoderv2")
            || vision
                .and_then(|vc| vc.get("width"))
                .is_some_and(|w| w.get("qwen2-0-5b").is_some());
        let mut cfg = if ocr2 {
            ArchConfig::deepseek_ocr2()
        } else {
            ArchConfig::deepseek_ocr()
        };
        // The LM fields appear flat at top level (HF builds the config from those) and inside
        // `language_config`; prefer the flat copy, fall back to language_config.
        let lm = |key: &str| -> Option<&serde_json::Value> {
            v.get(key)
                .or_else(|| v.get("language_config").and_then(|l| l.get(key)))
        };
        let int = |key: &str, dst: &mut i64| -> Result<()> {
            if let Some(x) = lm(key) {
                if !x.is_null() {
                    *dst = x
                        .as_i64()
                        .with_context(|| format!("config.json `{key}` is not an integer"))?;
                }
            }
            Ok(())
        };
        let d = &mut cfg.decoder;
        int("vocab_size", &mut d.vocab_size)?;
        int("hidden_size", &mut d.hidden_size)?;
        int("num_hidden_layers", &mut d.num_hidden_layers)?;
        int("num_attention_heads", &mut d.num_attention_heads)?;
        int("num_key_value_heads", &mut d.num_key_value_heads)?;
        int("intermediate_size", &mut d.intermediate_size)?;
        int("moe_intermediate_size", &mut d.moe_intermediate_size)?;
        int("n_routed_experts", &mut d.n_routed_experts)?;
        int("n_shared_experts", &mut d.n_shared_experts)?;
        int("num_experts_per_tok", &mut d.num_experts_per_tok)?;
        int("first_k_dense_replace", &mut d.first_k_dense_replace)?;
        int("max_position_embeddings", &mut d.max_position_embeddings)?;
        if let Some(x) = lm("rms_norm_eps").and_then(|x| x.as_f64()) {
            d.rms_norm_eps = x;
        }
        if let Some(x) = lm("rope_theta").and_then(|x| x.as_f64()) {
            d.rope_theta = x;
        }
        if let Some(x) = lm("routed_scaling_factor").and_then(|x| x.as_f64()) {
            d.routed_scaling_factor = x;
        }
        if let Some(x) = lm("norm_topk_prob").and_then(|x| x.as_bool()) {
            d.norm_topk_prob = x;
        }
        if lm("use_mla").and_then(|x| x.as_bool()) == Some(true) {
            bail!("config.json sets use_mla=true; only the MHA decoder of DeepSeek-OCR is implemented");
        }
        if let Some(s) = lm("topk_method").and_then(|x| x.as_str()) {
            ensure!(
                s == "greedy",
                "config.json topk_method `{s}`: only `greedy` is implemented"
            );
        }
        if let Some(s) = lm("scoring_func").and_then(|x| x.as_str()) {
            ensure!(
                s == "softmax",
                "config.json scoring_func `{s}`: only `softmax` is implemented"
            );
        }
        if lm("rope_scaling").is_some_and(|x| !x.is_null()) {
            bail!("config.json sets rope_scaling; only plain RoPE is implemented");
        }
        d.head_dim = d.hidden_size / d.num_attention_heads.max(1);
        int("bos_token_id", &mut cfg.tokens.bos_token_id)?;
        int("eos_token_id", &mut cfg.tokens.eos_token_id)?;
        if let Some(p) = v.get("projector_config") {
            if let Some(x) = p.get("input_dim").and_then(|x| x.as_i64()) {
                cfg.projector.input_dim = x;
            }
            if let Some(x) = p.get("n_embed").and_then(|x| x.as_i64()) {
                cfg.projector.n_embed = x;
            }
        }
        if let Some(w) = vision.and_then(|vc| vc.get("width")) {
            if let Some(s) = w.get("sam_vit_b") {
                let get = |k: &str| s.get(k).and_then(|x| x.as_i64());
                if let Some(x) = get("width") {
                    cfg.sam.width = x;
                }
                if let Some(x) = get("layers") {
                    cfg.sam.depth = x;
                }
                if let Some(x) = get("heads") {
                    cfg.sam.heads = x;
                }
                if let Some(a) = s.get("global_attn_indexes").and_then(|x| x.as_array()) {
                    cfg.sam.global_attn_indexes = a.iter().filter_map(|x| x.as_i64()).collect();
                }
                // DeepSeek-OCR-2's config.json still says [512, 1024]; its code hard-codes the
                // 512→896 conv (and the released tensor is [896, 512, 3, 3]).
                if let (false, Some(a)) = (
                    ocr2,
                    s.get("downsample_channels").and_then(|x| x.as_array()),
                ) {
                    cfg.sam.downsample_channels = a.iter().filter_map(|x| x.as_i64()).collect();
                }
            }
            if let (Some(c), Some(clip)) = (w.get("clip-l-14-224"), cfg.clip.as_mut()) {
                let get = |k: &str| c.get(k).and_then(|x| x.as_i64());
                if let Some(x) = get("width") {
                    clip.width = x;
                }
                if let Some(x) = get("layers") {
                    clip.layers = x;
                }
                if let Some(x) = get("heads") {
                    clip.heads = x;
                }
                if let Some(x) = get("patch_size") {
                    clip.patch_size = x;
                }
            }
        }
        Ok(cfg)
    }
}
