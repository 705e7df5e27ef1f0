//! A tensor-parallel rank's Kineto trace as the distributed tools read it (#45): the rank and
//! world size in its `distributedInfo` (what PyTorch's profiler writes under torch.distributed,
//! and what `llmprof analyze trace` and HTA read), added to the trace libkineto exported, and
//! where the run directory holds it: `traces/trace.rank<k>.json`, a folder of rank traces only
//! (HTA refuses a folder with any other JSON file).
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;

/// The run directory's folder of rank traces.
pub const RANK_TRACES_DIR: &str = "traces";

/// The name of rank `k`'s trace in [`RANK_TRACES_DIR`].
pub fn rank_trace_name(k: usize) -> String {
    format!("trace.rank{k}.json")
}

/// Rank `k`'s trace relative to the run directory.
pub fn rank_trace_path(k: usize) -> String {
    format!("{RANK_TRACES_DIR}/{}", rank_trace_name(k))
}

/// The rank traces a run directory holds, rank 0 first, as paths relative to it: ranks 0, 1, ...
/// while `exists` says the next one is there.
pub fn rank_trace_paths(exists: impl Fn(&str) -> bool) -> Vec<String> {
    (0..)
        .map(rank_trace_path)
        .take_while(|p| exists(p))
        .collect()
}

/// How far into a trace its top-level keys before the events are looked for.
const HEAD_BYTES: usize = 1 << 16;

/// Sets `"distributedInfo": {"backend", "rank", "world_size"}` in the Chrome trace JSON object
/// at `path` (rewritten through a temporary file beside it, then renamed), copying the rest of
/// the file as it is: no parse of a trace that can be hundreds of MB. libtorch's profiler writes
/// `{"backend": "none", "rank": 0, "world_size": 1}` near the top of a process without
/// torch.distributed: a `distributedInfo` object within the first 64 KiB is replaced, else the
/// key goes in first. A file that does not start with a JSON object, or that names the key in its
/// first 64 KiB without an object there that ends within them, is an error (a second key would be
/// hidden by the first for some readers and win for others); the file is then left as it was.
pub fn add_distributed_info(
    path: &Path,
    backend: &str,
    rank: usize,
    world: usize,
) -> std::io::Result<()> {
    let mut input = BufReader::new(std::fs::File::open(path)?);
    let mut head = Vec::with_capacity(HEAD_BYTES);
    input
        .by_ref()
        .take(HEAD_BYTES as u64)
        .read_to_end(&mut head)?;
    let not_a_trace = || {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{} does not start with a JSON object", path.display()),
        )
    };
    let open = head
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .filter(|&i| head[i] == b'{')
        .ok_or_else(not_a_trace)?;
    let info = serde_json::json!({"backend": backend, "rank": rank, "world_size": world});
    let existing = existing_value(&head);
    if existing.is_none() && find(&head, KEY).is_some() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "{} names distributedInfo in its first {HEAD_BYTES} bytes without an object llmprof can replace",
                path.display()
            ),
        ));
    }
    let tmp = path.with_extension("json.tmp");
    let written = (|| -> std::io::Result<()> {
        let mut out = BufWriter::new(std::fs::File::create(&tmp)?);
        match existing {
            Some((start, end)) => {
                out.write_all(&head[..start])?;
                write!(out, "{info}")?;
                out.write_all(&head[end..])?;
            }
            None => {
                let empty_object = head[open + 1..]
                    .iter()
                    .find(|b| !b.is_ascii_whitespace())
                    .is_some_and(|&b| b == b'}');
                out.write_all(&head[..=open])?;
                write!(
                    out,
                    "\n  \"distributedInfo\": {info}{}",
                    if empty_object { "" } else { "," }
                )?;
                out.write_all(&head[open + 1..])?;
            }
        }
        std::io::copy(&mut input, &mut out)?;
        out.flush()
    })();
    match written.and_then(|()| std::fs::rename(&tmp, path)) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

const KEY: &[u8] = b"\"distributedInfo\"";

fn find(head: &[u8], needle: &[u8]) -> Option<usize> {
    head.windows(needle.len()).position(|w| w == needle)
}

