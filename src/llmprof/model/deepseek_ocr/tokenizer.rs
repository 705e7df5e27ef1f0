//! Thin tokenizer interface (`TokenIds`) and a tiny byte-level tokenizer for tests and
//! tiny-config runs. The real DeepSeek-V3 BPE (docs/deepseek-ocr.md §8) is `hf_tokenizer::HfTokenizer`.

use anyhow::{bail, Result};

/// Special token ids the prompt builder and generator need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpecialIds {
    pub bos: i64,
    pub eos: i64,
    pub pad: i64,
    pub image: i64,
}

pub trait TokenIds {
    /// Text → ids, without BOS/EOS; added tokens such as `<|grounding|>` are split out.
    fn encode(&self, text: &str) -> Result<Vec<i64>>;
    /// Ids → text, special tokens kept.
    fn decode(&self, ids: &[i64]) -> Result<String>;
    fn special(&self) -> SpecialIds;

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

/// Bytes map to ids 3..259; the added tokens below have fixed ids (tiny config layout).
#[derive(Debug, Clone)]
pub struct ByteTokenizer {
    added: Vec<(&'static str, i64)>,
    special: SpecialIds,
}

/// Offset of byte ids.
const BYTE_BASE: i64 = 3;

impl ByteTokenizer {
    /// Ids match `ArchConfig::tiny()` (image 300, `<td>` 301, `</td>` 302).
    pub fn tiny() -> Self {
        ByteTokenizer {
            added: vec![
                ("<｜begin▁of▁sentence｜>", 0),
                ("<｜end▁of▁sentence｜>", 1),
                ("<｜▁pad▁｜>", 2),
                ("<image>", 300),
                ("<td>", 301),
                ("</td>", 302),
                ("<|ref|>", 303),
                ("<|/ref|>", 304),
                ("<|det|>", 305),
                ("<|/det|>", 306),
                ("<|grounding|>", 307),
            ],
            special: SpecialIds {
                bos: 0,
                eos: 1,
                pad: 2,
                image: 300,
            },
        }
    }
}

impl ByteTokenizer {
    /// Bytes plus the given special ids (BOS/EOS/pad/`<image>`): the fallback for a real-size
    /// model when no tokenizer.json is available.
    pub fn with_special(special: SpecialIds) -> Self {
        ByteTokenizer {
            added: vec![
                ("<｜begin▁of▁sentence｜>", special.bos),
                ("<｜end▁of▁sentence｜>", special.eos),
                ("<｜▁pad▁｜>", special.pad),
                ("<image>", special.image),
            ],
            special,
        }
    }
}

impl TokenIds for ByteTokenizer {
    fn encode(&self, text: &str) -> Result<Vec<i64>> {
        let mut out = Vec::new();
        let mut rest = text;
        'outer: while !rest.is_empty() {
            for (s, id) in &self.added {
                if let Some(r) = rest.strip_prefix(s) {
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

    fn special(&self) -> SpecialIds {
        self.special
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_tokenizer_round_trip() {
        let t = ByteTokenizer::tiny();
        let s = "<|ref|>title<|/ref|> é\n";
        let ids = t.encode(s).unwrap();
        assert_eq!(ids[0], 303);
        assert_eq!(t.decode(&ids).unwrap(), s);
    }

    #[test]
    fn lossy_decode_marks_unknown_ids() {
        let t = ByteTokenizer::tiny();
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
