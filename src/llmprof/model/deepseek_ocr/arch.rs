//! Architecture configuration of DeepSeek-OCR and DeepSeek-OCR-2 (docs/deepseek-ocr.md §1, §10):
//! typed, validated, from constructors, YAML (`conf/model/deepseek_ocr/arch/*.yaml`) or the HF
//! `config.json`. The two share SAM and the decoder; after SAM, DeepSeek-OCR runs CLIP-L (`clip`)
//! and DeepSeek-OCR-2 a Qwen2 encoder with learned queries (`query_encoder`).

pub use super::arch_ocr2::QueryEncoderConfig;
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// SAM ViT-B encoder + neck + 16x compressor (docs/deepseek-ocr.md §3.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SamConfig {
    /// Image side the absolute position embedding was trained at (1024 → pos_embed grid 64).
    pub image_size: i64,
    /// Patch side of the patch-embed conv (16).
    pub patch_size: i64,
    /// Token width (768).
    pub width: i64,
    /// Number of blocks (12).
    pub depth: i64,
    /// Attention heads (12).
    pub heads: i64,
    /// MLP hidden width (3072).
    pub mlp_dim: i64,
    /// Window side of the windowed blocks (14).
    pub window_size: i64,
    /// Blocks with global attention ([2,5,8,11]).
    pub global_attn_indexes: Vec<i64>,
    /// Neck output channels (256).
    pub out_chans: i64,
    /// Channels of the stride-2 compressor convs `net_2`, `net_3` ([512,1024]).
    pub downsample_channels: Vec<i64>,
    /// LayerNorm eps (1e-6) for blocks and LayerNorm2d in the neck.
    pub layer_norm_eps: f64,
}

/// CLIP-L run on SAM features (docs/deepseek-ocr.md §3.2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClipConfig {
    /// Token width (1024); equals the last SAM downsample channel count.
    pub width: i64,
    /// Transformer layers (24).
    pub layers: i64,
    /// Attention heads (16).
    pub heads: i64,
    /// MLP hidden width (4096).
    pub mlp_dim: i64,
    /// Rows of `position_embedding` (257 = 16x16 grid + CLS).
    pub num_positions: i64,
    /// Patch side of the unused `patch_embedding` conv (14).
    pub patch_size: i64,
    /// LayerNorm eps (1e-5).
    pub layer_norm_eps: f64,
}

/// Linear projector (docs/deepseek-ocr.md §3.3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectorConfig {
    /// clip width + SAM output channels (2048); DeepSeek-OCR-2: the query encoder's width (896).
    pub input_dim: i64,
    /// Decoder hidden size (1280).
    pub n_embed: i64,
}

/// The decoder fields a checkpoint's config.json must agree on with the chosen preset (they
/// decide tensor shapes and the vocabulary; the vision encoders' are fixed by the official code):
/// `model::checkpoint_config` compares them.
pub const CHECKPOINT_FIELDS: &[&str] = &[
    "decoder.vocab_size",
    "decoder.hidden_size",
    "decoder.num_hidden_layers",
    "decoder.num_attention_heads",
    "decoder.intermediate_size",
    "decoder.moe_intermediate_size",
    "decoder.n_routed_experts",
    "decoder.num_experts_per_tok",
];

/// DeepSeek-V2-style MoE decoder with plain MHA (docs/deepseek-ocr.md §1, §2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DecoderConfig {
    pub vocab_size: i64,
    pub hidden_size: i64,
    pub num_hidden_layers: i64,
    pub num_attention_heads: i64,
    /// Must equal `num_attention_heads` (no GQA in DeepSeek-OCR).
    pub num_key_value_heads: i64,
    /// hidden_size / num_attention_heads (128).
    pub head_dim: i64,
    /// Dense SwiGLU width of the first `first_k_dense_replace` layers (6848).
    pub intermediate_size: i64,
    /// SwiGLU width of each routed expert (896); shared width = n_shared_experts × this.
    pub moe_intermediate_size: i64,
    pub n_routed_experts: i64,
    pub n_shared_experts: i64,
    /// Experts per token (6).
    pub num_experts_per_tok: i64,
    pub first_k_dense_replace: i64,
    /// Whether top-k weights are renormalised (false in DeepSeek-OCR; only `false` is implemented).
    pub norm_topk_prob: bool,
    /// Multiplier of routed weights (1.0).
    pub routed_scaling_factor: f64,
    pub rms_norm_eps: f64,
    pub rope_theta: f64,
    pub max_position_embeddings: i64,
}

