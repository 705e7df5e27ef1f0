//! Parser of Hydra 1.3's command-line overrides (`hydra/grammar/OverrideParser.g4`): `key=value`,
//! `group=option`, `+key=v`, `++key=v`, `~key[=v]`, `group@pkg=option`, typed values, lists, dicts
//! and sweeps (`a,b`) into an `Override`; function calls go to functions.rs. No file I/O.
use super::functions::eval_function;
use super::lexer::{lex, unescape_quoted, Tok, Token};
use super::types::{Element, Override, OverrideKind, ParseError, Parsed, Sweep, Value};
use crate::tree::lex::parse_hydra_float;
use crate::tree::limits::{too_deep, MAX_NESTING};
use crate::tree::scalar::python_float_repr;

/// Parse one override as typed on the command line.
pub fn parse_override(input: &str) -> Result<Override, ParseError> {
    let err = |reason: String| ParseError {
        input: input.to_string(),
        reason,
    };
    let (kind, rest) = if let Some(r) = input.strip_prefix("++") {
        (OverrideKind::ForceAdd, r)
    } else if let Some(r) = input.strip_prefix('+') {
        (OverrideKind::Add, r)
    } else if let Some(r) = input.strip_prefix('~') {
        (OverrideKind::Delete, r)
    } else {
        (OverrideKind::Change, input)
    };
    let (key_text, value_text) = match rest.find('=') {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None if kind == OverrideKind::Delete => (rest, None),
        None => {
            return Err(err(format!(
                "missing '=' in '{input}': write key=value (or ~key to delete)"
            )))
        }
    };
    let (key_or_group, package) = parse_key(key_text).map_err(err)?;
    let value = match value_text {
        None => None,
        Some(v) => {
            // EQUAL: '=' WS? — whitespace right after '=' belongs to the '=' token.
            let v = v.trim_start_matches([' ', '\t']);
            if v.is_empty() {
                Some(Value::Element(Element::Str {
                    text: String::new(),
                    quote: None,
                }))
            } else {
                Some(
                    ValueParser::new(v)
                        .map_err(err)?
                        .parse_value()
                        .map_err(err)?,
                )
            }
        }
    };
    Ok(Override {
        kind,
        key_or_group,
        package,
        value,
        input: input.to_string(),
    })
}

fn parse_key(text: &str) -> Result<(String, Option<String>), String> {
    let (kog, pkg) = match text.find('@') {
        Some(i) => (&text[..i], Some(&text[i + 1..])),
        None => (text, None),
    };
    let valid_seg = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '$')
    };
    let key_ok = if kog.contains('/') {
        kog.split('/').all(|s| {
            valid_seg(s)
                && s.chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        })
    } else {
        kog.split('.').all(valid_seg)
    };
    if kog.is_empty() || !key_ok {
        return Err(format!(
            "invalid key '{text}': keys are dotted names (a.b.c) or group paths (a/b), optionally @package"
        ));
    }
    if let Some(p) = pkg {
        if !p.is_empty() && !p.split('.').all(valid_seg) {
            return Err(format!("invalid package '{p}' in '{text}'"));
        }
    }
    let segments = |s: &str| s.split(['.', '/']).count();
    if segments(kog) > MAX_NESTING || pkg.is_some_and(|p| segments(p) > MAX_NESTING) {
        return Err(too_deep(&format!("the key '{text}'"), MAX_NESTING));
    }
    Ok((kog.to_string(), pkg.map(str::to_string)))
}

struct ValueParser {
    toks: Vec<Token>,
    pos: usize,
    /// Nesting of lists, dicts and calls at the cursor (bounded: the parser recurses on it).
    depth: usize,
}

const PRIMITIVE_TOKS: [Tok; 10] = [
    Tok::Id,
    Tok::Null,
    Tok::Int,
    Tok::Float,
    Tok::Bool,
    Tok::Interpolation,
    Tok::UnquotedChar,
    Tok::Colon,
    Tok::Esc,
    Tok::Ws,
];

impl ValueParser {
    fn new(s: &str) -> Result<Self, String> {
        Ok(Self {
            toks: lex(s)?,
            pos: 0,
            depth: 0,
        })
    }

    fn peek(&self) -> Option<Tok> {
        self.toks.get(self.pos).map(|t| t.kind)
    }

