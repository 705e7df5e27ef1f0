//! A local stand-in for the Hugging Face Hub (HF_ENDPOINT): a std TcpListener thread serving one
//! tiny repository the way the Hub does: `GET /api/models/<repo>/revision/<rev>` lists siblings
//! (size, lfs.sha256), `GET /<repo>/resolve/<rev>/<file>` answers with etag, x-repo-commit,
//! x-linked-etag and x-linked-size for LFS files, and honours `Range` with 206 + content-range.
//! Faults on demand: a transfer cut midway (once), corrupted bytes, a listed file that 404s, and
//! a hostile or broken server: another commit or extra file names in the listing, a file
//! redirected to another origin, a server that accepts connections and never answers.
#![allow(dead_code)]
use sha2::{Digest, Sha256};
use std::collections::HashSet;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

pub const REPO: &str = "tiny-org/tiny-model";
pub const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

pub struct HubFile {
    pub name: String,
    pub bytes: Vec<u8>,
    /// Served as an LFS file (x-linked-etag = sha256, x-linked-size).
    pub lfs: bool,
}

#[derive(Default)]
pub struct Faults {
    /// Files whose first full transfer stops halfway (the connection closes).
    pub cut_once: HashSet<String>,
    /// Files served with a flipped byte (the advertised sha256 stays the true one).
    pub corrupt: HashSet<String>,
    /// Files listed but answered with 404.
    pub missing: HashSet<String>,
    /// The listing's `sha` instead of [`COMMIT`].
    pub listing_sha: Option<String>,
    /// Names added to the listing's siblings (never served).
    pub extra_listed: Vec<String>,
    /// Files whose resolve answers 302 to this base URL + the same path (another origin).
    pub redirect_to: Option<String>,
    /// Read the request, then send nothing and keep the connection open.
    pub stall: bool,
}

/// One request the server saw: method + path, the Range and Authorization headers.
#[derive(Debug, Clone)]
pub struct Seen {
    pub path: String,
    pub range: Option<String>,
    pub auth: Option<String>,
}

pub struct FakeHub {
    pub url: String,
    pub seen: Arc<Mutex<Vec<Seen>>>,
    pub faults: Arc<Mutex<Faults>>,
}

impl FakeHub {
    pub fn start(files: Vec<HubFile>) -> FakeHub {
        FakeHub::start_as(REPO, files)
    }

    /// The same server holding `files` as repository `repo`.
    pub fn start_as(repo: &str, files: Vec<HubFile>) -> FakeHub {
        let repo = Arc::new(repo.to_string());
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a local port");
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let faults = Arc::new(Mutex::new(Faults::default()));
        let files = Arc::new(files);
        let (s, f) = (seen.clone(), faults.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (s, f, files, repo) = (s.clone(), f.clone(), files.clone(), repo.clone());
                std::thread::spawn(move || {
                    let _ = serve(stream, &repo, &files, &s, &f);
                });
            }
        });
        FakeHub { url, seen, faults }
    }

    /// The paths requested so far.
    pub fn paths(&self) -> Vec<String> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .map(|s| s.path.clone())
            .collect()
    }
}

/// The default tiny repository: two model files a run needs, a tokenizer, and two files it
/// does not (README.md, pytorch_model.bin).
pub fn tiny_repo() -> Vec<HubFile> {
    let weights: Vec<u8> = (0..200_000u32).map(|i| (i * 7 % 251) as u8).collect();
    vec![
        HubFile {
            name: "config.json".into(),
            // The decoder of conf/model/deepseek_ocr/arch/deepseek_ocr_tiny.yaml: a run with
            // model=deepseek_ocr_tiny checks the checkpoint's config against it.
            bytes: br#"{"model_type": "deepseek_vl_v2", "vocab_size": 320, "hidden_size": 64,
                "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 4,
                "intermediate_size": 96, "moe_intermediate_size": 32, "n_routed_experts": 8,
                "num_experts_per_tok": 2}"#
                .to_vec(),
            lfs: false,
        },
        HubFile {
            name: "model.safetensors".into(),
            bytes: weights,
            lfs: true,
        },
        HubFile {
            name: "tokenizer.json".into(),
            bytes: br#"{"model": {}}"#.to_vec(),
            lfs: false,
        },
        HubFile {
            name: "README.md".into(),
            bytes: b"# tiny".to_vec(),
            lfs: false,
        },
        HubFile {
            name: "pytorch_model.bin".into(),
            bytes: vec![1; 64],
            lfs: true,
        },
    ]
}

