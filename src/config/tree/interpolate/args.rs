//! Resolver arguments in OmegaConf 2.3's interpolation grammar: `element (',' element?)*`,
//! quoted strings, lists, dicts and unquoted primitives, and how an unquoted argument is typed.
//! The rest of the grammar (text, `${...}`, keys, resolver names) is grammar.rs's.
use super::grammar::{Arg, Piece, TextParser};
use crate::tree::lex::{lex_float, lex_int, lex_word_ci, parse_hydra_float};
use crate::tree::node::Node;

/// Type an unquoted resolver argument the way OmegaConf's grammar does (single token only).
pub(super) fn type_primitive(text: &str) -> Node {
    let t = text.trim_matches([' ', '\t']);
    let c: Vec<char> = t.chars().collect();
    if c.is_empty() {
        return Node::Str(String::new());
    }
    if lex_int(&c) == c.len() && lex_float(&c) < c.len() {
        if let Ok(i) = t.replace('_', "").parse() {
            return Node::Int(i);
        }
    }
    if lex_float(&c) == c.len() {
        return Node::Float(parse_hydra_float(t));
    }
    if lex_word_ci(&c, "true") == c.len() {
        return Node::Bool(true);
    }
    if lex_word_ci(&c, "false") == c.len() {
        return Node::Bool(false);
    }
    if lex_word_ci(&c, "null") == c.len() {
        return Node::Null;
    }
    Node::Str(t.to_string())
}

impl TextParser<'_> {
    /// `element (',' element?)*` until `close` (not consumed). Empty elements are ''.
    pub(super) fn sequence(&mut self, close: char) -> Result<Vec<Arg>, String> {
        let mut args = Vec::new();
        self.skip_ws();
        if self.peek() == Some(close) {
            return Ok(args);
        }
        loop {
            self.skip_ws();
            if matches!(self.peek(), Some(',')) || self.peek() == Some(close) {
                args.push(Arg::Primitive(vec![Piece::Text(String::new())]));
            } else {
                args.push(self.element(&[close])?);
            }
            self.skip_ws();
            if self.peek() == Some(',') {
                self.i += 1;
            } else {
                return Ok(args);
            }
        }
    }

    pub(super) fn element(&mut self, close: &[char]) -> Result<Arg, String> {
        self.skip_ws();
        match self.peek() {
            Some(q @ ('\'' | '"')) => {
                self.i += 1;
                let pieces = self.text(&[q])?;
                if self.peek() != Some(q) {
                    return Err(format!("missing closing {q}"));
                }
                self.i += 1;
                Ok(Arg::Quoted(pieces))
            }
            Some('[') => {
                self.i += 1;
                let items = self.nested(|p| p.sequence(']'))?;
                if self.peek() != Some(']') {
                    return Err("missing ']'".into());
                }
                self.i += 1;
                Ok(Arg::List(items))
            }
            Some('{') => {
                self.i += 1;
                let mut items = Vec::new();
                self.skip_ws();
                while self.peek() != Some('}') {
                    let start = self.i;
                    while self.peek().is_some_and(|c| c != ':' && c != '}') {
                        self.i += 1;
                    }
                    let key: String = self.c[start..self.i]
                        .iter()
                        .collect::<String>()
                        .trim()
                        .to_string();
                    if self.peek() != Some(':') {
                        return Err("missing ':' in dict".into());
                    }
                    self.i += 1;
                    let v = self.nested(|p| p.element(&[',', '}']))?;
                    items.push((key, v));
                    self.skip_ws();
                    if self.peek() == Some(',') {
                        self.i += 1;
                        self.skip_ws();
                    }
                }
                self.i += 1;
                Ok(Arg::Dict(items))
            }
            _ => {
                let mut pieces = Vec::new();
                let mut buf = String::new();
                while let Some(ch) = self.peek() {
                    if ch == ',' || close.contains(&ch) || ch == ']' || ch == '}' {
                        break;
                    }
                    if ch == '\\' {
                        if let Some(n) = self.c.get(self.i + 1) {
                            if "\\()[]{}:=, \t".contains(*n) {
                                buf.push(*n);
                                self.i += 2;
                                continue;
                            }
                        }
                    }
                    if self.starts("${") {
                        self.push_interpolation(&mut pieces, &mut buf)?;
                        continue;
                    }
                    if "'\"[{()".contains(ch) {
                        return Err(format!(
                            "unexpected '{ch}' in a resolver argument (quote the argument)"
                        ));
                    }
                    buf.push(ch);
                    self.i += 1;
                }
                // Trailing whitespace belongs to the separator.
                let trimmed = buf.trim_end_matches([' ', '\t']).to_string();
                if !trimmed.is_empty() {
                    pieces.push(Piece::Text(trimmed));
                }
                if pieces.is_empty() {
                    pieces.push(Piece::Text(String::new()));
                }
                Ok(Arg::Primitive(pieces))
            }
        }
    }
}
