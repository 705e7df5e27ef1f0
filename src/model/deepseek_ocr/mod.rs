//! DeepSeek-OCR (spec docs/deepseek-ocr-spec.md): vision encoder, projector, MoE decoder.
pub mod attention;
pub mod clip;
pub mod config;
pub mod decoder;
pub mod kv_cache;
pub mod layers;
pub mod moe;
pub mod output;
pub mod preprocess;
pub mod prompt;
pub mod projector;
pub mod sam;
pub mod tokenizer;
pub mod weights;

#[cfg(test)]
pub(crate) mod test_util {
    /// A fresh, empty temporary directory unique to this process and tag.
    pub fn temp_dir(tag: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("llmprof-test-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }
}
