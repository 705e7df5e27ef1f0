//! One file from the Hub into `blobs/<etag>`: ask where it is and what it weighs
//! (`GET …/resolve/<commit>/<file>` with `Range: bytes=0-0`, no redirects followed: the Hub
//! answers with `x-repo-commit`, `x-linked-etag`/`etag`, `x-linked-size`/`content-range`), then
//! stream it into `blobs/<etag>.incomplete` (huggingface_hub's name, so either tool resumes the
//! other's partial file) from where the partial file ends, hash it while writing, and rename it
//! only when its size and sha256 match.
use super::error::{fix_for_status, HubError};
use super::repo::{is_sha256, RemoteFile, RepoRef};
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// The suffix of a partial download.
pub const INCOMPLETE: &str = "incomplete";

/// HTTP agents for the Hub, with the connect and read timeouts of [`super::HubEnv`]: downloads
/// follow no redirect automatically (the metadata lives on the first answer; `head` follows one
/// by hand), the listing follows up to five; the token goes only to the endpoint's origin.
pub struct Client {
    agent: ureq::Agent,
    listing_agent: ureq::Agent,
    endpoint: String,
    token: Option<String>,
    timeouts: super::env::Timeouts,
}

/// What the Hub says about one file before it is fetched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileHead {
    /// The blob's name in the cache: never empty, `.`, `..`, and never holds a separator.
    pub etag: String,
    pub size: u64,
    /// Where the bytes are (the resolve URL itself, or the CDN URL it redirects to); https when
    /// the endpoint is.
    pub data_url: String,
}

/// Reads the first answer for `url` (its status and headers, untrusted): the etag, the size and
/// where the bytes are; an error message saying what was missing or refused. Pure.
pub fn file_head(
    endpoint: &str,
    url: &str,
    status: u16,
    header: impl Fn(&str) -> Option<String>,
) -> Result<FileHead, String> {
    let header = |name: &str| header(name).map(|v| v.trim().to_string());
    let etag = header("x-linked-etag")
        .or_else(|| header("etag"))
        .map(|e| e.trim_start_matches("W/").trim_matches('"').to_string())
        .filter(|e| !e.is_empty() && !e.contains(['/', '\\']) && e != "." && e != "..")
        .ok_or_else(|| format!("{url} sent no usable etag header"))?;
    let size = header("x-linked-size")
        .or_else(|| header("content-range").and_then(|r| r.rsplit('/').next().map(str::to_string)))
        .and_then(|s| s.parse::<u64>().ok())
        .ok_or_else(|| format!("{url} sent neither x-linked-size nor content-range"))?;
    let data_url = if (300..400).contains(&status) {
        let location =
            header("location").ok_or_else(|| format!("{url} redirects without a location"))?;
        let target = if location.starts_with('/') {
            format!("{}{location}", origin(endpoint))
        } else {
            location
        };
        if scheme_of(endpoint) == Some("https".into()) && scheme_of(&target) != Some("https".into())
        {
            return Err(format!(
                "{url} redirects to {target}, which is not https: refused (the bytes would travel unencrypted)"
            ));
        }
        target
    } else {
        url.to_string()
    };
    Ok(FileHead {
        etag,
        size,
        data_url,
    })
}

impl Client {
    pub fn new(env: &super::HubEnv) -> Client {
        let agent = |redirects, auth| {
            ureq::AgentBuilder::new()
                .redirects(redirects)
                .redirect_auth_headers(auth)
                .timeout_connect(env.timeouts.connect)
                .timeout_read(env.timeouts.read)
                .user_agent(&format!("llmprof/{}; hf-hub/0.4", crate::VERSION))
                .try_proxy_from_env(true)
                .build()
        };
        Client {
            agent: agent(0, ureq::RedirectAuthHeaders::Never),
            // As hf-hub's own agent: the token follows a redirect of the listing to the same host
            // over the same or a safer scheme (a renamed repository), nowhere else.
            listing_agent: agent(5, ureq::RedirectAuthHeaders::SameHost),
            endpoint: env.endpoint.clone(),
            token: env.token.clone(),
            timeouts: env.timeouts,
        }
    }

    /// A GET of the listing API at `url` (up to five redirects followed, see [`Client::new`]).
    pub(super) fn get_listing(&self, url: &str) -> ureq::Request {
        self.with_token(self.listing_agent.get(url), url)
    }

    /// The transport error of `url`, naming the timeouts when the wait ran out.
    pub(super) fn transport_error(&self, url: &str, message: String) -> HubError {
        HubError::Transport {
            url: url.to_string(),
            message: self.explain_timeout(message),
        }
    }

    fn explain_timeout(&self, message: String) -> String {
        let lower = message.to_ascii_lowercase();
        if lower.contains("timed out") || lower.contains("would block") || lower.contains("timeout")
        {
            format!(
                "{message} (no answer within the {} s connect or {} s read timeout: settings hub.connect_timeout_s, hub.read_timeout_s)",
                self.timeouts.connect.as_secs(),
                self.timeouts.read.as_secs()
            )
        } else {
            message
        }
    }

