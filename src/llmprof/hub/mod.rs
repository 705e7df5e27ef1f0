//! Checkpoints (and dataset repositories) from the Hugging Face Hub into the cache layout every
//! Python tool shares (`HF_HOME`/`HF_HUB_CACHE`, `models--org--name/{blobs,snapshots,refs}`).
//! docs/weights.md describes the behaviour; this crate never links libtorch.
//!
//! hf-hub 0.4 (the crate the design names) gives the cache layout ([`hf_hub::Repo`] folder
//! names and URL parts, [`hf_hub::CacheRepo::create_ref`]) and the repository listing
//! (`ApiRepo::info_request`). Its sync `download` is not used for the bytes because it links
//! each file into the snapshot as soon as that file arrives (a failure leaves half a snapshot),
//! verifies neither size nor sha256, appends a resumed transfer even when the server ignored the
//! range, and knows neither HF_HUB_OFFLINE, HF_HUB_CACHE nor HF_TOKEN: `transfer.rs` does that
//! part on ureq 2, the HTTP client hf-hub itself uses.
mod env;
mod error;
mod listing;
mod repo;
mod snapshot;
mod transfer;

pub use env::{HubEnv, DEFAULT_ENDPOINT};
pub use error::HubError;
pub use listing::{parse_listing, FileFilter, Listing, RepoRef, MODEL_FILES};
pub use snapshot::{cached_snapshot, missing_model_files};
pub use transfer::{file_head, FileHead};

use std::path::PathBuf;

/// A snapshot folder ready to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// `<cache>/models--org--name/snapshots/<commit>`.
    pub dir: PathBuf,
    pub commit: String,
    /// Files fetched now (0 when everything was cached or offline).
    pub downloaded: usize,
}

/// The snapshot of `repo` holding the files `filter` selects: downloaded (resuming partial
/// files, verifying each) unless HF_HUB_OFFLINE is set, in which case only a complete cached
/// snapshot will do.
pub fn snapshot(repo: &RepoRef, filter: &FileFilter, env: &HubEnv) -> Result<Snapshot, HubError> {
    check_names(repo)?;
    if env.offline {
        return match cached_snapshot(&env.cache_dir, repo) {
            Some((dir, commit)) => {
                tracing::info!(repo = %repo.label(), dir = %dir.display(), "HF_HUB_OFFLINE: using the cached snapshot");
                Ok(Snapshot {
                    dir,
                    commit,
                    downloaded: 0,
                })
            }
            None => Err(HubError::OfflineNotCached {
                repo: repo.id.clone(),
                revision: repo.revision.clone(),
                cache: env.cache_dir.clone(),
            }),
        };
    }
    let listing = listing::fetch_listing(repo, env)?;
    let wanted = filter.select(repo, &listing)?;
    let blobs_dir = snapshot::repo_dir(&env.cache_dir, repo).join("blobs");
    let client = transfer::Client::new(env);
    let mut blobs = Vec::with_capacity(wanted.len());
    let mut downloaded = 0;
    for file in &wanted {
        let cached = snapshot::repo_dir(&env.cache_dir, repo)
            .join("snapshots")
            .join(&listing.commit)
            .join(&file.name);
        let before = cached.is_file();
        let etag = client.fetch(repo, &listing.commit, file, &blobs_dir)?;
        downloaded += usize::from(!before);
        blobs.push((file.name.clone(), etag));
    }
    let dir = snapshot::assemble(&env.cache_dir, repo, &listing.commit, &blobs)?;
    if !repo.dataset {
        let missing = missing_model_files(&dir);
        if !missing.is_empty() {
            return Err(HubError::BadResponse {
                repo: repo.id.clone(),
                file: missing.join(", "),
                message: format!(
                    "missing from {} after the download: the repository does not hold a complete safetensors checkpoint",
                    dir.display()
                ),
            });
        }
    }
    Ok(Snapshot {
        dir,
        commit: listing.commit,
        downloaded,
    })
}

/// The repository id (`org/name` or `name`) and the revision become cache paths (`models--org--name`,
/// `refs/<revision>`): both must be relative paths of ordinary components, the id at most two.
fn check_names(repo: &RepoRef) -> Result<(), HubError> {
    let bad = |what: &str, e: crate::untrusted::UnsafeName| {
        HubError::BadResponse {
        repo: repo.id.clone(),
        file: what.to_string(),
        message: format!("{e}: it would name a folder outside the Hub cache\n  fix: give the repository as org/name and the revision as a branch, tag or commit"),
    }
    };
    let id = crate::untrusted::relative_path(&repo.id).map_err(|e| bad("the repository id", e))?;
    if id.components().count() > 2 {
        return Err(bad(
            "the repository id",
            crate::untrusted::UnsafeName::NotSingle(repo.id.clone()),
        ));
    }
    crate::untrusted::relative_path(&repo.revision).map_err(|e| bad("the revision", e))?;
    Ok(())
}
