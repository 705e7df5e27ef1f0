//! The data a run reads, made ready in the front end before the worker starts: a dataset
//! variant's folder (`dataset.variant`) and a Hub snapshot (`model.weights=hub`), both written
//! into the resolved config as absolute paths.
use crate::config::Node;
use crate::hub::{FileFilter, HubEnv, RepoRef};
use anyhow::{bail, Context, Result};
use std::path::Path;

pub fn prepare(resolved: &mut Node, cwd: &Path, repo: &Path) -> Result<()> {
    crate::dataset::variant::apply_variant(resolved, cwd, Some(repo))?;
    if resolved.get_path("model.weights") == Some(&Node::Str("hub".into())) {
        let repo_ref = hub_repo(resolved, None)?;
        let snapshot = crate::hub::snapshot(
            &repo_ref,
            &FileFilter::model(),
            &HubEnv::from_env_and_settings()?,
        )
        .with_context(|| format!("model.weights=hub: getting {}", repo_ref.label()))?;
        tracing::info!(repo = %repo_ref.label(), commit = %snapshot.commit, dir = %snapshot.dir.display(), "model.weights=hub: snapshot ready");
        if let Some(n) = resolved.get_path_mut("model.path") {
            *n = Node::Str(snapshot.dir.display().to_string());
        }
    }
    Ok(())
}

/// `model.repo_id` at `revision` (else `model.revision`, else main) of a resolved config.
pub fn hub_repo(resolved: &Node, revision: Option<&str>) -> Result<RepoRef> {
    let name = match resolved.get_path("model.name") {
        Some(Node::Str(s)) => s.clone(),
        _ => "?".into(),
    };
    let id = match resolved.get_path("model.repo_id") {
        Some(Node::Str(s)) if !s.trim().is_empty() => s.trim().to_string(),
        // A preset whose repo_id comes from model.repo (model=hf) is fixed through that key.
        _ if resolved.get_path("model.repo").is_some() => bail!("model '{name}' with model.weights=hub names no Hub repository\n  fix: set model.repo=<org/name>, or use model.weights=files model.path=<checkpoint folder>"),
        _ => bail!("model '{name}' names no Hub repository (model.repo_id is null)\n  fix: set model.repo_id=<org/name>, or use model.weights=files|synthetic"),
    };
    let configured = match resolved.get_path("model.revision") {
        Some(Node::Str(s)) if !s.trim().is_empty() => Some(s.trim().to_string()),
        _ => None,
    };
    let rev = revision
        .map(str::to_string)
        .or(configured)
        .unwrap_or_else(|| "main".into());
    Ok(RepoRef::model(&id, &rev))
}
