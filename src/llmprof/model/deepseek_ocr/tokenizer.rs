//! DeepSeek-OCR's special ids and its byte-level tokenizers (the tiny CPU models, and a real-size
//! model whose folder has no tokenizer.json). The tokenizer interface is every family's
//! (`model::tokenizer`); the real DeepSeek-V3 BPE (docs/deepseek-ocr.md §8) is the worker's
//! `HfTokenizer` with this family's checks (`hf_tokenizer.rs`).
pub use crate::model::tokenizer::{ByteTokenizer, TokenIds};

/// Special token ids the prompt builder and generator need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpecialIds {
    pub bos: i64,
    pub eos: i64,
    pub pad: i64,
    pub image: i64,
}

/// BOS, EOS and pad as spelled in the vocabulary (docs/deepseek-ocr.md §8; the bars and spaces
/// are U+FF5C, U+2581), and the image placeholder.
pub const BOS_TOKEN: &str = "<｜begin▁of▁sentence｜>";
pub const EOS_TOKEN: &str = "<｜end▁of▁sentence｜>";
pub const PAD_TOKEN: &str = "<｜▁pad▁｜>";
pub const IMAGE_TOKEN: &str = "<image>";

/// The ids of `ArchConfig::tiny()` (image 300).
pub const TINY_SPECIAL: SpecialIds = SpecialIds {
    bos: 0,
    eos: 1,
    pad: 2,
    image: 300,
};

/// The tiny models' tokenizer: bytes plus the OCR added tokens at the tiny config's ids
/// (`<td>` 301, `</td>` 302, the grounding tokens 303..=307).
pub fn tiny_byte_tokenizer() -> ByteTokenizer {
    let s = TINY_SPECIAL;
    ByteTokenizer::new(
        [
            (BOS_TOKEN, s.bos),
            (EOS_TOKEN, s.eos),
            (PAD_TOKEN, s.pad),
            (IMAGE_TOKEN, s.image),
            ("<td>", 301),
            ("</td>", 302),
            ("<|ref|>", 303),
            ("<|/ref|>", 304),
            ("<|det|>", 305),
            ("<|/det|>", 306),
            ("<|grounding|>", 307),
        ],
        Some(s.bos),
    )
}

/// Bytes plus the given special ids: the fallback for a real-size model without tokenizer.json.
pub fn byte_fallback(special: SpecialIds) -> ByteTokenizer {
    ByteTokenizer::new(
        [
            (BOS_TOKEN, special.bos),
            (EOS_TOKEN, special.eos),
            (PAD_TOKEN, special.pad),
            (IMAGE_TOKEN, special.image),
        ],
        Some(special.bos),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tiny_tokenizer_splits_the_ocr_tokens_out() {
        let t = tiny_byte_tokenizer();
        let s = "<|ref|>title<|/ref|> é\n";
        let ids = t.encode(s).unwrap();
        assert_eq!(ids[0], 303);
        assert_eq!(t.decode(&ids).unwrap(), s);
        assert_eq!(t.token_id(IMAGE_TOKEN), Some(TINY_SPECIAL.image));
        let f = byte_fallback(SpecialIds {
            image: 128815,
            ..TINY_SPECIAL
        });
        assert_eq!(f.encode("<image>").unwrap(), [128815]);
    }
}
