//! `llmprof dataset …` and `llmprof models …`: variants of the local datasets and downloads
//! from the Hub. Results go to stdout (the folder made or fetched), progress to the log.
use super::launch::composed_base_dir;
use crate::cli::{DatasetCommand, ModelsCommand};
use crate::config::{self, ComposeRequest, Node};
use crate::dataset::variant::{make_variant, VariantRequest};
use crate::hub::{FileFilter, HubEnv, RepoRef};
use crate::spec::DatasetSpec;
use anyhow::{Context, Result};
use std::path::PathBuf;

pub fn dataset(what: DatasetCommand, base: &ComposeRequest) -> Result<i32> {
    match what {
        DatasetCommand::MakeVariant {
            dataset,
            variant,
            num_samples,
            seed,
            subset_file,
            kind,
            overrides,
        } => {
            let mut all = vec![format!("dataset={dataset}")];
            all.extend(base.overrides.iter().cloned());
            all.extend(overrides);
            let (resolved, repo) = compose(base, all)?;
            let json = resolved
                .get_path("dataset")
                .map(|n| n.to_serde_json())
                .unwrap_or_default();
            let spec: DatasetSpec = serde_json::from_value(json)
                .with_context(|| format!("reading the dataset config of '{dataset}'"))?;
            let cwd = std::env::current_dir().context("reading the current directory")?;
            let request = VariantRequest {
                dataset: spec.name.clone(),
                source_root: crate::spec::data_paths::absolute(&spec.root, &cwd, Some(&repo)),
                datasets_dir: crate::spec::data_paths::absolute("datasets", &cwd, Some(&repo)),
                variant,
                num_samples,
                seed,
                subset_file: subset_file.map(|f| cwd.join(f)),
                kind,
            };
            let (dir, meta) = make_variant(&request)?;
            tracing::info!(dir = %dir.display(), items = meta.size.items, of = meta.size.of, "variant made");
            crate::stdout::println(&dir.display().to_string())?;
            Ok(0)
        }
        DatasetCommand::Download {
            repo,
            revision,
            include,
        } => {
            let repo_ref = RepoRef {
                id: repo,
                dataset: true,
                revision: revision.unwrap_or_else(|| "main".into()),
            };
            let patterns = if include.is_empty() {
                vec!["**".to_string()]
            } else {
                include
            };
            let filter = FileFilter::globs(&patterns).context("--include: not a glob pattern")?;
            let snap = crate::hub::snapshot(&repo_ref, &filter, &HubEnv::from_env_and_settings()?)?;
            crate::stdout::println(&snap.dir.display().to_string())?;
            Ok(0)
        }
    }
}

pub fn models(what: ModelsCommand, base: &ComposeRequest) -> Result<i32> {
    let ModelsCommand::Download { model, revision } = what;
    let repo_ref = if model.contains('/') {
        RepoRef::model(&model, revision.as_deref().unwrap_or("main"))
    } else {
        let mut all = vec![format!("model={model}")];
        all.extend(base.overrides.iter().cloned());
        let (resolved, _) = compose(base, all)?;
        super::data_prep::hub_repo(&resolved, revision.as_deref())?
    };
    let snap = crate::hub::snapshot(
        &repo_ref,
        &FileFilter::model(),
        &HubEnv::from_env_and_settings()?,
    )?;
    tracing::info!(repo = %repo_ref.label(), commit = %snap.commit, downloaded = snap.downloaded, "snapshot ready");
    crate::stdout::println(&snap.dir.display().to_string())?;
    Ok(0)
}

/// The resolved job config for `overrides`, and the repository holding the config directory.
fn compose(base: &ComposeRequest, overrides: Vec<String>) -> Result<(Node, PathBuf)> {
    let request = ComposeRequest {
        overrides,
        multirun: false,
        ..base.clone()
    };
    let composed = config::compose(&request)?;
    let resolved = composed.resolved_job()?;
    Ok((resolved, composed_base_dir(&composed)))
}