/// Special token ids (docs/deepseek-ocr.md §8).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenConfig {
    pub bos_token_id: i64,
    pub eos_token_id: i64,
    pub pad_token_id: i64,
    pub image_token_id: i64,
    /// `<td>` and `</td>`: exempt from the sliding-window n-gram ban (docs/deepseek-ocr.md §5).
    pub ngram_exempt_token_ids: Vec<i64>,
}

/// Every dimension the model needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArchConfig {
    pub sam: SamConfig,
    /// DeepSeek-OCR: CLIP-L over SAM features. Exactly one of `clip` and `query_encoder`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clip: Option<ClipConfig>,
    /// DeepSeek-OCR-2: the Qwen2 encoder over SAM tokens and learned queries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query_encoder: Option<QueryEncoderConfig>,
    pub projector: ProjectorConfig,
    pub decoder: DecoderConfig,
    pub tokens: TokenConfig,
}

impl ArchConfig {
    /// A preset of conf/model/deepseek_ocr/arch/, compiled in (the YAML is the one source of
    /// its numbers) for code that runs without a composed config: tests, `llmprof debug`.
    pub(super) fn preset(name: &str, yaml: &str) -> Self {
        serde_yaml::from_str(yaml).unwrap_or_else(|e| {
            panic!("conf/model/deepseek_ocr/arch/{name}.yaml does not read as an ArchConfig: {e}")
        })
    }

    /// The released DeepSeek-OCR (docs/deepseek-ocr.md §1).
    pub fn deepseek_ocr() -> Self {
        Self::preset(
            "deepseek_ocr",
            include_str!("../../../../conf/model/deepseek_ocr/arch/deepseek_ocr.yaml"),
        )
    }

    /// Same structure with small dimensions, for CPU tests. Views of 128 px give a 8x8 SAM grid
    /// (two 4x4 windows per side) and 2x2 = 4 output tokens, matching CLIP's 2x2 position grid.
    pub fn tiny() -> Self {
        Self::preset(
            "deepseek_ocr_tiny",
            include_str!("../../../../conf/model/deepseek_ocr/arch/deepseek_ocr_tiny.yaml"),
        )
    }

    /// Reads a YAML file holding exactly the serde fields of `ArchConfig`, then validates.
    pub fn from_yaml_file(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading arch config {}", path.display()))?;
        let cfg: ArchConfig = serde_yaml::from_str(&text)
            .with_context(|| format!("parsing arch config {}", path.display()))?;
        cfg.validate()
            .with_context(|| format!("invalid arch config {}", path.display()))?;
        Ok(cfg)
    }

    pub fn sam_pos_grid(&self) -> i64 {
        self.sam.image_size / self.sam.patch_size
    }

    /// Pixels per output vision token side: patch × 2^(number of stride-2 convs) (16·4 = 64).
    pub fn pixels_per_token(&self) -> i64 {
        self.sam.patch_size << self.sam.downsample_channels.len()
    }

    /// SAM output channels (last compressor conv).
    pub fn sam_out_channels(&self) -> i64 {
        *self
            .sam
            .downsample_channels
            .last()
            .unwrap_or(&self.sam.out_chans)
    }

    /// Width of the shared-experts MLP (n_shared × moe_intermediate).
    pub fn shared_intermediate(&self) -> i64 {
        self.decoder.n_shared_experts * self.decoder.moe_intermediate_size
    }

