//! Every bad input gets a message naming the problem and the fix, a non-zero exit, no panic,
//! and no run directory left behind.
use crate::support::{config_tree, repo_root, run_in, scratch, stderr};
use std::path::Path;

fn product_conf() -> String {
    repo_root().join("conf").display().to_string()
}

/// Run with the product config in a scratch folder; expect failure and return stderr.
pub(crate) fn fails(name: &str, args: &[&str]) -> String {
    let dir = scratch(name);
    let conf = product_conf();
    let mut all = vec!["--config-dir", conf.as_str()];
    all.extend_from_slice(args);
    let out = run_in(&dir, &all);
    let err = stderr(&out);
    assert!(!out.status.success(), "{args:?} should fail\n{err}");
    assert!(!err.contains("panicked"), "{args:?} panicked\n{err}");
    assert!(
        !dir.join("tmp/profile-output").exists(),
        "{args:?} left a run directory"
    );
    err
}

fn fails_in_tree(name: &str, files: &[(&str, &str)], args: &[&str]) -> String {
    let dir = scratch(name);
    let conf = config_tree(&dir, files).display().to_string();
    let mut all = vec!["--config-dir", conf.as_str(), "--cfg", "job", "--resolve"];
    all.extend_from_slice(args);
    let out = run_in(&dir, &all);
    assert!(!out.status.success(), "{args:?} should fail");
    let err = stderr(&out);
    assert!(!err.contains("panicked"), "{err}");
    err
}

#[test]
fn unknown_group_option_lists_the_available_ones() {
    let err = fails("bad-option", &["stage1", "model=deepseek_ocr_huge"]);
    assert!(
        err.contains("Could not find 'model/deepseek_ocr_huge'"),
        "{err}"
    );
    assert!(
        err.contains("Available options in 'model'") && err.contains("deepseek_ocr_tiny"),
        "{err}"
    );
}

#[test]
fn unknown_key_suggests_the_closest_one() {
    let err = fails("bad-key", &["stage1", "infer.max_new_tokns=8"]);
    assert!(
        err.contains("Could not override 'infer.max_new_tokns'"),
        "{err}"
    );
    assert!(err.contains("Did you mean 'infer.max_new_tokens'"), "{err}");
    let err = fails("bad-key2", &["stage2", "pipeline.nsys.enabel=true"]);
    assert!(err.contains("Did you mean 'pipeline.nsys.enable'"), "{err}");
}

#[test]
fn added_unknown_key_is_rejected_by_the_typed_spec() {
    let err = fails("bad-typed-key", &["stage1", "+infer.max_new_tokns=8"]);
    assert!(
        err.contains("unknown config key 'infer.max_new_tokns'"),
        "{err}"
    );
    assert!(err.contains("did you mean 'infer.max_new_tokens'"), "{err}");
}

#[test]
fn plus_on_an_existing_key_says_how_to_fix_it() {
    let err = fails("plus-existing", &["stage1", "+infer.max_new_tokens=5"]);
    assert!(
        err.contains("An item is already at 'infer.max_new_tokens'"),
        "{err}"
    );
    assert!(err.contains("++infer.max_new_tokens=5"), "{err}");
}

#[test]
fn malformed_overrides_are_reported() {
    let err = fails("malformed", &["--cfg", "job", "infer.max_new_tokens=[1,2"]);
    assert!(
        err.contains("Error parsing override 'infer.max_new_tokens=[1,2'"),
        "{err}"
    );
    let err = fails("no-equals", &["--cfg", "job", "infer.max_new_tokens"]);
    assert!(err.contains("missing '='"), "{err}");
    let err = fails("sweep-single", &["--cfg", "job", "runtime.repeats=1,2"]);
    assert!(
        err.contains("Ambiguous value") && err.contains("--multirun"),
        "{err}"
    );
}

