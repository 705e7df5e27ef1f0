//! Bad model choices get a message naming the problem and the fix before any run directory
//! exists: `model=hf` with a model type llmprof does not implement or without a checkpoint, and
//! stage 2's module selection naming a module the model does not have.
use super::bad_input::fails;
use crate::support::scratch;

#[test]
fn model_choices_the_run_cannot_honour_are_refused_first() {
    // model=hf: a config.json of a model type llmprof does not implement, or no checkpoint.
    let odd = scratch("hf-mamba");
    std::fs::write(odd.join("config.json"), r#"{"model_type": "mamba"}"#).unwrap();
    let path = format!("model.path={}", odd.display());
    let err = fails("bad-hf-type", &["stage1", "model=hf", &path]);
    assert!(
        err.contains("model_type 'mamba' is not one llmprof implements")
            && err.contains("qwen3 (dense_decoder)"),
        "{err}"
    );
    let err = fails("bad-hf-repo", &["stage1", "model=hf", "model.weights=hub"]);
    assert!(err.contains("fix: set model.repo=<org/name>"), "{err}");
    let err = fails("bad-hf-path", &["stage1", "model=hf"]);
    assert!(
        err.contains("model=hf needs the checkpoint: model.path="),
        "{err}"
    );
    // ncu's module selection names modules the model has, checked before any child runs.
    let err = fails(
        "bad-ncu-module",
        &[
            "stage2",
            "pipeline.ncu.enable=true",
            "pipeline.ncu.modules=[layer.attention.core,layer.atention]",
        ],
    );
    assert!(
        err.contains("pipeline.ncu.modules: 'layer.atention' is not a module of this model"),
        "{err}"
    );
    assert!(
        err.contains("layer.attention.core") && err.contains("lm_head"),
        "{err}"
    );
}
