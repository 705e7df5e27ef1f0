//! The real DeepSeek-OCR tokenizer (docs/deepseek-ocr.md §8: DeepSeek-V3 byte-level BPE + 12 OCR
//! added tokens): the shared `HfTokenizer` with this family's checks (its special tokens must be
//! there; the §8 id table) and where its tokenizer.json lives.
use crate::models::layers::hf_tokenizer::HfTokenizer;
use anyhow::{bail, Result};
use llmprof::model::deepseek_ocr::tokenizer::{
    SpecialIds, BOS_TOKEN, EOS_TOKEN, IMAGE_TOKEN, PAD_TOKEN,
};
use llmprof::model::tokenizer::TokenIds;
use std::path::{Path, PathBuf};

/// Spec §8 ids of the tokens the workload relies on (`<tr>`/`</tr>` are inferred there).
pub const SPEC_TOKEN_IDS: [(&str, i64); 15] = [
    (BOS_TOKEN, 0),
    (EOS_TOKEN, 1),
    (PAD_TOKEN, 2),
    (IMAGE_TOKEN, 128815),
    ("<|ref|>", 128816),
    ("<|/ref|>", 128817),
    ("<|det|>", 128818),
    ("<|/det|>", 128819),
    ("<|grounding|>", 128820),
    ("<td>", 128821),
    ("</td>", 128822),
    ("<tr>", 128823),
    ("</tr>", 128824),
    ("<|User|>", 128825),
    ("<|Assistant|>", 128826),
];

/// BOS, EOS, pad and `<image>` as `t` numbers them; an error naming the missing ones when `t` is
/// not a DeepSeek-OCR tokenizer.
pub fn special_ids(t: &HfTokenizer) -> Result<SpecialIds> {
    let missing: Vec<&str> = [BOS_TOKEN, EOS_TOKEN, PAD_TOKEN, IMAGE_TOKEN]
        .into_iter()
        .filter(|tok| t.token_id(tok).is_none())
        .collect();
    if !missing.is_empty() {
        bail!(
            "tokenizer {} lacks {} (not a DeepSeek-OCR tokenizer; build one with scripts/assemble_tokenizer.py)",
            t.path().display(),
            missing.join(", ")
        );
    }
    let id = |tok: &str| t.token_id(tok).expect("checked above");
    Ok(SpecialIds {
        bos: id(BOS_TOKEN),
        eos: id(EOS_TOKEN),
        pad: id(PAD_TOKEN),
        image: id(IMAGE_TOKEN),
    })
}

/// The tokenizer for a model folder: `<model_dir>/tokenizer.json`, else the assembled
/// `<model_dir>/../tokenizer/tokenizer.json` (models/bootstrap.sh). `None` when neither exists.
pub fn locate(model_dir: &Path) -> Option<PathBuf> {
    let own = model_dir.join("tokenizer.json");
    if own.is_file() {
        return Some(own);
    }
    let assembled = model_dir.parent()?.join("tokenizer").join("tokenizer.json");
    assembled.is_file().then_some(assembled)
}

