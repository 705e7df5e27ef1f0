//! Text ↔ ids for dense decoders: the checkpoint's `tokenizer.json` (the shared `HfTokenizer`)
//! with its chat template from `tokenizer_config.json` (one user message, generation prompt added)
//! when the checkpoint folder has them; otherwise the byte-level fallback (BOS, then one id per
//! byte), with a notice, as DeepSeek-OCR does without its tokenizer.
use crate::models::layers::hf_tokenizer::{ChatTemplate, HfTokenizer};
use anyhow::{bail, Result};
use llmprof::model::tokenizer::{ByteTokenizer, TokenIds, BYTE_BASE};
use std::path::Path;

pub struct TextTokenizer {
    tokens: Box<dyn TokenIds>,
    chat: Option<ChatTemplate>,
}

impl TextTokenizer {
    /// The byte-level fallback: BOS, then `BYTE_BASE + byte`; the vocabulary must hold the bytes.
    pub fn bytes(bos: i64, vocab: i64) -> Result<Self> {
        if vocab < BYTE_BASE + 256 {
            bail!(
                "the byte-level tokenizer needs a vocabulary of at least {} ids (this one has {vocab}); give the checkpoint folder its tokenizer.json",
                BYTE_BASE + 256
            );
        }
        Ok(TextTokenizer {
            tokens: Box::new(ByteTokenizer::new(Vec::<(String, i64)>::new(), Some(bos))),
            chat: None,
        })
    }

    /// The tokenizer of the checkpoint folder `dir`, or the byte fallback with a note in `notes`.
    pub fn for_folder(dir: &Path, bos: i64, vocab: i64, notes: &mut Vec<String>) -> Result<Self> {
        let file = dir.join("tokenizer.json");
        if !file.is_file() {
            notes.push(format!(
                "no tokenizer.json under {}: prompts are encoded byte by byte (BOS, then one id per byte), so prompt token counts differ from the real tokenizer's",
                dir.display()
            ));
            return Self::bytes(bos, vocab);
        }
        let tokens = HfTokenizer::from_file(&file)?;
        let config = dir.join("tokenizer_config.json");
        let chat = ChatTemplate::read(&config)?;
        if chat.is_none() {
            notes.push(format!(
                "{} has no chat_template: prompts are encoded as plain text",
                config.display()
            ));
        }
        Ok(TextTokenizer {
            tokens: Box::new(tokens),
            chat,
        })
    }

    /// The ids of a prompt as the model receives it: the chat template rendered (it spells its
    /// own special tokens), else the text with the tokenizer's special tokens.
    pub fn encode_prompt(&self, text: &str) -> Result<Vec<i64>> {
        match &self.chat {
            Some(chat) => self.tokens.encode(&chat.render(text)?),
            None => self.tokens.encode_with_specials(text),
        }
    }

    /// Ids → text; ids the tokenizer lacks appear as `<id:N>`.
    pub fn decode(&self, ids: &[i64]) -> String {
        self.tokens.decode_lossy(ids)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_fallback_round_trips_and_needs_room_for_the_bytes() {
        let t = TextTokenizer::bytes(1, 512).unwrap();
        let ids = t.encode_prompt("hé").unwrap();
        assert_eq!(ids[0], 1);
        assert_eq!(ids.len(), 1 + "hé".len());
        assert_eq!(t.decode(&ids[1..]), "hé");
        assert_eq!(t.decode(&[1]), "<id:1>");
        let e = TextTokenizer::bytes(1, 200).err().unwrap().to_string();
        assert!(
            e.contains("at least 259") && e.contains("tokenizer.json"),
            "{e}"
        );
    }
}
