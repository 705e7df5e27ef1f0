//! A repository's file list at a revision (`GET /api/<type>s/<repo>/revision/<rev>?blobs=true`,
//! through hf-hub's `ApiRepo::info_request`), and the choice of the files a model needs.
use super::env::HubEnv;
use super::error::{fix_for_status, HubError};
use hf_hub::{Repo, RepoType};
use serde::Deserialize;

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

#[derive(Deserialize)]
struct InfoJson {
    sha: String,
    siblings: Vec<SiblingJson>,
}

#[derive(Deserialize)]
struct SiblingJson {
    rfilename: String,
    size: Option<u64>,
    lfs: Option<LfsJson>,
}

#[derive(Deserialize)]
struct LfsJson {
    sha256: String,
    size: Option<u64>,
}

/// Asks the Hub for the listing of `repo`.
pub fn fetch_listing(repo: &RepoRef, env: &HubEnv) -> Result<Listing, HubError> {
    let api = hf_hub::api::sync::ApiBuilder::from_cache(hf_hub::Cache::new(env.cache_dir.clone()))
        .with_endpoint(env.endpoint.clone())
        .with_token(env.token.clone())
        .with_progress(false)
        .build()
        .map_err(|e| HubError::Transport {
            url: env.endpoint.clone(),
            message: e.to_string(),
        })?;
    let request = api.repo(repo.hf()).info_request().query("blobs", "true");
    let url = request.url().to_string();
    let response = match request.call() {
        Ok(r) => r,
        Err(ureq::Error::Status(status @ (401 | 404), _)) => {
            return Err(HubError::RepoNotFound {
                repo: repo.id.clone(),
                revision: repo.revision.clone(),
                url,
                status,
            })
        }
        Err(ureq::Error::Status(status, _)) => {
            let (what, fix) = fix_for_status(status);
            return Err(HubError::Http {
                url,
                status,
                what: what.into(),
                fix: fix.into(),
            });
        }
        Err(e) => {
            return Err(HubError::Transport {
                url,
                message: e.to_string(),
            })
        }
    };
    let info: InfoJson = response.into_json().map_err(|e| HubError::BadResponse {
        repo: repo.id.clone(),
        file: "(repository listing)".into(),
        message: format!("{url} did not return the expected JSON (sha, siblings): {e}"),
    })?;
    Ok(Listing {
        commit: info.sha,
        files: info
            .siblings
            .into_iter()
            .map(|s| RemoteFile {
                size: s.lfs.as_ref().and_then(|l| l.size).or(s.size),
                sha256: s.lfs.map(|l| l.sha256.to_ascii_lowercase()),
                name: s.rfilename,
            })
            .collect(),
    })
}

/// The files a model run reads: weights (`*.safetensors` and their index), `config.json`,
/// `generation_config.json` and the tokenizer files. Everything else (pickles, ONNX, GGUF,
/// images of the model card, custom Python code) stays on the Hub.
pub const MODEL_FILES: &[&str] = &[
    "*.safetensors",
    "*.safetensors.index.json",
    "config.json",
    "generation_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "tokenizer.model",
    "vocab.json",
    "merges.txt",
];

/// Which files of a listing to fetch: glob patterns matched against the whole path
/// (`*` does not cross `/`).
#[derive(Debug, Clone)]
pub struct FileFilter {
    patterns: Vec<glob::Pattern>,
}

impl FileFilter {
    /// The files a model needs ([`MODEL_FILES`]), at the top of the repository.
    pub fn model() -> FileFilter {
        FileFilter::globs(MODEL_FILES).expect("MODEL_FILES are valid globs")
    }

    pub fn globs<S: AsRef<str>>(patterns: &[S]) -> Result<FileFilter, glob::PatternError> {
        Ok(FileFilter {
            patterns: patterns
                .iter()
                .map(|p| glob::Pattern::new(p.as_ref()))
                .collect::<Result<_, _>>()?,
        })
    }

    pub fn matches(&self, name: &str) -> bool {
        let opts = glob::MatchOptions {
            case_sensitive: true,
            require_literal_separator: true,
            require_literal_leading_dot: true,
        };
        self.patterns.iter().any(|p| p.matches_with(name, opts))
    }

    /// The patterns, as written (for messages).
    pub fn describe(&self) -> String {
        let p: Vec<&str> = self.patterns.iter().map(|p| p.as_str()).collect();
        p.join(", ")
    }

    /// The files of `listing` to fetch; an error when none matches.
    pub fn select(&self, repo: &RepoRef, listing: &Listing) -> Result<Vec<RemoteFile>, HubError> {
        let wanted: Vec<RemoteFile> = listing
            .files
            .iter()
            .filter(|f| self.matches(&f.name))
            .cloned()
            .collect();
        if wanted.is_empty() {
            let listed: Vec<&str> = listing.files.iter().map(|f| f.name.as_str()).collect();
            return Err(HubError::NothingToFetch {
                repo: repo.id.clone(),
                revision: repo.revision.clone(),
                wanted: self.describe(),
                listed: listed.join(", "),
            });
        }
        Ok(wanted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_filter_keeps_weights_config_and_tokenizer_only() {
        let f = FileFilter::model();
        for keep in [
            "model-00001-of-000001.safetensors",
            "model.safetensors.index.json",
            "config.json",
            "tokenizer.json",
            "tokenizer_config.json",
        ] {
            assert!(f.matches(keep), "{keep}");
        }
        for drop in [
            "pytorch_model.bin",
            "README.md",
            "modeling_deepseekocr.py",
            "assets/fig1.png",
            "onnx/model.safetensors",
            ".gitattributes",
        ] {
            assert!(!f.matches(drop), "{drop}");
        }
    }

    #[test]
    fn an_empty_selection_names_what_was_listed() {
        let repo = RepoRef::model("org/m", "main");
        let listing = Listing {
            commit: "c".into(),
            files: vec![RemoteFile {
                name: "README.md".into(),
                size: Some(1),
                sha256: None,
            }],
        };
        let e = FileFilter::model()
            .select(&repo, &listing)
            .unwrap_err()
            .to_string();
        assert!(e.contains("org/m@main") && e.contains("README.md"), "{e}");
    }
}
