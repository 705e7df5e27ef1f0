//! Text ↔ ids for dense decoders: the checkpoint's `tokenizer.json` (HF `tokenizers`) with its
//! chat template from `tokenizer_config.json` rendered by minijinja (one user message, generation
//! prompt added) when the checkpoint folder has them; otherwise a byte-level fallback (BOS, then
//! id 3 + byte), with a notice, as DeepSeek-OCR does without its tokenizer.
use anyhow::{anyhow, Context, Result};
use std::path::Path;

pub enum TextTokenizer {
    Hf {
        inner: Box<tokenizers::Tokenizer>,
        /// Jinja source and the special tokens it refers to.
        chat_template: Option<(String, String, String)>,
    },
    Bytes {
        bos: i64,
        vocab: i64,
    },
}

/// First id of the byte-level fallback: bytes map to 3..=258 (0, 1, 2 stay for specials).
const BYTE_BASE: i64 = 3;

impl TextTokenizer {
    /// The tokenizer of the checkpoint folder `dir`, or the byte fallback with a note in `notes`.
    pub fn for_folder(dir: &Path, bos: i64, vocab: i64, notes: &mut Vec<String>) -> Result<Self> {
        let file = dir.join("tokenizer.json");
        if !file.is_file() {
            notes.push(format!(
                "no tokenizer.json under {}: prompts are encoded byte by byte (BOS, then one id per byte), so prompt token counts differ from the real tokenizer's",
                dir.display()
            ));
            return Ok(TextTokenizer::Bytes { bos, vocab });
        }
        let inner = tokenizers::Tokenizer::from_file(&file)
            .map_err(|e| anyhow!("loading tokenizer {}: {e}", file.display()))?;
        let chat_template = read_chat_template(&dir.join("tokenizer_config.json"))?;
        if chat_template.is_none() {
            notes.push(format!(
                "{} has no chat_template: prompts are encoded as plain text",
                dir.join("tokenizer_config.json").display()
            ));
        }
        Ok(TextTokenizer::Hf {
            inner: Box::new(inner),
            chat_template,
        })
    }

    /// The ids of a prompt as the model receives it.
    pub fn encode_prompt(&self, text: &str) -> Result<Vec<i64>> {
        match self {
            TextTokenizer::Bytes { bos, vocab } => Ok(std::iter::once(*bos)
                .chain(text.bytes().map(|b| (BYTE_BASE + b as i64) % vocab))
                .collect()),
            TextTokenizer::Hf {
                inner,
                chat_template,
            } => {
                let (rendered, add_special) = match chat_template {
                    Some((tpl, bos, eos)) => (render_chat(tpl, bos, eos, text)?, false),
                    None => (text.to_string(), true),
                };
                let enc = inner
                    .encode(rendered.as_str(), add_special)
                    .map_err(|e| anyhow!("tokenizing a prompt: {e}"))?;
                Ok(enc.get_ids().iter().map(|&i| i as i64).collect())
            }
        }
    }

    /// Ids → text; ids the tokenizer lacks appear as `<id:N>`.
    pub fn decode(&self, ids: &[i64]) -> String {
        match self {
            TextTokenizer::Bytes { .. } => {
                let mut bytes = Vec::new();
                let mut out = String::new();
                for &id in ids {
                    if (BYTE_BASE..BYTE_BASE + 256).contains(&id) {
                        bytes.push((id - BYTE_BASE) as u8);
                    } else {
                        out.push_str(&String::from_utf8_lossy(&std::mem::take(&mut bytes)));
                        out.push_str(&format!("<id:{id}>"));
                    }
                }
                out.push_str(&String::from_utf8_lossy(&bytes));
                out
            }
            TextTokenizer::Hf { inner, .. } => {
                let ok: Vec<u32> = ids.iter().filter_map(|&i| u32::try_from(i).ok()).collect();
                inner
                    .decode(&ok, false)
                    .unwrap_or_else(|_| ids.iter().map(|i| format!("<id:{i}>")).collect())
            }
        }
    }
}

/// `chat_template` (a string) and the BOS/EOS token strings of `tokenizer_config.json`.
fn read_chat_template(path: &Path) -> Result<Option<(String, String, String)>> {
    if !path.is_file() {
        return Ok(None);
    }
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    let token = |k: &str| -> String {
        match v.get(k) {
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(o) => o
                .get("content")
                .and_then(|c| c.as_str())
                .unwrap_or("")
                .to_string(),
            None => String::new(),
        }
    };
    Ok(v.get("chat_template")
        .and_then(|t| t.as_str())
        .map(|t| (t.to_string(), token("bos_token"), token("eos_token"))))
}

/// Renders an HF chat template for one user message with the generation prompt, as
/// `tokenizer.apply_chat_template(..., add_generation_prompt=True, tokenize=False)`.
pub fn render_chat(template: &str, bos: &str, eos: &str, prompt: &str) -> Result<String> {
    let mut env = minijinja::Environment::new();
    env.add_function(
        "raise_exception",
        |msg: String| -> Result<String, minijinja::Error> {
            Err(minijinja::Error::new(
                minijinja::ErrorKind::InvalidOperation,
                msg,
            ))
        },
    );
    env.add_template("chat", template)
        .context("parsing the chat template")?;
    let ctx = minijinja::context! {
        messages => vec![minijinja::context! { role => "user", content => prompt }],
        add_generation_prompt => true,
        bos_token => bos,
        eos_token => eos,
    };
    env.get_template("chat")?
        .render(ctx)
        .context("rendering the chat template")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_fallback_round_trips_and_chatml_renders() {
        let t = TextTokenizer::Bytes { bos: 1, vocab: 512 };
        let ids = t.encode_prompt("hé").unwrap();
        assert_eq!(ids[0], 1);
        assert_eq!(ids.len(), 1 + "hé".len());
        assert_eq!(t.decode(&ids[1..]), "hé");
        assert_eq!(t.decode(&[1]), "<id:1>");
        // A ChatML template (the shape of Qwen2.5's) with the generation prompt.
        let tpl = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";
        assert_eq!(
            render_chat(tpl, "", "", "hi").unwrap(),
            "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
        );
        let err = render_chat("{{ raise_exception('no system') }}", "", "", "x").unwrap_err();
        assert!(format!("{err:#}").contains("no system"), "{err:#}");
    }
}
