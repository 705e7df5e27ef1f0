use super::*;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("llmprof-hf-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

const QWEN3: &str = r#"{"model_type": "qwen3", "vocab_size": 256, "hidden_size": 64,
    "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 2, "head_dim": 16, "rms_norm_eps": 1e-6,
    "rope_parameters": {"rope_theta": 10000.0, "rope_type": "default"},
    "max_position_embeddings": 256, "attention_bias": false, "tie_word_embeddings": true,
    "bos_token_id": 1, "eos_token_id": 2}"#;

fn tree(yaml: &str) -> Node {
    crate::config::yaml::parse(yaml).unwrap()
}

#[test]
fn a_checkpoint_folder_gives_the_family_arch_and_switches() {
    let d = dir("folder");
    std::fs::write(d.join("config.json"), QWEN3).unwrap();
    let mut t = tree(&format!(
        "model: {{family: from_config, arch: from_config, optim: eager, weights: files, path: {}}}\n",
        d.display()
    ));
    resolve(&mut t).unwrap();
    assert_eq!(
        t.get_path("model.family"),
        Some(&Node::Str("dense_decoder".into()))
    );
    assert_eq!(t.get_path("model.arch.qk_norm"), Some(&Node::Bool(true)));
    assert_eq!(t.get_path("model.arch.head_dim"), Some(&Node::Int(16)));
    assert!(matches!(t.get_path("model.optim"), Some(Node::Map(_))));
    // What was written parses as the family's schema.
    let arch = Family::DenseDecoder
        .parse_arch(t.get_path("model.arch").unwrap().to_serde_json())
        .unwrap();
    assert_eq!(arch.family(), Family::DenseDecoder);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn synthetic_weights_take_model_config_and_presets_are_left_alone() {
    let d = dir("synthetic");
    let file = d.join("cfg.json");
    std::fs::write(&file, QWEN3).unwrap();
    let mut t = tree(&format!(
        "model: {{family: from_config, arch: from_config, weights: synthetic, path: '', config: {}}}\n",
        file.display()
    ));
    resolve(&mut t).unwrap();
    assert_eq!(
        t.get_path("model.family"),
        Some(&Node::Str("dense_decoder".into()))
    );
    let err = resolve(&mut tree(
        "model: {family: from_config, arch: from_config, weights: synthetic, path: '', config: null}\n",
    ))
    .unwrap_err();
    assert!(
        format!("{err:#}").contains("model.config=<path to a config.json>"),
        "{err:#}"
    );
    let mut preset = tree("model: {family: dense_decoder, arch: {x: 1}}\n");
    let before = preset.clone();
    resolve(&mut preset).unwrap();
    assert_eq!(preset, before);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn unsupported_or_odd_configs_are_refused_by_name() {
    let d = dir("odd");
    std::fs::write(d.join("config.json"), r#"{"model_type": "mamba"}"#).unwrap();
    let yaml = format!(
        "model: {{family: from_config, arch: from_config, weights: files, path: {}}}\n",
        d.display()
    );
    let err = format!("{:#}", resolve(&mut tree(&yaml)).unwrap_err());
    assert!(
        err.contains("model_type 'mamba' is not one llmprof implements"),
        "{err}"
    );
    assert!(
        err.contains("qwen3 (dense_decoder)") && err.contains("llama"),
        "{err}"
    );
    std::fs::write(d.join("config.json"), "not json").unwrap();
    let err = format!("{:#}", resolve(&mut tree(&yaml)).unwrap_err());
    assert!(err.contains("is not JSON"), "{err}");
    std::fs::remove_file(d.join("config.json")).unwrap();
    let err = format!("{:#}", resolve(&mut tree(&yaml)).unwrap_err());
    assert!(err.contains("config.json"), "{err}");
    let err = format!(
        "{:#}",
        resolve(&mut tree(
            "model: {family: from_config, arch: from_config, weights: files, path: ''}\n"
        ))
        .unwrap_err()
    );
    assert!(
        err.contains("model=hf needs the checkpoint: model.path="),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&d);
}