#[test]
fn wrong_value_types_and_ranges_name_the_key() {
    let err = fails("bad-type", &["stage1", "runtime.repeats=abc"]);
    assert!(
        err.contains("invalid value for config key 'runtime.repeats'"),
        "{err}"
    );
    let err = fails(
        "bad-range",
        &["stage1", "dataset.sampling.num_samples_per_epoch=0"],
    );
    assert!(
        err.contains("dataset.sampling.num_samples_per_epoch=0 is out of range"),
        "{err}"
    );
    let err = fails("bad-enum", &["stage1", "model.preprocess.mode=huge"]);
    assert!(err.contains("model.preprocess.mode"), "{err}");
    // Counts that size allocations have upper bounds, checked before the run starts.
    for (arg, key) in [
        (
            "runtime.repeats=4000000000",
            "runtime.repeats=4000000000 is out of range: at most 100000",
        ),
        (
            "runtime.batch_size=100000",
            "runtime.batch_size=100000 is out of range: at most 4096",
        ),
        (
            "infer.max_new_tokens=4000000000",
            "infer.max_new_tokens=4000000000 is out of range",
        ),
        (
            "dataset.sampling.num_epochs=4000000000",
            "dataset.sampling.num_epochs=4000000000 is out of range",
        ),
    ] {
        let err = fails("bad-count", &["stage1", arg]);
        assert!(err.contains(key), "{arg}: {err}");
    }
    let err = fails(
        "bad-product",
        &[
            "stage1",
            "dataset.sampling.num_epochs=99999",
            "dataset.sampling.num_samples_per_epoch=200",
        ],
    );
    assert!(err.contains("at most 10000000 per run"), "{err}");
}

#[test]
fn malformed_yaml_names_file_and_line() {
    let err = fails_in_tree(
        "bad-yaml",
        &[
            ("config.yaml", "defaults:\n  - model: broken\n"),
            ("model/broken.yaml", "name: x\nlayers: [1, 2\n"),
        ],
        &[],
    );
    assert!(err.contains("broken.yaml:"), "{err}");
    assert!(err.contains("malformed YAML"), "{err}");
}

#[test]
fn missing_config_dir_and_name() {
    let dir = scratch("missing-dir");
    let out = run_in(&dir, &["--config-dir", "/nonexistent/conf", "--cfg", "job"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("config directory '/nonexistent/conf' does not exist"),
        "{}",
        stderr(&out)
    );
    let conf = product_conf();
    let out = run_in(
        &dir,
        &[
            "--config-dir",
            &conf,
            "--config-name",
            "nope",
            "--cfg",
            "job",
        ],
    );
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("Cannot find primary config 'nope'") && err.contains("available: config"),
        "{err}"
    );
}

#[test]
fn interpolation_errors() {
    let err = fails_in_tree(
        "interp-missing",
        &[("config.yaml", "a: 1\nb: ${c.d}\n")],
        &[],
    );
    assert!(err.contains("Interpolation key 'c.d' not found"), "{err}");
    let err = fails_in_tree(
        "interp-cycle",
        &[("config.yaml", "a: ${b}\nb: ${c}\nc: ${a}\n")],
        &[],
    );
    assert!(err.contains("Cyclic interpolation"), "{err}");
    let err = fails_in_tree(
        "interp-override",
        &[("config.yaml", "a: 1\n")],
        &["+x=${nope}"],
    );
    assert!(err.contains("Interpolation key 'nope' not found"), "{err}");
}

