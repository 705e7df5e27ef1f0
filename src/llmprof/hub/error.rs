//! What can go wrong between llmprof and the Hub; every message names the repository, the file
//! when there is one, and what to do.
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum HubError {
    #[error("HF_HUB_OFFLINE is set and the cache {cache} holds no complete snapshot of {repo}@{revision}\n  fix: download it once with network access (`llmprof models download {repo}`), or unset HF_HUB_OFFLINE")]
    OfflineNotCached {
        repo: String,
        revision: String,
        cache: PathBuf,
    },
    #[error("{repo}@{revision}: {file} was not found on the Hub ({url}: HTTP 404)\n  fix: check the repository id, the revision and that the file exists in the repository")]
    FileNotFound {
        repo: String,
        revision: String,
        file: String,
        url: String,
    },
    #[error("repository {repo}@{revision} was not found on the Hub ({url}: HTTP {status})\n  fix: check the repository id and the revision; for a gated or private repository set HF_TOKEN (or log in so that $HF_HOME/token exists)")]
    RepoNotFound {
        repo: String,
        revision: String,
        url: String,
        status: u16,
    },
    #[error("{url}: HTTP {status} ({what})\n  fix: {fix}")]
    Http {
        url: String,
        status: u16,
        what: String,
        fix: String,
    },
    #[error("{url}: {message}\n  fix: check the network (and HF_ENDPOINT); run the command again to resume, or set HF_HUB_OFFLINE=1 to use the cache only")]
    Transport { url: String, message: String },
    #[error("{repo}: {file}: {message}")]
    BadResponse {
        repo: String,
        file: String,
        message: String,
    },
    #[error("{repo}: {file} failed verification: {what} is {actual}, the Hub says {expected}; the download was discarded and the snapshot left unchanged\n  fix: run the command again; if it fails the same way, the mirror at HF_ENDPOINT serves a corrupted file")]
    Verification {
        repo: String,
        file: String,
        what: &'static str,
        expected: String,
        actual: String,
    },
    #[error(
        "{repo}@{revision} lists none of the files a model needs ({wanted}); it lists: {listed}"
    )]
    NothingToFetch {
        repo: String,
        revision: String,
        wanted: String,
        listed: String,
    },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl HubError {
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> HubError {
        let path = path.into();
        move |source| HubError::Io { path, source }
    }
}

/// The fix line for an HTTP status outside 404.
pub(crate) fn fix_for_status(status: u16) -> (&'static str, &'static str) {
    match status {
        401 | 403 => (
            "not authorised",
            "the repository is gated or private: accept its terms on the Hub and set HF_TOKEN (or log in so that $HF_HOME/token exists)",
        ),
        429 => ("rate limited", "wait a minute and run the command again"),
        500..=599 => ("server error", "run the command again later; finished files are kept"),
        _ => ("unexpected status", "check HF_ENDPOINT and the repository id"),
    }
}
