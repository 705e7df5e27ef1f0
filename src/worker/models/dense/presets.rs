//! The presets' architectures, compiled in from conf/model/dense_decoder/arch/*.yaml (the one
//! source of their numbers) for entry points that run without a composed config (`llmprof
//! debug fast-path`).
use anyhow::{Context, Result};
use llmprof::model::dense::DenseArch;

const PRESETS: [(&str, &str); 10] = [
    (
        "qwen2_5_0_5b",
        include_str!("../../../../conf/model/dense_decoder/arch/qwen2_5_0_5b.yaml"),
    ),
    (
        "qwen2_5_7b",
        include_str!("../../../../conf/model/dense_decoder/arch/qwen2_5_7b.yaml"),
    ),
    (
        "llama3_1_8b",
        include_str!("../../../../conf/model/dense_decoder/arch/llama3_1_8b.yaml"),
    ),
    (
        "qwen3_0_6b",
        include_str!("../../../../conf/model/dense_decoder/arch/qwen3_0_6b.yaml"),
    ),
    (
        "deepseek_v2_lite",
        include_str!("../../../../conf/model/dense_decoder/arch/deepseek_v2_lite.yaml"),
    ),
    (
        "deepseek_v2_lite_tiny",
        include_str!("../../../../conf/model/dense_decoder/arch/deepseek_v2_lite_tiny.yaml"),
    ),
    (
        "qwen3_0_6b_tiny",
        include_str!("../../../../conf/model/dense_decoder/arch/qwen3_0_6b_tiny.yaml"),
    ),
    (
        "qwen2_5_0_5b_tiny",
        include_str!("../../../../conf/model/dense_decoder/arch/qwen2_5_0_5b_tiny.yaml"),
    ),
    (
        "qwen2_5_7b_tiny",
        include_str!("../../../../conf/model/dense_decoder/arch/qwen2_5_7b_tiny.yaml"),
    ),
    (
        "llama3_1_8b_tiny",
        include_str!("../../../../conf/model/dense_decoder/arch/llama3_1_8b_tiny.yaml"),
    ),
];

/// Names of the compiled-in presets.
pub fn names() -> Vec<&'static str> {
    PRESETS.iter().map(|(n, _)| *n).collect()
}

/// Names of the presets of released models (not their `_tiny` forms).
pub fn released() -> Vec<&'static str> {
    names()
        .into_iter()
        .filter(|n| !n.ends_with("_tiny"))
        .collect()
}

/// The architecture of preset `name`, or `None` when there is no such preset.
pub fn arch(name: &str) -> Option<Result<DenseArch>> {
    PRESETS.iter().find(|(n, _)| *n == name).map(|(n, yaml)| {
        let a: DenseArch =
            serde_yaml::from_str(yaml).with_context(|| format!("parsing the {n} preset"))?;
        a.validate()?;
        Ok(a)
    })
}
