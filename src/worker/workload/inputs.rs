//! The inputs a run processes: the dataset's sampled items, each prepared by the model, and
//! `inputs.yaml` recording what each became.
use anyhow::{Context, Result};
use llmprof::dataset::{BatchPlan, InputItem};
use llmprof::model::Model;
use llmprof::report::artifacts;
use llmprof::spec::RunSpec;
use std::path::Path;

/// List the dataset's inputs and apply the sampling keys. The front end made the dataset's
/// paths absolute in config.resolved.yaml; relative ones (a hand-written config) are taken from
/// the current directory.
/// Also returns the notes a report must carry (dataset entries skipped as not regular files).
pub fn items(spec: &RunSpec) -> Result<(Vec<InputItem>, Vec<String>)> {
    let cwd = std::env::current_dir().context("reading the current directory")?;
    let (items, skipped) = llmprof::dataset::inputs_and_skipped(&spec.dataset, &cwd)?;
    Ok((
        items,
        llmprof::dataset::skipped_note(&skipped)
            .into_iter()
            .collect(),
    ))
}

/// Every item prepared by the model, with the prompt of `infer.prompt`.
pub fn prepare_all<M: Model>(
    model: &M,
    spec: &RunSpec,
    items: &[InputItem],
) -> Result<Vec<M::Request>> {
    items
        .iter()
        .map(|item| model.prepare(item, &spec.infer.prompt))
        .collect()
}

/// Prepare every item and record them in `inputs.yaml` (stage 1 and infer), with the rows of
/// each timed batch when the run has a `plan` (stage 1).
pub fn prepare_and_record<M: Model>(
    model: &M,
    spec: &RunSpec,
    items: &[InputItem],
    run_dir: &Path,
    plan: Option<&BatchPlan>,
) -> Result<Vec<M::Request>> {
    let prepared = prepare_all(model, spec, items)?;
    let infos: Vec<_> = prepared.iter().map(|r| model.describe(r)).collect();
    let variant = llmprof::dataset::variant::variant_of(&spec.dataset)?;
    artifacts::write(
        run_dir,
        artifacts::INPUTS_YAML,
        &artifacts::inputs_yaml(&spec.dataset, variant.as_ref(), &infos, plan)?,
    )?;
    Ok(prepared)
}
