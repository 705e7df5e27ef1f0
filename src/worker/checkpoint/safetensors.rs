//! Reading safetensors checkpoints: the files of a checkpoint (one file, an index of shards, or
//! every `model*.safetensors`), and each file's JSON header (tensor name, dtype, shape, offsets).
use anyhow::{bail, ensure, Context, Result};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use tch::Kind;

/// Where one tensor lives inside a safetensors file.
#[derive(Debug, Clone)]
pub struct FileEntry {
    pub file: PathBuf,
    pub dtype: String,
    pub shape: Vec<i64>,
    /// Absolute byte range in the file.
    pub begin: u64,
    pub end: u64,
}

pub fn kind_of_safetensors_dtype(dtype: &str) -> Option<Kind> {
    Some(match dtype {
        "BF16" => Kind::BFloat16,
        "F16" => Kind::Half,
        "F32" => Kind::Float,
        "F64" => Kind::Double,
        "I64" => Kind::Int64,
        "I32" => Kind::Int,
        "I16" => Kind::Int16,
        "I8" => Kind::Int8,
        "U8" => Kind::Uint8,
        "BOOL" => Kind::Bool,
        _ => return None,
    })
}

/// Reads the JSON header of one safetensors file.
pub fn read_header(file: &Path) -> Result<Vec<(String, FileEntry)>> {
    let mut f = llmprof::dataset::file_kind::open_regular(file)
        .with_context(|| format!("opening {}", file.display()))?;
    let file_len = f
        .metadata()
        .with_context(|| format!("reading {}", file.display()))?
        .len();
    let mut len = [0u8; 8];
    f.read_exact(&mut len)
        .with_context(|| format!("reading header length of {}", file.display()))?;
    let n = u64::from_le_bytes(len);
    ensure!(
        n < 100 << 20,
        "{}: implausible safetensors header length {n}",
        file.display()
    );
    let mut buf = vec![0u8; n as usize];
    f.read_exact(&mut buf)
        .with_context(|| format!("reading header of {}", file.display()))?;
    let header: BTreeMap<String, serde_json::Value> = serde_json::from_slice(&buf)
        .with_context(|| format!("parsing safetensors header of {}", file.display()))?;
    let data_start = 8 + n;
    let mut out = Vec::new();
    for (name, v) in header {
        if name == "__metadata__" {
            continue;
        }
        let bad = || format!("{}: malformed header entry for `{name}`", file.display());
        let dtype = v
            .get("dtype")
            .and_then(|x| x.as_str())
            .with_context(bad)?
            .to_string();
        let shape = v
            .get("shape")
            .and_then(|x| x.as_array())
            .with_context(bad)?
            .iter()
            .map(|x| x.as_i64().with_context(bad))
            .collect::<Result<Vec<_>>>()?;
        let offs = v
            .get("data_offsets")
            .and_then(|x| x.as_array())
            .with_context(bad)?;
        ensure!(offs.len() == 2, bad());
        let b = offs[0].as_u64().with_context(bad)?;
        let e = offs[1].as_u64().with_context(bad)?;
        // The offsets come from the file: they must describe bytes the file has.
        let (begin, end) = (data_start.checked_add(b), data_start.checked_add(e));
        let (Some(begin), Some(end)) = (begin, end) else {
            bail!(
                "{}: `{name}` has data offsets [{b}, {e}] past any file size",
                file.display()
            );
        };
        ensure!(
            b <= e && end <= file_len,
            "{}: `{name}` has data offsets [{b}, {e}] outside the file's {} data bytes",
            file.display(),
            file_len.saturating_sub(data_start)
        );
        out.push((
            name,
            FileEntry {
                file: file.to_path_buf(),
                dtype,
                shape,
                begin,
                end,
            },
        ));
    }
    Ok(out)
}