    /// Checks that all dimensions fit together; lists every problem at once.
    pub fn validate(&self) -> Result<()> {
        let mut errs: Vec<String> = Vec::new();
        let mut check = |ok: bool, msg: String| {
            if !ok {
                errs.push(msg)
            }
        };
        let s = &self.sam;
        check(
            s.patch_size > 0 && s.image_size % s.patch_size == 0,
            format!(
                "sam.image_size {} not a multiple of patch_size {}",
                s.image_size, s.patch_size
            ),
        );
        check(
            s.heads > 0 && s.width % s.heads == 0,
            format!("sam.width {} not divisible by heads {}", s.width, s.heads),
        );
        check(s.window_size > 0, "sam.window_size must be > 0".into());
        check(s.depth > 0, "sam.depth must be > 0".into());
        check(
            s.global_attn_indexes.iter().all(|&i| i >= 0 && i < s.depth),
            format!(
                "sam.global_attn_indexes {:?} out of 0..{}",
                s.global_attn_indexes, s.depth
            ),
        );
        check(
            !s.downsample_channels.is_empty(),
            "sam.downsample_channels is empty".into(),
        );
        match (&self.clip, &self.query_encoder) {
            (Some(c), None) => {
                check(
                    c.heads > 0 && c.width % c.heads == 0,
                    format!("clip.width {} not divisible by heads {}", c.width, c.heads),
                );
                let grid = ((c.num_positions - 1).max(0) as f64).sqrt().round() as i64;
                check(
                    grid * grid + 1 == c.num_positions,
                    format!(
                        "clip.num_positions {} is not a square grid + CLS",
                        c.num_positions
                    ),
                );
                check(
                    c.width == self.sam_out_channels(),
                    format!(
                        "clip.width {} != SAM output channels {}",
                        c.width,
                        self.sam_out_channels()
                    ),
                );
                check(
                    self.projector.input_dim == c.width + self.sam_out_channels(),
                    format!(
                        "projector.input_dim {} != clip.width + SAM channels {}",
                        self.projector.input_dim,
                        c.width + self.sam_out_channels()
                    ),
                );
            }
            (None, Some(q)) => {
                for e in q.problems(self.sam_out_channels(), self.pixels_per_token()) {
                    check(false, e);
                }
                check(
                    self.projector.input_dim == q.hidden_size,
                    format!(
                        "projector.input_dim {} != query_encoder.hidden_size {}",
                        self.projector.input_dim, q.hidden_size
                    ),
                );
            }
            _ => check(
                false,
                "exactly one of `clip` (DeepSeek-OCR) and `query_encoder` (DeepSeek-OCR-2) must be set".into(),
            ),
        }
        let d = &self.decoder;
        check(
            self.projector.n_embed == d.hidden_size,
            format!(
                "projector.n_embed {} != decoder.hidden_size {}",
                self.projector.n_embed, d.hidden_size
            ),
        );
        check(
            d.num_attention_heads > 0 && d.num_attention_heads * d.head_dim == d.hidden_size,
            format!(
                "decoder heads {} × head_dim {} != hidden {}",
                d.num_attention_heads, d.head_dim, d.hidden_size
            ),
        );
        check(
            d.num_key_value_heads == d.num_attention_heads,
            "decoder.num_key_value_heads must equal num_attention_heads (no GQA)".into(),
        );
        check(
            d.head_dim % 2 == 0,
            "decoder.head_dim must be even (RoPE)".into(),
        );
        check(
            d.num_experts_per_tok >= 1 && d.num_experts_per_tok <= d.n_routed_experts,
            format!(
                "num_experts_per_tok {} not in 1..={}",
                d.num_experts_per_tok, d.n_routed_experts
            ),
        );
        check(
            d.first_k_dense_replace >= 0 && d.first_k_dense_replace <= d.num_hidden_layers,
            "first_k_dense_replace out of range".into(),
        );
        check(
            !d.norm_topk_prob,
            "norm_topk_prob=true is not implemented (DeepSeek-OCR uses false)".into(),
        );
        let t = &self.tokens;
        for (name, id) in [
            ("bos", t.bos_token_id),
            ("eos", t.eos_token_id),
            ("pad", t.pad_token_id),
            ("image", t.image_token_id),
        ] {
            check(
                id >= 0 && id < d.vocab_size,
                format!("{name} token id {id} outside vocab {}", d.vocab_size),
            );
        }
        if errs.is_empty() {
            Ok(())
        } else {
            bail!("invalid arch config:\n  {}", errs.join("\n  "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf_dir() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conf/model/deepseek_ocr/arch")
    }

    #[test]
    fn every_arch_preset_is_compiled_in_and_validates() {
        let compiled = [
            ("deepseek_ocr", ArchConfig::deepseek_ocr()),
            ("deepseek_ocr_tiny", ArchConfig::tiny()),
            ("deepseek_ocr2", ArchConfig::deepseek_ocr2()),
            ("deepseek_ocr2_tiny", ArchConfig::tiny_ocr2()),
        ];
        let mut on_disk: Vec<String> = std::fs::read_dir(conf_dir())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
            .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
            .collect();
        on_disk.sort();
        let mut names: Vec<String> = compiled.iter().map(|(n, _)| n.to_string()).collect();
        names.sort();
        assert_eq!(
            on_disk, names,
            "a preset file without its constructor, or the reverse"
        );
        for (name, arch) in &compiled {
            let read =
                ArchConfig::from_yaml_file(&conf_dir().join(format!("{name}.yaml"))).unwrap();
            assert_eq!(&read, arch, "{name}");
            arch.validate().unwrap_or_else(|e| panic!("{name}: {e:#}"));
        }
        // OCR-2 as docs/deepseek-ocr.md §10 describes it against OCR: SAM's last conv to 896,
        // the query encoder instead of CLIP, the same decoder.
        let (ocr, ocr2) = (&compiled[0].1, &compiled[2].1);
        assert_eq!(ocr2.sam.downsample_channels, [512, 896]);
        assert!(ocr2.clip.is_none() && ocr2.query_encoder.is_some() && ocr.query_encoder.is_none());
        assert_eq!(ocr2.decoder, ocr.decoder);
    }

    #[test]
    fn unknown_yaml_key_is_rejected() {
        let mut text = serde_yaml::to_string(&ArchConfig::tiny()).unwrap();
        text = text.replace("decoder:\n", "decoder:\n  hiden_size: 3\n");
        assert!(serde_yaml::from_str::<ArchConfig>(&text).is_err());
    }

    #[test]
    fn validate_lists_all_problems() {
        let mut c = ArchConfig::tiny();
        c.decoder.num_key_value_heads = 1;
        c.projector.input_dim = 7;
        let e = format!("{:#}", c.validate().unwrap_err());
        assert!(
            e.contains("num_key_value_heads") && e.contains("projector.input_dim"),
            "{e}"
        );
    }

    #[test]
    fn hf_config_json_maps_to_constructor() {
        // Abridged from the official config.json (docs/deepseek-ocr.md §1).
        let json = r#"{
          "architectures": ["DeepseekOCRForCausalLM"], "model_type": "deepseek_vl_v2",
          "projector_config": {"projector_type": "linear", "input_dim": 2048, "n_embed": 1280, "model_type": "mlp_projector"},
          "vision_config": {"image_size": 1024, "mlp_ratio": 3.7362, "model_name": "deeplip_b_l", "model_type": "vision",
            "width": {"clip-l-14-224": {"heads": 16, "image_size": 224, "layers": 24, "patch_size": 14, "width": 1024},
                      "sam_vit_b": {"downsample_channels": [512, 1024], "global_attn_indexes": [2, 5, 8, 11], "heads": 12, "layers": 12, "width": 768}}},
          "language_config": {"vocab_size": 129280},
          "vocab_size": 129280, "hidden_size": 1280, "intermediate_size": 6848, "moe_intermediate_size": 896,
          "num_hidden_layers": 12, "first_k_dense_replace": 1, "n_routed_experts": 64, "n_shared_experts": 2,
          "num_experts_per_tok": 6, "topk_method": "greedy", "n_group": 1, "topk_group": 1,
          "num_attention_heads": 10, "num_key_value_heads": 10, "use_mla": false, "q_lora_rank": null,
          "kv_lora_rank": null, "max_position_embeddings": 8192, "bos_token_id": 0, "eos_token_id": 1,
          "torch_dtype": "bfloat16"
        }"#;
        let dir = crate::dataset::test_util::temp_dir("hfcfg");
        let p = dir.join("config.json");
        std::fs::write(&p, json).unwrap();
        assert_eq!(
            ArchConfig::from_hf_config_json(&p).unwrap(),
            ArchConfig::deepseek_ocr()
        );
        std::fs::write(&p, json.replace("\"use_mla\": false", "\"use_mla\": true")).unwrap();
        assert!(ArchConfig::from_hf_config_json(&p).is_err());
    }
}
