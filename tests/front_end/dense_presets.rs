//! The dense decoder presets compose (`--cfg job`) to the architecture of their real
//! config.json, and their tiny options to the tiny of it.
use crate::support::{repo_root, run_in, scratch, stderr, stdout};
use llmprof::model::dense::DenseArch;

fn composed_arch(model: &str) -> DenseArch {
    let dir = scratch(&format!("cfg-{model}"));
    let conf = repo_root().join("conf").display().to_string();
    let out = run_in(
        &dir,
        &[
            "--config-dir",
            &conf,
            "stage1",
            &format!("model={model}"),
            "--cfg",
            "job",
        ],
    );
    assert!(out.status.success(), "{model}: {}", stderr(&out));
    let text = stdout(&out);
    let job: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    assert_eq!(
        job["model"]["family"].as_str(),
        Some("dense_decoder"),
        "{text}"
    );
    assert_eq!(job["model"]["name"].as_str(), Some(model));
    serde_yaml::from_value(job["model"]["arch"].clone()).unwrap()
}

#[test]
fn each_preset_composes_to_its_config_json() {
    // config.json fields of each model (the sources are cited in the YAML files).
    let llama = serde_json::json!({
        "model_type": "llama", "vocab_size": 128256, "hidden_size": 4096,
        "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 8, "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
        "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192, "rope_type": "llama3"},
        "max_position_embeddings": 131072, "attention_bias": false,
        "tie_word_embeddings": false, "bos_token_id": 128000, "eos_token_id": 128001});
    let qwen7 = serde_json::json!({
        "model_type": "qwen2", "vocab_size": 152064, "hidden_size": 3584,
        "intermediate_size": 18944, "num_hidden_layers": 28, "num_attention_heads": 28,
        "num_key_value_heads": 4, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
        "max_position_embeddings": 131072, "tie_word_embeddings": false,
        "bos_token_id": 151643, "eos_token_id": 151643});
    let qwen05 = serde_json::json!({
        "model_type": "qwen2", "vocab_size": 151936, "hidden_size": 896,
        "intermediate_size": 4864, "num_hidden_layers": 24, "num_attention_heads": 14,
        "num_key_value_heads": 2, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
        "max_position_embeddings": 32768, "tie_word_embeddings": true,
        "bos_token_id": 151643, "eos_token_id": 151643});
    let qwen3 = serde_json::json!({
        "model_type": "qwen3", "vocab_size": 151936, "hidden_size": 1024,
        "intermediate_size": 3072, "num_hidden_layers": 28, "num_attention_heads": 16,
        "num_key_value_heads": 8, "head_dim": 128, "rms_norm_eps": 1e-6,
        "rope_theta": 1000000.0, "max_position_embeddings": 40960, "attention_bias": false,
        "tie_word_embeddings": true, "bos_token_id": 151643, "eos_token_id": 151645});
    for (model, json) in [
        ("qwen3_0_6b", qwen3),
        ("llama3_1_8b", llama),
        ("qwen2_5_7b", qwen7),
        ("qwen2_5_0_5b", qwen05),
    ] {
        let want = DenseArch::from_hf_config(&json).unwrap();
        assert_eq!(composed_arch(model), want, "{model}");
        assert_eq!(
            composed_arch(&format!("{model}_tiny")),
            want.tiny(),
            "{model}_tiny"
        );
    }
}

#[test]
fn a_bad_dense_arch_override_names_the_key() {
    let dir = scratch("cfg-dense-bad");
    let conf = repo_root().join("conf").display().to_string();
    let out = run_in(
        &dir,
        &[
            "--config-dir",
            &conf,
            "stage1",
            "model=llama3_1_8b",
            "model.arch.num_key_value_heads=5",
        ],
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("num_key_value_heads=5"),
        "{}",
        stderr(&out)
    );
}
