//! Text ↔ token ids for every family: the `TokenIds` interface (the worker's `HfTokenizer` reads
//! an HF `tokenizer.json` behind it) and `ByteTokenizer`, the byte-level fallback used when a
//! checkpoint folder has no tokenizer and by the tiny CPU models. Which ids are special (BOS,
//! `<image>`, ...) is the family's knowledge, not the tokenizer's.
use anyhow::{bail, Result};

pub trait TokenIds {
    /// Text → ids, without BOS/EOS; added tokens (e.g. `<|grounding|>`) are split out.
    fn encode(&self, text: &str) -> Result<Vec<i64>>;
    /// Text → ids with the special tokens the tokenizer adds around a sequence (an HF
    /// tokenizer's post-processor, e.g. BOS); without one, as `encode`.
    fn encode_with_specials(&self, text: &str) -> Result<Vec<i64>> {
        self.encode(text)
    }
    /// Ids → text, special tokens kept.
    fn decode(&self, ids: &[i64]) -> Result<String>;
    /// The id of a token spelled `token` in the vocabulary (added tokens included).
    fn token_id(&self, token: &str) -> Option<i64>;

    /// Ids → text that never fails: ids this tokenizer cannot decode (e.g. the byte tokenizer
    /// fed by random weights) become `<id:N>`; runs of decodable ids are decoded together, so
    /// multi-byte characters and BPE merges survive.
    fn decode_lossy(&self, ids: &[i64]) -> String {
        if let Ok(s) = self.decode(ids) {
            return s;
        }
        let mut out = String::new();
        let mut run: Vec<i64> = Vec::new();
        let flush = |run: &mut Vec<i64>, out: &mut String| {
            match self.decode(run) {
                Ok(s) => out.push_str(&s),
                // Each id decoded alone but not together: fall back to one at a time.
                Err(_) => run.iter().for_each(|&id| {
                    out.push_str(&self.decode(&[id]).unwrap_or_else(|_| format!("<id:{id}>")))
                }),
            }
            run.clear();
        };
        for &id in ids {
            if self.decode(&[id]).is_ok() {
                run.push(id);
            } else {
                flush(&mut run, &mut out);
                out.push_str(&format!("<id:{id}>"));
            }
        }
        flush(&mut run, &mut out);
        out
    }
}

/// Bytes map to ids `BYTE_BASE + byte` (3..=258; 0, 1, 2 stay for BOS, EOS, pad); added tokens
/// have the ids given. Prompt token counts differ from a real BPE's; image-token counts do not.
#[derive(Debug, Clone)]
pub struct ByteTokenizer {
    added: Vec<(String, i64)>,
    /// Put before a sequence by `encode_with_specials`.
    bos: Option<i64>,
}

/// Id of byte 0.
pub const BYTE_BASE: i64 = 3;

impl ByteTokenizer {
    /// Bytes plus the added tokens `added` (spelling, id); `bos` starts each sequence that
    /// `encode_with_specials` makes.
    pub fn new<S: Into<String>>(
        added: impl IntoIterator<Item = (S, i64)>,
        bos: Option<i64>,
    ) -> Self {
        ByteTokenizer {
            added: added.into_iter().map(|(s, id)| (s.into(), id)).collect(),
            bos,
        }
    }
}

impl TokenIds for ByteTokenizer {
    fn encode(&self, text: &str) -> Result<Vec<i64>> {
        let mut out = Vec::new();
        let mut rest = text;
        'outer: while !rest.is_empty() {
            for (s, id) in &self.added {
                if let Some(r) = rest.strip_prefix(s.as_str()) {
                    out.push(*id);
                    rest = r;
                    continue 'outer;
                }
            }
            let c = rest.chars().next().expect("rest is not empty");
            let mut buf = [0u8; 4];
            out.extend(
                c.encode_utf8(&mut buf)
                    .bytes()
                    .map(|b| b as i64 + BYTE_BASE),
            );
            rest = &rest[c.len_utf8()..];
        }
        Ok(out)
    }

    fn encode_with_specials(&self, text: &str) -> Result<Vec<i64>> {
        Ok(self.bos.into_iter().chain(self.encode(text)?).collect())
    }

    fn decode(&self, ids: &[i64]) -> Result<String> {
        let mut bytes = Vec::new();
        for &id in ids {
            if let Some((s, _)) = self.added.iter().find(|(_, i)| *i == id) {
                bytes.extend_from_slice(s.as_bytes());
            } else if (BYTE_BASE..BYTE_BASE + 256).contains(&id) {
                bytes.push((id - BYTE_BASE) as u8);
            } else {
                bail!("token id {id} is not in the byte tokenizer");
            }
        }
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    fn token_id(&self, token: &str) -> Option<i64> {
        self.added
            .iter()
            .find(|(s, _)| s == token)
            .map(|(_, id)| *id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tok() -> ByteTokenizer {
        ByteTokenizer::new([("<s>", 0), ("<|ref|>", 303)], Some(0))
    }

    #[test]
    fn bytes_and_added_tokens_round_trip() {
        let t = tok();
        let s = "<|ref|>title é\n";
        let ids = t.encode(s).unwrap();
        assert_eq!(ids[0], 303);
        assert_eq!(ids[1], BYTE_BASE + b't' as i64);
        assert_eq!(t.decode(&ids).unwrap(), s);
        assert_eq!(t.encode_with_specials("a").unwrap(), [0, BYTE_BASE + 97]);
        assert_eq!(t.token_id("<|ref|>"), Some(303));
        assert_eq!(t.token_id("<image>"), None);
    }

    #[test]
    fn lossy_decode_marks_unknown_ids() {
        let t = tok();
        let mut ids = t.encode("é<|ref|>a").unwrap();
        ids.insert(2, 299);
        ids.push(-4);
        ids.push(1_000_000);
        assert!(t.decode(&ids).is_err());
        assert_eq!(t.decode_lossy(&ids), "é<id:299><|ref|>a<id:-4><id:1000000>");
        let ok = t.encode("plain").unwrap();
        assert_eq!(t.decode_lossy(&ok), "plain");
        assert_eq!(t.decode_lossy(&[]), "");
    }
}