    fn expect(&mut self, k: Tok, what: &str) -> Result<(), String> {
        if self.peek() == Some(k) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.unexpected(what))
        }
    }

    fn unexpected(&self, expecting: &str) -> String {
        match self.toks.get(self.pos) {
            Some(t) => format!("mismatched input '{}' expecting {expecting}", t.text),
            None => format!("missing {expecting} at '<EOF>'"),
        }
    }

    fn parse_value(mut self) -> Result<Value, String> {
        let first = self.element()?;
        if self.peek() == Some(Tok::Comma) {
            let mut items = vec![first.into_element()?];
            while self.peek() == Some(Tok::Comma) {
                self.pos += 1;
                items.push(self.element()?.into_element()?);
            }
            self.end()?;
            return Ok(Value::Sweep(Sweep::Choice {
                items,
                simple: true,
            }));
        }
        self.end()?;
        Ok(match first {
            Parsed::Element(e) => Value::Element(e),
            Parsed::Sweep(s) => Value::Sweep(s),
        })
    }

    fn end(&self) -> Result<(), String> {
        if self.pos < self.toks.len() {
            Err(format!(
                "extraneous input '{}' expecting <EOF>",
                self.toks[self.pos].text
            ))
        } else {
            Ok(())
        }
    }

    fn element(&mut self) -> Result<Parsed, String> {
        if self.depth >= MAX_NESTING {
            return Err(too_deep("the value", MAX_NESTING));
        }
        self.depth += 1;
        let r = self.element_here();
        self.depth -= 1;
        r
    }

    fn element_here(&mut self) -> Result<Parsed, String> {
        match self.peek() {
            Some(Tok::Id) if self.toks.get(self.pos + 1).map(|t| t.kind) == Some(Tok::POpen) => {
                self.function()
            }
            Some(Tok::BracketOpen) => {
                self.pos += 1;
                let mut items = Vec::new();
                if self.peek() != Some(Tok::BracketClose) {
                    items.push(self.element()?.into_element()?);
                    while self.peek() == Some(Tok::Comma) {
                        self.pos += 1;
                        items.push(self.element()?.into_element()?);
                    }
                }
                self.expect(Tok::BracketClose, "']'")?;
                Ok(Parsed::Element(Element::List(items)))
            }
            Some(Tok::BraceOpen) => {
                self.pos += 1;
                let mut items: Vec<(String, Element)> = Vec::new();
                if self.peek() != Some(Tok::BraceClose) {
                    loop {
                        let key = self.dict_key()?;
                        self.expect(Tok::Colon, "':'")?;
                        let v = self.element()?.into_element()?;
                        items.retain(|(k, _)| *k != key);
                        items.push((key, v));
                        if self.peek() == Some(Tok::Comma) {
                            self.pos += 1;
                        } else {
                            break;
                        }
                    }
                }
                self.expect(Tok::BraceClose, "'}'")?;
                Ok(Parsed::Element(Element::Dict(items)))
            }
            Some(Tok::Quoted) => {
                let text = self.toks[self.pos].text.clone();
                self.pos += 1;
                let quote = text.chars().next();
                Ok(Parsed::Element(Element::Str {
                    text: unescape_quoted(&text),
                    quote,
                }))
            }
            Some(k) if PRIMITIVE_TOKS.contains(&k) => Ok(Parsed::Element(self.primitive()?)),
            _ => Err(self.unexpected("a value")),
        }
    }

    fn primitive_run(&mut self, allowed: &[Tok]) -> Vec<(Tok, String)> {
        let mut run = Vec::new();
        while let Some(k) = self.peek() {
            if !allowed.contains(&k) {
                break;
            }
            // A function call cannot start in the middle of a primitive.
            run.push((k, self.toks[self.pos].text.clone()));
            self.pos += 1;
        }
        run
    }

    fn primitive(&mut self) -> Result<Element, String> {
        let run = self.primitive_run(&PRIMITIVE_TOKS);
        make_primitive(run)
    }

    fn dict_key(&mut self) -> Result<String, String> {
        let allowed = [
            Tok::Id,
            Tok::Null,
            Tok::Int,
            Tok::Float,
            Tok::Bool,
            Tok::UnquotedChar,
            Tok::Esc,
            Tok::Ws,
        ];
        let run = self.primitive_run(&allowed);
        if run.is_empty() {
            return Err(self.unexpected("a dictionary key"));
        }
        Ok(match make_primitive(run)? {
            Element::Str { text, .. } => text,
            Element::Int(i) => i.to_string(),
            Element::Float(f) => python_float_repr(f),
            Element::Bool(b) => if b { "True" } else { "False" }.to_string(),
            Element::Null => "None".to_string(),
            other => other.to_string(),
        })
    }

    fn function(&mut self) -> Result<Parsed, String> {
        let name = self.toks[self.pos].text.clone();
        self.pos += 2; // ID POPEN
        let mut args: Vec<Parsed> = Vec::new();
        let mut kwargs: Vec<(String, Parsed)> = Vec::new();
        if self.peek() != Some(Tok::PClose) {
            loop {
                let is_kw = self.peek() == Some(Tok::Id)
                    && self.toks.get(self.pos + 1).map(|t| t.kind) == Some(Tok::Equal);
                if is_kw {
                    let k = self.toks[self.pos].text.clone();
                    self.pos += 2;
                    kwargs.push((k, self.element()?));
                } else {
                    if !kwargs.is_empty() {
                        return Err("positional argument follows keyword argument".into());
                    }
                    args.push(self.element()?);
                }
                if self.peek() == Some(Tok::Comma) {
                    self.pos += 1;
                } else {
                    break;
                }
            }
        }
        self.expect(Tok::PClose, "')'")?;
        eval_function(&name, args, kwargs)
            .map_err(|e| format!("error while evaluating '{name}(...)': {e}"))
    }
}

fn make_primitive(mut run: Vec<(Tok, String)>) -> Result<Element, String> {
    if run.first().is_some_and(|(k, _)| *k == Tok::Ws) {
        if run.len() == 1 {
            return Err("Trying to parse a primitive that is all whitespaces".into());
        }
        run.remove(0);
    }
    if run.last().is_some_and(|(k, _)| *k == Tok::Ws) {
        run.pop();
    }
    let unescape = |t: &str| t.chars().skip(1).step_by(2).collect::<String>();
    if run.len() > 1 {
        let text: String = run
            .iter()
            .map(|(k, t)| {
                if *k == Tok::Esc {
                    unescape(t)
                } else {
                    t.clone()
                }
            })
            .collect();
        return Ok(Element::Str { text, quote: None });
    }
    let (k, t) = &run[0];
    Ok(match k {
        Tok::Int => Element::Int(
            t.replace('_', "")
                .parse()
                .map_err(|_| format!("integer out of range: {t}"))?,
        ),
        Tok::Float => Element::Float(parse_hydra_float(t)),
        Tok::Null => Element::Null,
        Tok::Bool => Element::Bool(t.eq_ignore_ascii_case("true")),
        Tok::Esc => Element::Str {
            text: unescape(t),
            quote: None,
        },
        _ => Element::Str {
            text: t.clone(),
            quote: None,
        },
    })
}
