//! The Hub's names as plain data: a repository at a revision, the files of its listing, and the
//! formats the Hub gives commits and LFS hashes in (checked wherever a server's value becomes a
//! path or a verdict).
use hf_hub::{Repo, RepoType};

/// Which repository, of which kind, at which revision (a branch, tag or commit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoRef {
    pub id: String,
    pub dataset: bool,
    pub revision: String,
}

impl RepoRef {
    pub fn model(id: &str, revision: &str) -> RepoRef {
        RepoRef {
            id: id.to_string(),
            dataset: false,
            revision: revision.to_string(),
        }
    }

    /// hf-hub's view of it (cache folder name, URL parts).
    pub fn hf(&self) -> Repo {
        let kind = if self.dataset {
            RepoType::Dataset
        } else {
            RepoType::Model
        };
        Repo::with_revision(self.id.clone(), kind, self.revision.clone())
    }

    /// `org/name@revision`, as messages write it.
    pub fn label(&self) -> String {
        format!("{}@{}", self.id, self.revision)
    }
}

/// One file of the listing: its size and, for LFS files, its sha256 (when the Hub gives them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteFile {
    pub name: String,
    pub size: Option<u64>,
    pub sha256: Option<String>,
}

/// The commit a revision points at, and its files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    pub commit: String,
    pub files: Vec<RemoteFile>,
}

/// A 40-digit hexadecimal git commit hash, as the Hub resolves revisions to.
pub fn is_commit(rev: &str) -> bool {
    rev.len() == 40 && rev.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A 64-digit hexadecimal sha256, as the Hub gives LFS files.
pub fn is_sha256(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}
