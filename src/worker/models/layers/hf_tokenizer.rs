//! An HF `tokenizer.json` (the `tokenizers` crate) behind the families' `TokenIds`, and the chat
//! template of `tokenizer_config.json` rendered as transformers' `apply_chat_template` renders one
//! user message (minijinja). Families add what is theirs: which ids are special, where their
//! tokenizer lives, which prompt layout they use.
use anyhow::{anyhow, Context, Result};
use llmprof::model::tokenizer::TokenIds;
use std::path::{Path, PathBuf};

/// A loaded `tokenizer.json`. `encode` adds no special tokens; `encode_with_specials` lets the
/// tokenizer's post-processor add them (e.g. Llama's BOS).
pub struct HfTokenizer {
    inner: tokenizers::Tokenizer,
    path: PathBuf,
}

impl std::fmt::Debug for HfTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HfTokenizer")
            .field("path", &self.path)
            .finish()
    }
}

impl HfTokenizer {
    pub fn from_file(path: &Path) -> Result<Self> {
        let inner = tokenizers::Tokenizer::from_file(path)
            .map_err(|e| anyhow!("loading tokenizer {}: {e}", path.display()))?;
        Ok(HfTokenizer {
            inner,
            path: path.to_path_buf(),
        })
    }

    /// Like `from_file`, from the JSON text (tests, embedded tokenizers).
    pub fn from_json(json: &str) -> Result<Self> {
        let inner: tokenizers::Tokenizer = json
            .parse()
            .map_err(|e| anyhow!("parsing tokenizer JSON: {e}"))?;
        Ok(HfTokenizer {
            inner,
            path: PathBuf::from("<inline>"),
        })
    }

    /// Where it was read from (`<inline>` for JSON text).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Vocabulary size including added tokens.
    pub fn vocab_size(&self) -> usize {
        self.inner.get_vocab_size(true)
    }

    fn ids(&self, text: &str, specials: bool) -> Result<Vec<i64>> {
        let enc = self.inner.encode(text, specials).map_err(|e| {
            anyhow!(
                "tokenizing {} bytes with {}: {e}",
                text.len(),
                self.path.display()
            )
        })?;
        Ok(enc.get_ids().iter().map(|&i| i64::from(i)).collect())
    }
}

impl TokenIds for HfTokenizer {
    fn encode(&self, text: &str) -> Result<Vec<i64>> {
        self.ids(text, false)
    }

    fn encode_with_specials(&self, text: &str) -> Result<Vec<i64>> {
        self.ids(text, true)
    }

    fn decode(&self, ids: &[i64]) -> Result<String> {
        let ids: Vec<u32> = ids
            .iter()
            .map(|&i| {
                u32::try_from(i).with_context(|| format!("token id {i} is negative or too large"))
            })
            .collect::<Result<_>>()?;
        self.inner.decode(&ids, false).map_err(|e| {
            anyhow!(
                "decoding {} ids with {}: {e}",
                ids.len(),
                self.path.display()
            )
        })
    }

    fn token_id(&self, token: &str) -> Option<i64> {
        self.inner.token_to_id(token).map(i64::from)
    }
}

/// `tokenizer_config.json`'s chat template with the BOS/EOS strings it refers to.
#[derive(Debug, Clone)]
pub struct ChatTemplate {
    source: String,
    bos: String,
    eos: String,
}

impl ChatTemplate {
    /// The template of `tokenizer_config.json` at `path`; `None` when the file or its
    /// `chat_template` (a string) is absent.
    pub fn read(path: &Path) -> Result<Option<Self>> {
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
            .map(|t| ChatTemplate {
                source: t.to_string(),
                bos: token("bos_token"),
                eos: token("eos_token"),
            }))
    }

    /// One user message with the generation prompt, as
    /// `tokenizer.apply_chat_template(..., add_generation_prompt=True, tokenize=False)`.
    pub fn render(&self, prompt: &str) -> Result<String> {
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
        env.add_template("chat", &self.source)
            .context("parsing the chat template")?;
        let ctx = minijinja::context! {
            messages => vec![minijinja::context! { role => "user", content => prompt }],
            add_generation_prompt => true,
            bos_token => self.bos,
            eos_token => self.eos,
        };
        env.get_template("chat")?
            .render(ctx)
            .context("rendering the chat template")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(source: &str) -> ChatTemplate {
        ChatTemplate {
            source: source.into(),
            bos: "<s>".into(),
            eos: "</s>".into(),
        }
    }

    #[test]
    fn chat_templates_render_one_user_message_with_the_generation_prompt() {
        // A ChatML template (the shape of Qwen2.5's).
        let chatml = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";
        assert_eq!(
            template(chatml).render("hi").unwrap(),
            "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
        );
        assert_eq!(
            template("{{ bos_token }}{{ messages[0].content }}")
                .render("x")
                .unwrap(),
            "<s>x"
        );
        let err = template("{{ raise_exception('no system') }}")
            .render("x")
            .unwrap_err();
        assert!(format!("{err:#}").contains("no system"), "{err:#}");
    }

    #[test]
    fn the_config_file_gives_the_template_and_its_tokens() {
        let d = crate::test_util::temp_dir("chat-template");
        let path = d.join("tokenizer_config.json");
        assert!(ChatTemplate::read(&path).unwrap().is_none());
        std::fs::write(
            &path,
            r#"{"chat_template": "{{ bos_token }}|{{ eos_token }}", "bos_token": {"content": "<b>"}, "eos_token": "<e>"}"#,
        )
        .unwrap();
        let t = ChatTemplate::read(&path).unwrap().expect("a template");
        assert_eq!(t.render("p").unwrap(), "<b>|<e>");
        std::fs::write(&path, r#"{"bos_token": "<b>"}"#).unwrap();
        assert!(ChatTemplate::read(&path).unwrap().is_none());
        std::fs::write(&path, "{").unwrap();
        assert!(ChatTemplate::read(&path).is_err());
    }
}
