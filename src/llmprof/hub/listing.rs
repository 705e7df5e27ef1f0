//! A repository's file list at a revision (`GET /api/<type>s/<repo>/revision/<rev>?blobs=true`,
//! through hf-hub's `ApiRepo::info_request`), and the choice of the files a model needs.
use super::env::HubEnv;
use super::error::{fix_for_status, HubError};
pub use super::repo::{Listing, RemoteFile, RepoRef};
use serde::Deserialize;

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

/// The largest repository listing read (64 MiB).
pub const MAX_LISTING_BYTES: u64 = 64 << 20;

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
    // hf-hub spells the listing's URL (revision encoding included); our client sends it, with
    // the timeouts and the token rule of every other Hub request.
    let url = api
        .repo(repo.hf())
        .info_request()
        .query("blobs", "true")
        .url()
        .to_string();
    let client = super::transfer::Client::new(env);
    let response = match client.get_listing(&url).call() {
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
        Err(e) => return Err(client.transport_error(&url, e.to_string())),
    };
    // A listing is a few hundred kilobytes even for large dataset repositories: more is refused
    // before it is held in memory.
    let mut body = Vec::new();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(response.into_reader(), MAX_LISTING_BYTES + 1),
        &mut body,
    )
    .map_err(|e| client.transport_error(&url, format!("reading the listing: {e}")))?;
    parse_listing(repo, &url, &body)
}

/// The listing API's answer `body` for `repo` (from `url`), every server-supplied value that
/// becomes a path checked ([`checked_listing`]); a body over [`MAX_LISTING_BYTES`] is refused.
pub fn parse_listing(repo: &RepoRef, url: &str, body: &[u8]) -> Result<Listing, HubError> {
    if body.len() as u64 > MAX_LISTING_BYTES {
        return Err(HubError::BadResponse {
            repo: repo.id.clone(),
            file: "(repository listing)".into(),
            message: format!(
                "{url} sent a listing over {} MiB: refused\n  fix: check HF_ENDPOINT",
                MAX_LISTING_BYTES >> 20
            ),
        });
    }
    let info: InfoJson = serde_json::from_slice(body).map_err(|e| HubError::BadResponse {
        repo: repo.id.clone(),
        file: "(repository listing)".into(),
        message: format!("{url} did not return the expected JSON (sha, siblings): {e}"),
    })?;
    checked_listing(repo, url, info)
}

/// The listing, once every server-supplied value that becomes a path is checked: the commit is
/// 40 hex digits (it names the snapshot folder), each file name a relative path of ordinary
/// components (it is joined under the snapshot), each LFS hash 64 hex digits.
fn checked_listing(repo: &RepoRef, url: &str, info: InfoJson) -> Result<Listing, HubError> {
    let refuse = |file: &str, message: String| {
        HubError::BadResponse {
        repo: repo.id.clone(),
        file: file.to_string(),
        message: format!("{url} {message}; nothing was written\n  fix: check HF_ENDPOINT: the server is not the Hub or a faithful mirror"),
    }
    };
    if !super::repo::is_commit(&info.sha) {
        return Err(refuse(
            "(repository listing)",
            format!(
                "resolved the revision to '{}', not a 40-digit commit hash",
                info.sha.escape_debug()
            ),
        ));
    }
    let mut files = Vec::with_capacity(info.siblings.len());
    for s in info.siblings {
        if let Err(e) = crate::untrusted::relative_path(&s.rfilename) {
            return Err(refuse(
                "(repository listing)",
                format!("lists a file name that is not a safe relative path: {e}"),
            ));
        }
        let sha256 = s.lfs.as_ref().map(|l| l.sha256.to_ascii_lowercase());
        if let Some(h) = &sha256 {
            if !super::repo::is_sha256(h) {
                return Err(refuse(
                    &s.rfilename,
                    format!(
                        "gives '{}' as its sha256, not 64 hex digits",
                        h.escape_debug()
                    ),
                ));
            }
        }
        files.push(RemoteFile {
            size: s.lfs.as_ref().and_then(|l| l.size).or(s.size),
            sha256,
            name: s.rfilename,
        });
    }
    Ok(Listing {
        commit: info.sha,
        files,
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
