//! The cache side of the HF layout: `<cache>/models--org--name/{blobs/<etag>,
//! snapshots/<commit>/<file> -> ../../blobs/<etag>, refs/<revision>}`. A snapshot is written only
//! after every blob it points at is complete and verified, so readers never see half of one.
use super::error::HubError;
use super::repo::{is_commit, RepoRef};
use super::transfer::relative_blob;
use std::path::{Path, PathBuf};

/// `<cache>/models--org--name`.
pub fn repo_dir(cache: &Path, repo: &RepoRef) -> PathBuf {
    cache.join(repo.hf().folder_name())
}

/// The commit a revision names in the cache: the revision itself when it is a commit hash,
/// else what `refs/<revision>` holds.
pub fn cached_commit(cache: &Path, repo: &RepoRef) -> Option<String> {
    if is_commit(&repo.revision) {
        return Some(repo.revision.clone());
    }
    let text = crate::dataset::file_kind::read_to_string(
        repo_dir(cache, repo).join("refs").join(&repo.revision),
    )
    .ok()?;
    Some(text.trim().to_string()).filter(|c| !c.is_empty())
}

/// The cached snapshot folder of `repo`, when it exists and (for a model) is complete.
pub fn cached_snapshot(cache: &Path, repo: &RepoRef) -> Option<(PathBuf, String)> {
    let commit = cached_commit(cache, repo)?;
    let dir = repo_dir(cache, repo).join("snapshots").join(&commit);
    if !dir.is_dir() {
        return None;
    }
    if !repo.dataset && !missing_model_files(&dir).is_empty() {
        return None;
    }
    Some((dir, commit))
}

/// Points `snapshots/<commit>/<file>` at each verified blob, then `refs/<revision>` at the
/// commit (for a branch or tag). Pointers already there (from another tool) are kept.
pub fn assemble(
    cache: &Path,
    repo: &RepoRef,
    commit: &str,
    blobs: &[(String, String)],
) -> Result<PathBuf, HubError> {
    let dir = repo_dir(cache, repo).join("snapshots").join(commit);
    for (file, etag) in blobs {
        let pointer = dir.join(file);
        let parent = pointer.parent().expect("a file inside the snapshot");
        std::fs::create_dir_all(parent).map_err(HubError::io(parent))?;
        if pointer.exists() {
            continue;
        }
        // A dangling pointer (its blob removed) is replaced.
        let _ = std::fs::remove_file(&pointer);
        link(&relative_blob(file, etag), &pointer).map_err(HubError::io(&pointer))?;
    }
    if repo.revision != commit {
        hf_hub::Cache::new(cache.to_path_buf())
            .repo(repo.hf())
            .create_ref(commit)
            .map_err(HubError::io(repo_dir(cache, repo).join("refs")))?;
    }
    Ok(dir)
}

#[cfg(unix)]
fn link(target: &Path, pointer: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(target, pointer)
}

#[cfg(not(unix))]
fn link(target: &Path, pointer: &Path) -> std::io::Result<()> {
    let blob = pointer.parent().expect("inside the snapshot").join(target);
    std::fs::copy(blob, pointer).map(|_| ())
}

/// What a model folder lacks to be loaded: config.json, and the weights (every shard the
/// index names, or one `*.safetensors`). Empty when complete.
pub fn missing_model_files(dir: &Path) -> Vec<String> {
    let mut missing = Vec::new();
    if !dir.join("config.json").is_file() {
        missing.push("config.json".to_string());
    }
    let index = dir.join("model.safetensors.index.json");
    if index.is_file() {
        let shards = crate::dataset::file_kind::read_to_string(&index)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| {
                v.get("weight_map")?.as_object().map(|m| {
                    let mut s: Vec<String> = m
                        .values()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect();
                    s.sort();
                    s.dedup();
                    s
                })
            });
        match shards {
            Some(shards) if !shards.is_empty() => missing.extend(
                shards
                    .into_iter()
                    .filter(|s| !dir.join(s).is_file())
                    .map(|s| format!("{s} (named in model.safetensors.index.json)")),
            ),
            _ => missing.push("model.safetensors.index.json names no shards".to_string()),
        }
    } else {
        let any = std::fs::read_dir(dir).ok().is_some_and(|rd| {
            rd.flatten().any(|e| {
                e.path().extension().is_some_and(|x| x == "safetensors") && e.path().is_file()
            })
        });
        if !any {
            missing.push("*.safetensors".to_string());
        }
    }
    missing
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::test_util::temp_dir;

    #[test]
    fn a_snapshot_needs_every_indexed_shard() {
        let d = temp_dir("hub-complete");
        assert_eq!(
            missing_model_files(&d),
            vec!["config.json", "*.safetensors"]
        );
        std::fs::write(d.join("config.json"), "{}").unwrap();
        std::fs::write(
            d.join("model.safetensors.index.json"),
            r#"{"weight_map": {"a": "m-1.safetensors", "b": "m-2.safetensors"}}"#,
        )
        .unwrap();
        std::fs::write(d.join("m-1.safetensors"), "x").unwrap();
        let m = missing_model_files(&d);
        assert_eq!(m.len(), 1);
        assert!(m[0].starts_with("m-2.safetensors"), "{m:?}");
        std::fs::write(d.join("m-2.safetensors"), "x").unwrap();
        assert!(missing_model_files(&d).is_empty());
    }
}