#[test]
fn no_run_directory_for_cfg() {
    let dir = scratch("cfg-only");
    let conf = product_conf();
    let out = run_in(&dir, &["--config-dir", &conf, "stage1", "--cfg", "job"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!Path::new(&dir.join("tmp")).exists());
}

#[test]
fn cuda_graph_without_its_prerequisites_names_the_fix() {
    let err = fails(
        "graph-growing-cache",
        &["stage1", "runtime.optim.static_kv_cache=false"],
    );
    assert!(
        err.contains("runtime.optim.cuda_graph=true needs runtime.optim.static_kv_cache=true")
            && err.contains(
                "fix: set runtime.optim.static_kv_cache=true, or runtime.optim.cuda_graph=false"
            ),
        "{err}"
    );
    let err = fails(
        "graph-expert-loop",
        &["stage1", "model.optim.grouped_moe=false"],
    );
    assert!(
        err.contains("needs model.optim.grouped_moe=true") && err.contains("fix:"),
        "{err}"
    );
    let err = fails(
        "graph-bucket",
        &["stage1", "runtime.optim.graph_kv_bucket=0"],
    );
    assert!(err.contains("runtime.optim.graph_kv_bucket"), "{err}");
}

#[test]
fn kernel_switches_without_their_prerequisites_name_the_fix() {
    // (run name, overrides, the switch left on, the switch it needs): one refusal at a time, the
    // switches the default turns on after the one tested turned off.
    let sam_off = [
        "model.optim.sam_cuda_kernels=false",
        "model.optim.sam_rel_pos_gemm=false",
        "model.optim.sam_proj_in_windows=false",
    ];
    let cases: [(&str, Vec<&str>, &str, &str); 12] = [
        (
            "sam-kernels-materialised-bias",
            vec!["model.optim.sam_fused_rel_pos=false"],
            "sam_cuda_kernels",
            "sam_fused_rel_pos",
        ),
        (
            "sam-refinements-without-kernels",
            vec![sam_off[0], sam_off[2]],
            "sam_rel_pos_gemm",
            "sam_cuda_kernels",
        ),
        (
            "sam-windowed-projection-without-kernels",
            vec![sam_off[0], sam_off[1]],
            "sam_proj_in_windows",
            "sam_cuda_kernels",
        ),
        (
            "global-kernel-without-kernels",
            sam_off.to_vec(),
            "sam_global_attention_kernel",
            "sam_cuda_kernels",
        ),
        (
            "window-fmha-kernel-without-kernels",
            [
                &sam_off[..],
                &["model.optim.sam_global_attention_kernel=false"],
            ]
            .concat(),
            "sam_window_fmha_kernel",
            "sam_cuda_kernels",
        ),
        (
            "window-kernel-without-windowed-projection",
            vec![
                "model.optim.sam_window_attention_kernel=true",
                "model.optim.sam_proj_in_windows=false",
            ],
            "sam_window_attention_kernel",
            "sam_proj_in_windows",
        ),
        (
            "graph-uploads-of-fp32-views",
            vec!["model.optim.vision_uint8_upload=false"],
            "vision_graph_uploads",
            "vision_uint8_upload",
        ),
        (
            "routing-kernel-expert-loop",
            vec![
                "model.optim.grouped_moe=false",
                "runtime.optim.cuda_graph=false",
            ],
            "moe_routing_kernel",
            "grouped_moe",
        ),
        (
            "rope-kernel-split-projections",
            vec!["runtime.optim.fused_projections=false"],
            "rope_kv_kernel",
            "fused_projections",
        ),
        (
            "swiglu-kernel-split-projections",
            vec![
                "runtime.optim.fused_projections=false",
                "runtime.optim.rope_kv_kernel=false",
            ],
            "swiglu_kernel",
            "fused_projections",
        ),
        (
            "add-norm-kernel-hf-norm",
            vec!["runtime.optim.fused_rms_norm=false"],
            "add_rms_norm_kernel",
            "fused_rms_norm",
        ),
        (
            "combine-kernel-libtorch-routing",
            vec!["model.optim.moe_routing_kernel=false"],
            "moe_combine_kernel",
            "moe_routing_kernel",
        ),
    ];
    for (name, overrides, switch, needs) in cases {
        let err = fails(name, &[&["stage1"][..], &overrides].concat());
        // The engine's switches are runtime.optim, the family's own model.optim.
        let engine = [
            "rope_kv_kernel",
            "fused_projections",
            "swiglu_kernel",
            "add_rms_norm_kernel",
            "fused_rms_norm",
        ];
        let key = |k: &str| {
            let owner = if engine.contains(&k) {
                "runtime"
            } else {
                "model"
            };
            format!("{owner}.optim.{k}")
        };
        let (switch, needs) = (key(switch), key(needs));
        let what = format!("{switch}=true needs {needs}=true");
        let fix = format!("fix: set {needs}=true, or {switch}=false");
        assert!(err.contains(&what) && err.contains(&fix), "{name}: {err}");
    }
}

#[test]
fn runtime_eager_turns_every_switch_off() {
    let dir = scratch("runtime-eager");
    let conf = product_conf();
    let out = run_in(
        &dir,
        &[
            "--config-dir",
            &conf,
            "stage1",
            "runtime=eager",
            "--cfg",
            "job",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let tree: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    for (owner, key) in [
        ("runtime", "cuda_graph"),
        ("runtime", "fused_projections"),
        ("model", "grouped_moe"),
        ("runtime", "sdpa"),
        ("runtime", "static_kv_cache"),
        ("runtime", "fused_rms_norm"),
        ("runtime", "sync_free_decode"),
        ("model", "batched_vision"),
        ("model", "vision_cuda_graph"),
    ] {
        let value = &tree[owner]["optim"][key];
        assert_eq!(
            value,
            &serde_yaml::Value::Bool(false),
            "{owner}.optim.{key}: {text}"
        );
    }
    // The rest of the runtime group still comes from fast.yaml.
    assert_eq!(
        tree["runtime"]["repeats"],
        serde_yaml::Value::from(3),
        "{text}"
    );
}

/// A config group file holding one value instead of `key: value` lines (a round-2 guarantee):
/// a number is refused naming the file and the fix; a word reads as `{word: null}`, as in Hydra,
/// and an override into that group then names the file and the fix after Hydra's message.
#[test]
fn a_group_file_holding_one_value_names_the_file_and_the_fix() {
    let tree = [
        ("config.yaml", "defaults:\n  - runtime: fast\n  - _self_\n"),
        ("runtime/fast.yaml", "warmup: 1\n"),
        ("runtime/number.yaml", "5\n"),
        ("runtime/word.yaml", "fast\n"),
    ];
    let err = fails_in_tree("scalar-number", &tree, &["runtime=number"]);
    assert!(
        err.contains("number.yaml")
            && err.contains("Invalid loaded object type: int")
            && err.contains("fix:"),
        "{err}"
    );
    let err = fails_in_tree("scalar-word", &tree, &["runtime=word", "runtime.warmup=3"]);
    assert!(
        err.contains("Could not override 'runtime.warmup'")
            && err.contains("config 'runtime/word' holds the single word 'fast'")
            && err.contains("fix: write that file as `key: value` lines"),
        "{err}"
    );
}

/// A checkpoint whose own config.json describes another model (#40 item 7): refused before the
/// run starts, each differing field named with both values; one of another family likewise.
#[test]
fn a_checkpoint_config_that_contradicts_the_model_is_refused() {
    let ckpt = scratch("ckpt-mismatch-files");
    std::fs::write(
        ckpt.join("config.json"),
        r#"{"model_type": "qwen2", "vocab_size": 152064, "hidden_size": 3584, "intermediate_size": 18944,
            "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4,
            "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "max_position_embeddings": 32768,
            "tie_word_embeddings": false, "bos_token_id": 151643, "eos_token_id": 151643}"#,
    )
    .unwrap();
    let path = format!("model.path={}", ckpt.display());
    let err = fails(
        "ckpt-mismatch",
        &[
            "stage1",
            "model=qwen2_5_0_5b",
            "model.weights=files",
            &path,
            "device=cpu",
        ],
    );
    assert!(
        err.contains("does not match the chosen model")
            && err.contains(
                "model.arch.hidden_size: config.json says 3584, the chosen model says 896"
            ),
        "{err}"
    );
    let err = fails(
        "ckpt-other-family",
        &[
            "stage1",
            "model=deepseek_ocr",
            "model.weights=files",
            &path,
            "device=cpu",
        ],
    );
    assert!(
        err.contains("does not match the chosen model")
            || err.contains("not a deepseek_ocr checkpoint"),
        "{err}"
    );
    assert!(err.contains("hidden_size"), "{err}");
}
