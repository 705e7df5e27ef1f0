//! Dense decoder presets end to end on the CPU: each preset runs as its tiny fallback (with the
//! notice), on the text datasets, and writes every artifact with TTFT/TPOT and ISL/OSL.
use crate::support::{run_with_repo_conf, scratch, short_stage1, stderr};

#[test]
fn each_preset_runs_stage1_as_its_tiny_fallback_on_random_tokens() {
    for preset in [
        "qwen2_5_0_5b",
        "qwen2_5_7b",
        "llama3_1_8b",
        "qwen3_0_6b",
        "deepseek_v2_lite",
    ] {
        let model = format!("model={preset}");
        let (run, m) = short_stage1(
            &format!("dense-{preset}"),
            &[
                &model,
                "dataset=random_tokens",
                "dataset.num_prompts=2",
                "dataset.input_len=10",
                "dataset.output_len=4",
                "dataset.range_ratio=0.5",
                "infer.ignore_eos=true",
                "infer.no_repeat_ngram_size=0",
            ],
        );
        crate::support::assert_non_empty_files(&run, &crate::support::STAGE1_FILES, preset);
        assert_eq!(m.setup.model, format!("{preset}_tiny"));
        assert_eq!(m.setup.mode, None, "text models have no resolution mode");
        assert!(
            m.notes.iter().any(|n| n.contains("CPU fallback")),
            "{preset}: {:?}",
            m.notes
        );
        for stage in ["prefill", "decode", "decode_step", "e2e"] {
            assert!(m.stages.contains_key(stage), "{preset}: {stage} missing");
        }
        assert!(
            !m.stages.contains_key("vision"),
            "{preset}: no vision region"
        );
        assert_eq!(m.requests.len(), 4);
        let inputs = std::fs::read_to_string(run.join("inputs.yaml")).unwrap();
        for r in &m.requests {
            // ISL drawn from [5, 15], OSL from [2, 6]; ignore_eos gives each row exactly its OSL.
            assert_eq!(r.isl.len(), 1);
            assert!((5..=15).contains(&r.isl[0]), "{preset}: {r:?}");
            assert!((2..=6).contains(&r.osl[0]), "{preset}: {r:?}");
            assert!(
                inputs.contains(&format!("output_len: {}", r.osl[0])),
                "{inputs}"
            );
            assert_eq!(r.output_tokens, r.osl[0]);
            assert!(
                r.ttft_ms.is_some() && r.tpot_ms.is_some(),
                "{preset}: {r:?}"
            );
        }
        let f = m.flops.expect("analytic FLOPs");
        assert!(f.prefill_gflop > 0.0 && f.vision_gflop == 0.0, "{f:?}");
        let stat = std::fs::read_to_string(run.join("static_compute.md")).unwrap();
        assert!(stat.contains("attention core"), "{stat}");
    }
}

#[test]
fn prompts_dataset_runs_with_a_batch_and_byte_fallback_notice() {
    let (_, m) = short_stage1(
        "dense-prompts",
        &[
            "model=llama3_1_8b_tiny",
            "dataset=prompts",
            "dataset.sampling.num_samples_per_epoch=3",
            "runtime.batch_size=2",
            "infer.max_new_tokens=3",
            "infer.ignore_eos=true",
            "infer.no_repeat_ngram_size=0",
        ],
    );
    // 3 prompts in batches of 2 and 1, two repeats each.
    assert_eq!(m.requests.len(), 4);
    assert!(m
        .requests
        .iter()
        .any(|r| r.batch_rows == 2 && r.isl.len() == 2));
    assert!(
        m.notes.iter().any(|n| n.contains("byte by byte")),
        "{:?}",
        m.notes
    );
    assert!(m.requests.iter().all(|r| r.osl.iter().all(|&o| o == 3)));
}

#[test]
fn text_and_image_mismatches_are_clear_errors() {
    let dir = scratch("dense-mismatch");
    let out = run_with_repo_conf(
        &dir,
        &["stage1", "model=qwen2_5_0_5b_tiny", "hydra.run.dir=run"],
    );
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("text model") && err.contains("dataset=random_tokens"),
        "{err}"
    );
    let out = run_with_repo_conf(
        &dir,
        &[
            "stage1",
            "model=deepseek_ocr_tiny",
            "dataset=random_tokens",
            "hydra.run.dir=run2",
        ],
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("reads page images"),
        "{}",
        stderr(&out)
    );
}

/// `model=hf` builds a run from a config.json alone (synthetic weights): the family and the
/// architecture come from it and are recorded in the run's resolved config (#42).
#[test]
fn model_hf_runs_stage1_from_a_config_json() {
    let dir = scratch("hf-config");
    let cfg = dir.join("config.json");
    std::fs::write(
        &cfg,
        r#"{"model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"], "vocab_size": 512,
            "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
            "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
            "rms_norm_eps": 1e-6, "rope_parameters": {"rope_theta": 1000000.0, "rope_type": "default"},
            "max_position_embeddings": 2048, "attention_bias": false, "tie_word_embeddings": true,
            "bos_token_id": 1, "eos_token_id": 2}"#,
    )
    .unwrap();
    let config = format!("model.config={}", cfg.display());
    let (run, m) = short_stage1(
        "hf-config-run",
        &[
            "model=hf",
            "model.weights=synthetic",
            &config,
            "dataset=random_tokens",
            "dataset.num_prompts=1",
            "dataset.input_len=12",
            "dataset.output_len=4",
            "infer.ignore_eos=true",
        ],
    );
    assert_eq!(m.setup.model, "hf");
    assert!(
        !m.notes.iter().any(|n| n.contains("CPU fallback")),
        "a checkpoint runs as it is: {:?}",
        m.notes
    );
    let resolved = std::fs::read_to_string(run.join("config.resolved.yaml")).unwrap();
    assert!(
        resolved.contains("family: dense_decoder") && resolved.contains("qk_norm: true"),
        "{resolved}"
    );
    assert!(m.stages.contains_key("decode_step"));
}
