//! The inputs a run processes: the dataset's sampled items, each prepared by the model, and
//! `inputs.yaml` recording what each became.
use anyhow::Result;
use llmprof::dataset::InputItem;
use llmprof::model::Model;
use llmprof::report::artifacts;
use llmprof::spec::RunSpec;
use std::path::{Path, PathBuf};

/// List the dataset's inputs and apply the sampling keys.
pub fn items(spec: &RunSpec) -> Result<Vec<InputItem>> {
    llmprof::dataset::inputs(&spec.dataset, &base_dir(&spec.dataset.root))
}

/// Folder that relative data paths are read from: the current directory when the path exists
/// there, else the repository that holds the config (`LLMPROF_BASE_DIR`, set by `llmprof`).
pub fn base_dir(relative: &str) -> PathBuf {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    if Path::new(relative).is_absolute() || cwd.join(relative).exists() {
        return cwd;
    }
    std::env::var_os("LLMPROF_BASE_DIR")
        .map(PathBuf::from)
        .unwrap_or(cwd)
}

/// Every item prepared by the model, with the prompt of `infer.prompt`.
pub fn prepare_all<M: Model>(model: &M, spec: &RunSpec, items: &[InputItem]) -> Result<Vec<M::Request>> {
    items
        .iter()
        .map(|item| model.prepare(item, &spec.infer.prompt))
        .collect()
}

/// Prepare every item and record them in `inputs.yaml` (stage 1 and infer).
pub fn prepare_and_record<M: Model>(
    model: &M,
    spec: &RunSpec,
    items: &[InputItem],
    run_dir: &Path,
) -> Result<Vec<M::Request>> {
    let prepared = prepare_all(model, spec, items)?;
    let infos: Vec<_> = prepared.iter().map(|r| model.describe(r)).collect();
    artifacts::write(run_dir, artifacts::INPUTS_YAML, &artifacts::inputs_yaml(&infos))?;
    Ok(prepared)
}
