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
    // config.json values of each released model (tests/fixtures/released_configs, the sources
    // in its README and in the YAML files).
    for model in [
        "qwen3_0_6b",
        "llama3_1_8b",
        "qwen2_5_7b",
        "qwen2_5_0_5b",
        "deepseek_v2_lite",
    ] {
        let path = repo_root().join(format!("tests/fixtures/released_configs/{model}.json"));
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
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