    /// A GET of `url`, with the token only when `url` has the endpoint's origin (scheme, host and
    /// port compared, never text prefixes: `https://huggingface.co.evil.net` and
    /// `https://huggingface.co@evil.net` are other origins), so a redirect elsewhere gets none.
    pub(super) fn get(&self, url: &str) -> ureq::Request {
        self.with_token(self.agent.get(url), url)
    }

    /// `req` to `url` with the token when `url` has the endpoint's origin.
    fn with_token(&self, req: ureq::Request, url: &str) -> ureq::Request {
        match &self.token {
            Some(t) if same_origin(url, &self.endpoint) => {
                req.set("Authorization", &format!("Bearer {t}"))
            }
            _ => req,
        }
    }

    /// Fetches `file` of `repo` at `commit` into `blobs`, unless `blobs/<etag>` is already there;
    /// returns the blob's etag (its file name).
    pub fn fetch(
        &self,
        repo: &RepoRef,
        commit: &str,
        file: &RemoteFile,
        blobs: &Path,
    ) -> Result<String, HubError> {
        let url = format!(
            "{}/{}/resolve/{}/{}",
            self.endpoint,
            repo.hf().url(),
            commit,
            file.name
        );
        let head = self.head(repo, &file.name, &url)?;
        if let Some(listed) = file.size {
            if listed != head.size {
                return Err(bad(
                    repo,
                    &file.name,
                    format!("the listing says {listed} bytes, {url} says {}", head.size),
                ));
            }
        }
        let blob = blobs.join(&head.etag);
        if std::fs::metadata(&blob).is_ok_and(|m| m.len() == head.size) {
            tracing::info!(file = %file.name, "already in the cache");
            return Ok(head.etag);
        }
        std::fs::create_dir_all(blobs).map_err(HubError::io(blobs))?;
        let partial = blobs.join(format!("{}.{INCOMPLETE}", head.etag));
        let expected_sha = file
            .sha256
            .clone()
            .or_else(|| is_sha256(&head.etag).then(|| head.etag.clone()));
        let (written, sha) = self.stream(repo, &file.name, &head, &partial)?;
        if written != head.size {
            std::fs::remove_file(&partial).map_err(HubError::io(&partial))?;
            return Err(HubError::Verification {
                repo: repo.id.clone(),
                file: file.name.clone(),
                what: "the size",
                expected: format!("{} bytes", head.size),
                actual: format!("{written} bytes"),
            });
        }
        if let Some(expected) = expected_sha {
            if sha != expected {
                std::fs::remove_file(&partial).map_err(HubError::io(&partial))?;
                return Err(HubError::Verification {
                    repo: repo.id.clone(),
                    file: file.name.clone(),
                    what: "the sha256",
                    expected,
                    actual: sha,
                });
            }
        }
        std::fs::rename(&partial, &blob).map_err(HubError::io(&blob))?;
        tracing::info!(file = %file.name, bytes = written, "downloaded");
        Ok(head.etag)
    }

    /// The first answer for `url`: etag, size and where the bytes are.
    fn head(&self, repo: &RepoRef, file: &str, url: &str) -> Result<FileHead, HubError> {
        let response = self.call(repo, file, url, self.get(url).set("Range", "bytes=0-0"))?;
        file_head(&self.endpoint, url, response.status(), |name| {
            response.header(name).map(str::to_string)
        })
        .map_err(|message| bad(repo, file, message))
    }

    /// Appends to `partial` from where it ends; returns the final length and the sha256 of the
    /// whole file. A transfer cut short keeps what arrived (the next run resumes it).
    fn stream(
        &self,
        repo: &RepoRef,
        file: &str,
        head: &FileHead,
        partial: &Path,
    ) -> Result<(u64, String), HubError> {
        let mut hasher = Sha256::new();
        let mut have = match std::fs::File::open(partial) {
            Ok(mut f) => copy_into(&mut f, &mut hasher, None).map_err(HubError::io(partial))?,
            Err(_) => 0,
        };
        if have > head.size {
            std::fs::remove_file(partial).map_err(HubError::io(partial))?;
            hasher = Sha256::new();
            have = 0;
        }
        if have > 0 {
            tracing::info!(file, resume_at = have, of = head.size, "resuming");
        }
        let mut request = self.get(&head.data_url);
        if have > 0 {
            request = request.set("Range", &format!("bytes={have}-"));
        }
        let response = self.call(repo, file, &head.data_url, request)?;
        if !matches!(response.status(), 200 | 206) {
            return Err(bad(
                repo,
                file,
                format!(
                    "{} answered {} to the download (a second redirect or no content), not 200 or 206",
                    head.data_url,
                    response.status()
                ),
            ));
        }
        let resumed = response.status() == 206;
        if have > 0 && !resumed {
            // The server ignored the range: start over.
            hasher = Sha256::new();
            have = 0;
        }
        let mut out = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(have == 0)
            .append(have > 0)
            .open(partial)
            .map_err(HubError::io(partial))?;
        // At most one byte more than the file should have: a server that sends more fails the
        // size check below instead of filling the disk.
        let mut body = response.into_reader().take(head.size - have + 1);
        let got = copy_into(&mut body, &mut hasher, Some(&mut out)).map_err(|e| {
            self.transport_error(
                &head.data_url,
                format!("{file}: transfer cut short ({e}); the partial file {} is kept and the next run resumes it", partial.display()),
            )
        })?;
        out.sync_all().map_err(HubError::io(partial))?;
        Ok((have + got, hex(&hasher.finalize())))
    }