pub fn sha256_hex(b: &[u8]) -> String {
    Sha256::digest(b)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

/// A git-blob-like etag for a regular file (40 hex characters, like the Hub's).
fn git_etag(b: &[u8]) -> String {
    sha256_hex(b)[..40].to_string()
}

fn serve(
    mut stream: TcpStream,
    repo: &str,
    files: &[HubFile],
    seen: &Mutex<Vec<Seen>>,
    faults: &Mutex<Faults>,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let target = line.split_whitespace().nth(1).unwrap_or("/").to_string();
    let (mut range, mut auth) = (None, None);
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            match k.trim().to_ascii_lowercase().as_str() {
                "range" => range = Some(v.trim().to_string()),
                "authorization" => auth = Some(v.trim().to_string()),
                _ => {}
            }
        }
    }
    let path = target.split('?').next().unwrap_or("").to_string();
    seen.lock().unwrap().push(Seen {
        path: path.clone(),
        range: range.clone(),
        auth,
    });
    if faults.lock().unwrap().stall {
        std::thread::sleep(std::time::Duration::from_secs(60));
        return Ok(());
    }
    let listing = format!("/api/models/{repo}/revision/");
    if let Some(rev) = path.strip_prefix(&listing) {
        if rev != "main" && rev != COMMIT {
            return respond(
                &mut stream,
                "404 Not Found",
                &[],
                br#"{"error": "Revision Not Found"}"#,
                None,
            );
        }
        let mut siblings: Vec<serde_json::Value> = files
            .iter()
            .map(|f| {
                let mut v = serde_json::json!({"rfilename": f.name, "size": f.bytes.len()});
                if f.lfs {
                    v["lfs"] = serde_json::json!({"sha256": sha256_hex(&f.bytes), "size": f.bytes.len(), "pointerSize": 134});
                }
                v
            })
            .collect();
        let f = faults.lock().unwrap();
        for extra in &f.extra_listed {
            siblings.push(serde_json::json!({"rfilename": extra, "size": 4}));
        }
        let sha = f.listing_sha.clone().unwrap_or_else(|| COMMIT.to_string());
        drop(f);
        let body = serde_json::json!({"id": repo, "sha": sha, "siblings": siblings}).to_string();
        return respond(
            &mut stream,
            "200 OK",
            &[("content-type", "application/json".into())],
            body.as_bytes(),
            None,
        );
    }
    let resolve = format!("/{repo}/resolve/");
    let redirect = faults.lock().unwrap().redirect_to.clone();
    if let (Some(base), Some(rest)) = (redirect, path.strip_prefix(&resolve)) {
        // As the Hub does for LFS files: metadata on the first answer, the bytes elsewhere.
        let name = rest.split_once('/').map_or("", |(_, n)| n);
        if let Some(file) = files.iter().find(|f| f.name == name) {
            return respond(
                &mut stream,
                "302 Found",
                &[
                    ("location", format!("{base}{path}")),
                    ("x-repo-commit", COMMIT.into()),
                    ("x-linked-etag", format!("\"{}\"", sha256_hex(&file.bytes))),
                    ("x-linked-size", file.bytes.len().to_string()),
                ],
                b"",
                None,
            );
        }
    }
    let Some(rest) = path.strip_prefix(&resolve) else {
        return respond(
            &mut stream,
            "404 Not Found",
            &[],
            b"Repository not found",
            None,
        );
    };
    let (rev, name) = rest.split_once('/').unwrap_or((rest, ""));
    let file = files.iter().find(|f| f.name == name);
    let f = faults.lock().unwrap();
    let Some(file) = file.filter(|_| !f.missing.contains(name) && (rev == "main" || rev == COMMIT))
    else {
        drop(f);
        return respond(
            &mut stream,
            "404 Not Found",
            &[("x-error-code", "EntryNotFound".into())],
            b"Entry not found",
            None,
        );
    };
    let mut bytes = file.bytes.clone();
    if f.corrupt.contains(name) {
        bytes[0] ^= 0xff;
    }
    drop(f);
    let total = bytes.len();
    let mut headers = vec![("x-repo-commit", COMMIT.to_string())];
    if file.lfs {
        let sha = sha256_hex(&file.bytes);
        headers.push(("x-linked-etag", format!("\"{sha}\"")));
        headers.push(("x-linked-size", total.to_string()));
        headers.push(("etag", format!("\"{}\"", git_etag(&bytes))));
    } else {
        headers.push(("etag", format!("\"{}\"", git_etag(&file.bytes))));
    }
    let (start, end) = match range.as_deref().and_then(|r| r.strip_prefix("bytes=")) {
        Some(r) => {
            let (a, b) = r.split_once('-').unwrap_or((r, ""));
            let a: usize = a.parse().unwrap_or(0);
            let b: usize = b
                .parse()
                .map(|b: usize| b.min(total - 1))
                .unwrap_or(total - 1);
            (a, b)
        }
        None => (0, total - 1),
    };
    let body = &bytes[start..=end];
    let status = if range.is_some() {
        headers.push(("content-range", format!("bytes {start}-{end}/{total}")));
        "206 Partial Content"
    } else {
        "200 OK"
    };
    // A full transfer of a file marked to be cut: announce everything, send half, hang up.
    let cut = body.len() > 1 && start == 0 && faults.lock().unwrap().cut_once.remove(name);
    let send = if cut { Some(body.len() / 2) } else { None };
    respond(&mut stream, status, &headers, body, send)
}

fn respond(
    stream: &mut TcpStream,
    status: &str,
    headers: &[(&str, String)],
    body: &[u8],
    send_only: Option<usize>,
) -> std::io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    let n = send_only.unwrap_or(body.len());
    stream.write_all(&body[..n])?;
    stream.flush()?;
    if send_only.is_some() {
        let _ = stream.shutdown(std::net::Shutdown::Both);
    }
    Ok(())
}