/// The docs/deepseek-ocr.md §8 tokens whose id in `t` differs from the table (empty for the real
/// tokenizer).
pub fn spec_id_mismatches(t: &HfTokenizer) -> Vec<(&'static str, i64, Option<i64>)> {
    SPEC_TOKEN_IDS
        .iter()
        .filter_map(|&(tok, want)| {
            let got = t.token_id(tok);
            (got != Some(want)).then_some((tok, want, got))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// DeepSeek-V3's word-splitting regex (docs/deepseek-ocr.md §8 step 3; its `(?!\S)` needs fancy-regex).
    const V3_WORD_REGEX: &str = r##"[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"##;

    const TINY_FIRST_OCR: usize = 261;

    /// A tokenizer.json shaped like DeepSeek-V3's (same pre-tokeniser and decoder): BOS/EOS/pad at
    /// 0..2 (in the vocabulary and added, as in V3), the 256-symbol byte alphabet at 3..258, two
    /// merges at 259..260, then the 12 OCR tokens at 261..272. The `tokenizers` crate gives added
    /// tokens outside the vocabulary the ids after it, in order, so the ids must be dense.
    fn tiny_json() -> String {
        let mut alphabet: Vec<char> = tokenizers::pre_tokenizers::byte_level::ByteLevel::alphabet()
            .into_iter()
            .collect();
        alphabet.sort();
        let mut vocab = serde_json::Map::new();
        for (i, t) in [BOS_TOKEN, EOS_TOKEN, PAD_TOKEN].iter().enumerate() {
            vocab.insert(t.to_string(), json!(i));
        }
        for (i, c) in alphabet.iter().enumerate() {
            vocab.insert(c.to_string(), json!(3 + i));
        }
        vocab.insert("Ġt".into(), json!(259));
        vocab.insert("Ġto".into(), json!(260));
        let mut added = vec![
            json!({"id": 0, "content": BOS_TOKEN, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}),
            json!({"id": 1, "content": EOS_TOKEN, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}),
            json!({"id": 2, "content": PAD_TOKEN, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}),
        ];
        for (i, (t, _)) in SPEC_TOKEN_IDS[3..].iter().enumerate() {
            added.push(json!({"id": TINY_FIRST_OCR + i, "content": t, "single_word": false, "lstrip": false, "rstrip": false, "normalized": true, "special": false}));
        }
        json!({
            "version": "1.0",
            "truncation": null,
            "padding": null,
            "added_tokens": added,
            "normalizer": {"type": "Sequence", "normalizers": []},
            "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": "\\p{N}{1,3}"}, "behavior": "Isolated", "invert": false},
                {"type": "Split", "pattern": {"Regex": V3_WORD_REGEX}, "behavior": "Isolated", "invert": false},
                {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}
            ]},
            "post_processor": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false, "use_regex": true},
            "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
            "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
                      "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false,
                      "vocab": vocab, "merges": ["Ġ t", "Ġt o"]}
        })
        .to_string()
    }

    #[test]
    fn tiny_tokenizer_special_ids_and_round_trip() {
        let t = HfTokenizer::from_json(&tiny_json()).unwrap();
        assert_eq!(
            special_ids(&t).unwrap(),
            SpecialIds {
                bos: 0,
                eos: 1,
                pad: 2,
                image: 261
            }
        );
        assert_eq!(t.token_id("<|grounding|>"), Some(266));
        assert_eq!(t.token_id("<td>"), Some(267));
        assert_eq!(t.token_id("<|Assistant|>"), Some(272));
        assert_eq!(t.vocab_size(), 273);
        let text = "<image>\n<|grounding|>go to 12345 é";
        let ids = t.encode(text).unwrap();
        assert_eq!(ids[0], 261, "{ids:?}");
        assert_eq!(ids[2], 266, "{ids:?}");
        assert!(ids.contains(&260), "the merge ' to' applies: {ids:?}");
        assert!(!ids.contains(&0), "no BOS from encode: {ids:?}");
        assert_eq!(t.decode(&ids).unwrap(), text);
        // The spec table is about the real ids, so the tiny layout differs from it.
        assert_eq!(spec_id_mismatches(&t).len(), 12);
    }

    #[test]
    fn missing_specials_are_named() {
        let json = tiny_json().replace("<image>", "<img>");
        let e = special_ids(&HfTokenizer::from_json(&json).unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("lacks <image>"), "{e}");
        assert!(
            HfTokenizer::decode(&HfTokenizer::from_json(&tiny_json()).unwrap(), &[-1]).is_err()
        );
    }

    #[test]
    fn locate_prefers_the_snapshot_then_the_assembled_file() {
        let d = crate::test_util::temp_dir("hf-tokenizer-locate");
        let model = d.join("deepseek-ocr");
        std::fs::create_dir_all(&model).unwrap();
        assert_eq!(locate(&model), None);
        std::fs::create_dir_all(d.join("tokenizer")).unwrap();
        std::fs::write(d.join("tokenizer/tokenizer.json"), "{}").unwrap();
        assert_eq!(locate(&model), Some(d.join("tokenizer/tokenizer.json")));
        std::fs::write(model.join("tokenizer.json"), "{}").unwrap();
        assert_eq!(locate(&model), Some(model.join("tokenizer.json")));
    }

    /// The real (or assembled) tokenizer: docs/deepseek-ocr.md §8 ids and the docs/deepseek-ocr.md §5 prompt encoding.
    #[test]
    #[ignore = "needs models/deepseek-ocr/tokenizer.json or models/tokenizer/tokenizer.json: run models/bootstrap.sh"]
    fn real_tokenizer_matches_spec() {
        let models = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models/deepseek-ocr");
        let path = locate(&models).expect("no tokenizer.json: run models/bootstrap.sh");
        let t = HfTokenizer::from_file(&path).unwrap();
        assert_eq!(spec_id_mismatches(&t), vec![], "{}", path.display());
        assert_eq!(
            special_ids(&t).unwrap(),
            SpecialIds {
                bos: 0,
                eos: 1,
                pad: 2,
                image: 128815
            }
        );
        assert_eq!(t.vocab_size(), 128_827);
        // Spec §5: "\n<|grounding|>Convert the document to markdown." after the image tokens.
        let ids = t
            .encode("\n<|grounding|>Convert the document to markdown.")
            .unwrap();
        assert_eq!(ids, [201, 128820, 21842, 270, 4940, 304, 2121, 7919, 16]);
        let grounded =
            "<|ref|>title<|/ref|><|det|>[[10, 20, 30, 40]]<|/det|>\n# Résumé 2024<td>x</td>";
        assert_eq!(t.decode(&t.encode(grounded).unwrap()).unwrap(), grounded);
    }
}