/// The byte span of the object after the first `"distributedInfo":` in `head`, braces counted
/// outside strings; None when the key is not there or its object does not end within `head`.
fn existing_value(head: &[u8]) -> Option<(usize, usize)> {
    let key = find(head, KEY)? + KEY.len();
    let mut i = key + head[key..].iter().position(|b| !b.is_ascii_whitespace())?;
    if head[i] != b':' {
        return None;
    }
    i += 1;
    let start = i + head[i..].iter().position(|b| !b.is_ascii_whitespace())?;
    if head[start] != b'{' {
        return None;
    }
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (j, &b) in head.iter().enumerate().skip(start) {
        match (in_string, escaped, b) {
            (true, true, _) => escaped = false,
            (true, false, b'\\') => escaped = true,
            (true, false, b'"') => in_string = false,
            (true, false, _) => {}
            (false, _, b'"') => in_string = true,
            (false, _, b'{') => depth += 1,
            (false, _, b'}') => {
                depth -= 1;
                if depth == 0 {
                    return Some((start, j + 1));
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::dataset::test_util::temp_dir;

    fn rewritten(text: &str) -> String {
        let dir = temp_dir("rank-trace");
        let p = dir.join("trace.json");
        std::fs::write(&p, text).unwrap();
        add_distributed_info(&p, "nccl", 1, 2).unwrap();
        let out = std::fs::read_to_string(&p).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        out
    }

    #[test]
    fn the_rank_goes_in_as_the_first_key_and_the_rest_is_kept() {
        // A trace longer than the bytes looked at first, so the copy of the rest is exercised.
        let events: Vec<String> = (0..5000)
            .map(|i| format!("{{\"ph\": \"X\", \"name\": \"k{i}\", \"ts\": {i}, \"dur\": 1}}"))
            .collect();
        let text = format!(
            "{{\n  \"schemaVersion\": 1,\n  \"traceEvents\": [{}]\n}}",
            events.join(",\n")
        );
        assert!(text.len() > HEAD_BYTES);
        let out = rewritten(&text);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            v["distributedInfo"],
            serde_json::json!({"backend": "nccl", "rank": 1, "world_size": 2})
        );
        assert_eq!(v["schemaVersion"], 1);
        assert!(out.find("\"distributedInfo\"") < out.find("\"schemaVersion\""));
        assert_eq!(v["traceEvents"].as_array().unwrap().len(), 5000);
        assert_eq!(v["traceEvents"][4999]["name"], "k4999");
    }

    #[test]
    fn an_empty_object_libtorchs_own_key_and_a_non_object() {
        let v: serde_json::Value = serde_json::from_str(&rewritten("  { }")).unwrap();
        assert_eq!(v["distributedInfo"]["rank"], 1);
        // libtorch's profiler writes one of its own without torch.distributed: replaced.
        let had = "{\n  \"schemaVersion\": 1,\n  \"distributedInfo\": {\"backend\": \"none\", \"rank\": 0, \"world_size\": 1, \"pg\": {\"n\": \"}\\\"{\"}},\n  \"traceEvents\": []\n}";
        let v: serde_json::Value = serde_json::from_str(&rewritten(had)).unwrap();
        assert_eq!(
            v["distributedInfo"],
            serde_json::json!({"backend": "nccl", "rank": 1, "world_size": 2})
        );
        assert_eq!(v["schemaVersion"], 1);
        let dir = temp_dir("rank-trace");
        let p = dir.join("t.json");
        std::fs::write(&p, "[1, 2]").unwrap();
        let e = add_distributed_info(&p, "nccl", 0, 2).unwrap_err();
        assert!(
            e.to_string().contains("does not start with a JSON object"),
            "{e}"
        );
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "[1, 2]");
        // The key with no object after it: refused, the file as it was, no temporary file left.
        let odd = "{\"distributedInfo\": null, \"traceEvents\": []}";
        std::fs::write(&p, odd).unwrap();
        let e = add_distributed_info(&p, "nccl", 0, 2).unwrap_err();
        assert!(e.to_string().contains("without an object"), "{e}");
        assert_eq!(std::fs::read_to_string(&p).unwrap(), odd);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "only t.json");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