/// The safetensors files of a checkpoint: `path` itself if it is a file; else the shards named by
/// `model.safetensors.index.json`; else every `model*.safetensors` in the folder.
pub fn checkpoint_files(path: &Path) -> Result<Vec<PathBuf>> {
    if path.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    ensure!(
        path.is_dir(),
        "weights path {} does not exist",
        path.display()
    );
    let index = path.join("model.safetensors.index.json");
    let mut files: Vec<PathBuf> = if index.is_file() {
        let text = llmprof::dataset::file_kind::read_to_string(&index)
            .with_context(|| format!("reading {}", index.display()))?;
        let v: serde_json::Value =
            serde_json::from_str(&text).with_context(|| format!("parsing {}", index.display()))?;
        let map = v
            .get("weight_map")
            .and_then(|m| m.as_object())
            .with_context(|| format!("{}: no weight_map", index.display()))?;
        let mut names: Vec<String> = map
            .values()
            .filter_map(|f| f.as_str().map(str::to_string))
            .collect();
        names.sort();
        names.dedup();
        // Shard names come from the checkpoint (untrusted, docs/security.md): relative paths
        // inside its folder. Not resolved further: a Hub cache snapshot's files are links into
        // its blobs folder by design.
        names
            .iter()
            .map(|n| {
                llmprof::untrusted::join(path, n).map_err(|e| {
                    anyhow::anyhow!(
                        "{}: weight_map names the shard {e}: shards are files of the checkpoint folder\n  fix: re-download the checkpoint",
                        index.display()
                    )
                })
            })
            .collect::<Result<_>>()?
    } else {
        let mut v = Vec::new();
        for entry in
            std::fs::read_dir(path).with_context(|| format!("listing {}", path.display()))?
        {
            let p = entry?.path();
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if name.starts_with("model") && name.ends_with(".safetensors") {
                v.push(p);
            }
        }
        v
    };
    files.sort();
    ensure!(
        !files.is_empty(),
        "no model*.safetensors under {}",
        path.display()
    );
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::{checkpoint_files, read_header};

    #[test]
    fn shard_names_that_leave_the_checkpoint_are_refused() {
        let dir = std::env::temp_dir().join(format!("llmprof-st-index-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for shard in [
            "../outside.safetensors",
            "/etc/passwd",
            "a/../../b.safetensors",
        ] {
            let index = serde_json::json!({"weight_map": {"w": "model-1.safetensors", "v": shard}});
            std::fs::write(dir.join("model.safetensors.index.json"), index.to_string()).unwrap();
            let e = format!("{:#}", checkpoint_files(&dir).unwrap_err());
            assert!(
                e.contains("model.safetensors.index.json")
                    && e.contains(shard)
                    && e.contains("fix:"),
                "{shard}: {e}"
            );
        }
        let index = serde_json::json!({"weight_map": {"w": "model-1.safetensors", "v": "sub/model-2.safetensors"}});
        std::fs::write(dir.join("model.safetensors.index.json"), index.to_string()).unwrap();
        let files = checkpoint_files(&dir).unwrap();
        assert_eq!(
            files,
            [
                dir.join("model-1.safetensors"),
                dir.join("sub/model-2.safetensors")
            ]
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// A safetensors file with one tensor `w` whose header says `offsets`, and `data` bytes.
    fn file(name: &str, offsets: &str, data: usize) -> std::path::PathBuf {
        let header = format!(r#"{{"w":{{"dtype":"F32","shape":[2],"data_offsets":{offsets}}}}}"#);
        let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
        bytes.extend(header.as_bytes());
        bytes.extend(vec![0u8; data]);
        let p = std::env::temp_dir().join(format!(
            "llmprof-st-{name}-{}.safetensors",
            std::process::id()
        ));
        std::fs::write(&p, bytes).unwrap();
        p
    }

    #[test]
    fn offsets_outside_the_file_are_refused_naming_the_tensor() {
        let ok = file("ok", "[0,8]", 8);
        let entries = read_header(&ok).unwrap();
        assert_eq!(entries[0].1.end - entries[0].1.begin, 8);
        for (name, offsets) in [
            ("past", "[0,4096]"),
            ("reversed", "[8,0]"),
            ("overflow", "[18446744073709551615,18446744073709551615]"),
        ] {
            let p = file(name, offsets, 8);
            let e = format!("{:#}", read_header(&p).unwrap_err());
            assert!(
                e.contains("`w`") && e.contains("data offsets"),
                "{name}: {e}"
            );
            std::fs::remove_file(p).unwrap();
        }
        std::fs::remove_file(ok).unwrap();
    }
}
