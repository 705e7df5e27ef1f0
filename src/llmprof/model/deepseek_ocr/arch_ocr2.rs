//! DeepSeek-OCR-2's vision encoder after SAM (docs/deepseek-ocr.md §10): a Qwen2 decoder stack
//! used as an encoder over [N SAM tokens | N learned queries], keeping the query outputs. Its
//! architecture, and the released and tiny DeepSeek-OCR-2 configurations.
use super::arch::*;
use serde::{Deserialize, Serialize};

/// The Qwen2 encoder of DeepEncoder V2 (Qwen2-0.5B dimensions in the release).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueryEncoderConfig {
    /// Token width (896); equals SAM's output channels (no input projection).
    pub hidden_size: i64,
    pub num_hidden_layers: i64,
    pub num_attention_heads: i64,
    /// GQA: K/V heads (2 for 14 query heads).
    pub num_key_value_heads: i64,
    pub head_dim: i64,
    /// SwiGLU width (4864).
    pub intermediate_size: i64,
    pub rms_norm_eps: f64,
    pub rope_theta: f64,
    /// View sides with a learned query table `query_<side>` of (side/64)² queries ([768, 1024]):
    /// the only view sizes the model accepts.
    pub query_views: Vec<i64>,
}

impl QueryEncoderConfig {
    /// Queries (= SAM tokens) of a view of `side` pixels with `pixels_per_token` pixels per
    /// token side.
    pub fn queries(side: i64, pixels_per_token: i64) -> i64 {
        let t = side / pixels_per_token;
        t * t
    }

    /// What is wrong with these dimensions next to SAM's output.
    pub fn problems(&self, sam_channels: i64, pixels_per_token: i64) -> Vec<String> {
        let mut e = Vec::new();
        if self.hidden_size != sam_channels {
            e.push(format!(
                "query_encoder.hidden_size {} != SAM output channels {sam_channels}",
                self.hidden_size
            ));
        }
        if self.num_attention_heads <= 0
            || self.num_attention_heads * self.head_dim != self.hidden_size
        {
            e.push(format!(
                "query_encoder heads {} × head_dim {} != hidden {}",
                self.num_attention_heads, self.head_dim, self.hidden_size
            ));
        }
        if self.num_key_value_heads <= 0 || self.num_attention_heads % self.num_key_value_heads != 0
        {
            e.push(format!(
                "query_encoder.num_key_value_heads {} does not divide num_attention_heads {}",
                self.num_key_value_heads, self.num_attention_heads
            ));
        }
        if self.head_dim % 2 != 0 {
            e.push("query_encoder.head_dim must be even (RoPE)".into());
        }
        if self.query_views.is_empty()
            || self
                .query_views
                .iter()
                .any(|&s| s <= 0 || s % pixels_per_token != 0)
        {
            e.push(format!(
                "query_encoder.query_views {:?} must be non-empty multiples of {pixels_per_token} px",
                self.query_views
            ));
        }
        e
    }
}

impl ArchConfig {
    /// The released DeepSeek-OCR-2 (docs/deepseek-ocr.md §10): DeepSeek-OCR's SAM with a
    /// 512→896 last conv, the Qwen2-0.5B query encoder, an 896→1280 projector, the same decoder.
    pub fn deepseek_ocr2() -> Self {
        Self::preset(
            "deepseek_ocr2",
            include_str!("../../../../conf/model/deepseek_ocr/arch/deepseek_ocr2.yaml"),
        )
    }

    /// DeepSeek-OCR-2's structure with [`ArchConfig::tiny`]'s dimensions, for CPU tests and the
    /// fallback: GQA (4 query heads on 2 K/V heads) and query tables for the tiny crop mode
    /// (64 px tiles, 128 px global views) and the released one (768, 1024).
    pub fn tiny_ocr2() -> Self {
        Self::preset(
            "deepseek_ocr2_tiny",
            include_str!("../../../../conf/model/deepseek_ocr/arch/deepseek_ocr2_tiny.yaml"),
        )
    }

    /// Whether image features are laid out as rows ending in a newline vector (DeepSeek-OCR) or
    /// as plain query sequences (DeepSeek-OCR-2).
    pub fn token_layout(&self) -> TokenLayout {
        if self.query_encoder.is_some() {
            TokenLayout::Queries
        } else {
            TokenLayout::RowsWithNewlines
        }
    }

    /// An error naming a view side the query encoder has no queries for (None: every side is
    /// accepted).
    pub fn check_view_side(&self, side: u32) -> Option<String> {
        let q = self.query_encoder.as_ref()?;
        (!q.query_views.contains(&(side as i64))).then(|| {
            format!(
                "a {side} px view: DeepSeek-OCR-2 has learned queries only for views of {:?} px",
                q.query_views
            )
        })
    }
}

impl ArchConfig {
    /// The encoder after SAM, as reports and regions name it.
    pub fn encoder_name(&self) -> &'static str {
        match self.token_layout() {
            TokenLayout::RowsWithNewlines => "clip",
            TokenLayout::Queries => "query_encoder",
        }
    }
}

/// How one image's features replace its `<image>` ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenLayout {
    /// DeepSeek-OCR: each row of a view's token grid is followed by `image_newline`; tiles form
    /// one mosaic (docs/deepseek-ocr.md §3.6).
    RowsWithNewlines,
    /// DeepSeek-OCR-2: each view's query outputs in order, tile after tile, no newlines.
    Queries,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ocr2_constructors_validate_and_count_queries() {
        ArchConfig::deepseek_ocr2().validate().unwrap();
        ArchConfig::tiny_ocr2().validate().unwrap();
        let a = ArchConfig::deepseek_ocr2();
        let ppt = a.pixels_per_token();
        assert_eq!(QueryEncoderConfig::queries(1024, ppt), 256);
        assert_eq!(QueryEncoderConfig::queries(768, ppt), 144);
        assert_eq!(a.token_layout(), TokenLayout::Queries);
        assert_eq!(
            ArchConfig::deepseek_ocr().token_layout(),
            TokenLayout::RowsWithNewlines
        );
        assert!(a.check_view_side(640).unwrap().contains("[768, 1024]"));
        assert!(a.check_view_side(768).is_none());
    }

    #[test]
    fn yaml_files_match_constructors() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../conf/model/deepseek_ocr/arch");
        let real = ArchConfig::from_yaml_file(&dir.join("deepseek_ocr2.yaml")).unwrap();
        assert_eq!(real, ArchConfig::deepseek_ocr2());
        let tiny = ArchConfig::from_yaml_file(&dir.join("deepseek_ocr2_tiny.yaml")).unwrap();
        assert_eq!(tiny, ArchConfig::tiny_ocr2());
    }

    #[test]
    fn both_or_neither_encoder_is_an_error() {
        let mut a = ArchConfig::deepseek_ocr2();
        a.clip = ArchConfig::deepseek_ocr().clip;
        let e = format!("{:#}", a.validate().unwrap_err());
        assert!(e.contains("exactly one of `clip`"), "{e}");
        let mut b = ArchConfig::deepseek_ocr2();
        b.sam.downsample_channels = vec![512, 1024];
        let e = format!("{:#}", b.validate().unwrap_err());
        assert!(
            e.contains("query_encoder.hidden_size 896 != SAM output channels 1024"),
            "{e}"
        );
    }
}