    fn call(
        &self,
        repo: &RepoRef,
        file: &str,
        url: &str,
        request: ureq::Request,
    ) -> Result<ureq::Response, HubError> {
        match request.call() {
            Ok(r) => Ok(r),
            Err(ureq::Error::Status(404, _)) => Err(HubError::FileNotFound {
                repo: repo.id.clone(),
                revision: repo.revision.clone(),
                file: file.to_string(),
                url: url.to_string(),
            }),
            Err(ureq::Error::Status(status, _)) => {
                let (what, fix) = fix_for_status(status);
                Err(HubError::Http {
                    url: url.to_string(),
                    status,
                    what: format!("{what}, {} file {file}", repo.id),
                    fix: fix.to_string(),
                })
            }
            Err(e) => Err(self.transport_error(url, e.to_string())),
        }
    }
}

/// Reads `from` to its end into the hasher (and `to`); returns the byte count.
fn copy_into(
    from: &mut impl Read,
    hasher: &mut Sha256,
    mut to: Option<&mut std::fs::File>,
) -> std::io::Result<u64> {
    let mut buf = vec![0u8; 1 << 20];
    let mut n = 0u64;
    loop {
        let k = match from.read(&mut buf) {
            Ok(0) => return Ok(n),
            Ok(k) => k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.update(&buf[..k]);
        if let Some(f) = to.as_deref_mut() {
            f.write_all(&buf[..k])?;
        }
        n += k as u64;
    }
}

fn bad(repo: &RepoRef, file: &str, message: String) -> HubError {
    HubError::BadResponse {
        repo: repo.id.clone(),
        file: file.to_string(),
        message,
    }
}

/// `scheme://host[:port]` of a URL.
fn origin(url: &str) -> &str {
    let after_scheme = url.find("://").map(|i| i + 3).unwrap_or(0);
    match url[after_scheme..].find('/') {
        Some(i) => &url[..after_scheme + i],
        None => url,
    }
}

/// Scheme, host and port (the scheme's default filled in) of `url`; `None` when it does not parse.
fn origin_parts(url: &str) -> Option<(String, String, u16)> {
    let u = url::Url::parse(url).ok()?;
    Some((
        u.scheme().to_string(),
        u.host_str()?.to_ascii_lowercase(),
        u.port_or_known_default()?,
    ))
}

/// Whether `a` and `b` have one origin (both parse, and scheme, host and port are equal).
pub(super) fn same_origin(a: &str, b: &str) -> bool {
    matches!((origin_parts(a), origin_parts(b)), (Some(x), Some(y)) if x == y)
}

fn scheme_of(url: &str) -> Option<String> {
    url::Url::parse(url).ok().map(|u| u.scheme().to_string())
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The snapshot path of a blob's pointer (`snapshots/<commit>/<file>`), made relative to it.
pub(crate) fn relative_blob(file: &str, etag: &str) -> PathBuf {
    let depth = Path::new(file).components().count() + 1;
    let mut p = PathBuf::new();
    for _ in 0..depth {
        p.push("..");
    }
    p.join("blobs").join(etag)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_goes_to_the_endpoints_origin_only() {
        let ep = "https://huggingface.co";
        for same in [
            "https://huggingface.co/api/models/x",
            "https://HuggingFace.co:443/x/resolve/main/config.json",
        ] {
            assert!(same_origin(same, ep), "{same}");
        }
        for other in [
            "https://huggingface.co.evil.net/x",
            "https://huggingface.co@evil.net/x",
            "http://huggingface.co/x",
            "https://huggingface.co:8443/x",
            "https://cdn-lfs.huggingface.co/x",
            "not a url",
        ] {
            assert!(!same_origin(other, ep), "{other}");
        }
        assert!(same_origin("http://127.0.0.1:8/a", "http://127.0.0.1:8"));
        assert!(!same_origin("http://127.0.0.1:9/a", "http://127.0.0.1:8"));
    }

    #[test]
    fn origin_and_relative_pointers() {
        assert_eq!(origin("http://127.0.0.1:8/a/b"), "http://127.0.0.1:8");
        assert_eq!(origin("https://huggingface.co"), "https://huggingface.co");
        assert_eq!(
            relative_blob("config.json", "e1"),
            PathBuf::from("../../blobs/e1")
        );
        assert_eq!(
            relative_blob("sub/x.json", "e1"),
            PathBuf::from("../../../blobs/e1")
        );
    }
}
