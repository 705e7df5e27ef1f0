//! The values of Hydra 1.3's override grammar (`hydra/core/override_parser/types.py`): `Override`,
//! its kind, elements, sweeps and the parse error, with the element → node and element → text
//! conversions. No lexing or parsing.
use super::lexer::lex_interpolation;
use crate::tree::node::{Map, Node};
use crate::tree::scalar::python_float_repr;
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OverrideKind {
    /// `key=value`
    Change,
    /// `+key=value`
    Add,
    /// `++key=value`
    ForceAdd,
    /// `~key` or `~key=value`
    Delete,
}

/// One parsed value element.
#[derive(Debug, Clone, PartialEq)]
pub enum Element {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    /// `quoted` keeps the quote character for round-tripping (`'a b'`).
    Str {
        text: String,
        quote: Option<char>,
    },
    List(Vec<Element>),
    Dict(Vec<(String, Element)>),
}

/// A value that expands to several runs (multirun only).
#[derive(Debug, Clone, PartialEq)]
pub enum Sweep {
    /// `a,b,c` (simple) or `choice(a,b,c)`.
    Choice { items: Vec<Element>, simple: bool },
    /// `range(start, stop[, step])`: ints or floats, stop excluded.
    Range { items: Vec<Element> },
    /// `glob(include[, exclude=...])` over a config group's options.
    Glob {
        include: Vec<String>,
        exclude: Vec<String>,
    },
    /// `interval(a, b)`: continuous, only for optimising sweepers.
    Interval { start: f64, end: f64 },
}

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Element(Element),
    Sweep(Sweep),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Override {
    pub kind: OverrideKind,
    /// Config key (`a.b.c`) or group path (`model`, `hydra/launcher`).
    pub key_or_group: String,
    /// The `@pkg` part, if any (`Some("")` for `group@=x`).
    pub package: Option<String>,
    /// `None` only for `~key` without a value.
    pub value: Option<Value>,
    /// The override exactly as typed.
    pub input: String,
}

#[derive(Debug, thiserror::Error, PartialEq)]
#[error("Error parsing override '{input}'\n{reason}\nSee https://hydra.cc/docs/1.2/advanced/override_grammar/basic for details")]
pub struct ParseError {
    pub input: String,
    pub reason: String,
}

impl Override {
    /// `group@pkg` or `key`, with the `+`/`++`/`~` prefix.
    pub fn key_element(&self) -> String {
        let prefix = match self.kind {
            OverrideKind::Change => "",
            OverrideKind::Add => "+",
            OverrideKind::ForceAdd => "++",
            OverrideKind::Delete => "~",
        };
        format!("{prefix}{}", self.key_without_prefix())
    }

    pub fn key_without_prefix(&self) -> String {
        match &self.package {
            None => self.key_or_group.clone(),
            Some(p) => format!("{}@{}", self.key_or_group, p),
        }
    }

    pub fn is_sweep(&self) -> bool {
        matches!(self.value, Some(Value::Sweep(_)))
    }

    /// Overrides of Hydra's own config (`hydra.run.dir=...`, `hydra/launcher=...`).
    pub fn is_hydra_override(&self) -> bool {
        self.key_or_group.starts_with("hydra.") || self.key_or_group.starts_with("hydra/")
    }

    /// The single value as a config node (`None` when absent or a sweep).
    pub fn element(&self) -> Option<&Element> {
        match &self.value {
            Some(Value::Element(e)) => Some(e),
            _ => None,
        }
    }
}

impl Element {
    pub fn to_node(&self) -> Node {
        match self {
            Element::Null => Node::Null,
            Element::Bool(b) => Node::Bool(*b),
            Element::Int(i) => Node::Int(*i),
            Element::Float(f) => Node::Float(*f),
            // OmegaConf holds the string `???` as a missing value, quoted or not.
            Element::Str { text, .. } if text == "???" => Node::Missing,
            Element::Str { text, .. } => Node::Str(text.clone()),
            Element::List(l) => Node::List(l.iter().map(Element::to_node).collect()),
            Element::Dict(d) => Node::Map(
                d.iter()
                    .map(|(k, v)| (k.clone(), v.to_node()))
                    .collect::<Map>(),
            ),
        }
    }

    pub fn as_plain_str(&self) -> Option<&str> {
        match self {
            Element::Str { text, .. } => Some(text),
            _ => None,
        }
    }

    pub(super) fn number(&self) -> Option<f64> {
        match self {
            Element::Int(i) => Some(*i as f64),
            Element::Float(f) => Some(*f),
            _ => None,
        }
    }
}

/// Hydra's `_get_value_element_as_str`: the text that parses back to the same element.
impl fmt::Display for Element {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Element::Null => write!(f, "null"),
            Element::Bool(b) => write!(f, "{}", if *b { "true" } else { "false" }),
            Element::Int(i) => write!(f, "{i}"),
            Element::Float(x) => {
                if x.is_nan() {
                    write!(f, "nan")
                } else if x.is_infinite() {
                    write!(f, "{}", if *x > 0.0 { "inf" } else { "-inf" })
                } else {
                    write!(f, "{}", python_float_repr(*x))
                }
            }
            Element::Str { text, quote } => match quote {
                Some(q) => write!(f, "{}", with_quotes(text, *q)),
                // Text no unquoted token can hold (quotes, `#`, non-ASCII…) is written quoted.
                None => match escape_unquoted(text) {
                    Some(t) => write!(f, "{t}"),
                    None => write!(f, "{}", with_quotes(text, '\'')),
                },
            },
            Element::List(l) => {
                let items: Vec<String> = l.iter().map(|e| e.to_string()).collect();
                write!(f, "[{}]", items.join(","))
            }
            Element::Dict(d) => {
                let items: Vec<String> = d.iter().map(|(k, v)| format!("{k}:{v}")).collect();
                write!(f, "{{{}}}", items.join(","))
            }
        }
    }
}

/// Hydra's `QuotedString.with_quotes`: backslashes before a quote (the closing one included) are
/// doubled and the quote escaped, so that the text reads back unchanged.
fn with_quotes(text: &str, q: char) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push(q);
    let mut run = 0;
    for c in text.chars() {
        if c == '\\' {
            run += 1;
            continue;
        }
        if c == q {
            out.extend(std::iter::repeat_n('\\', run * 2 + 1));
        } else {
            out.extend(std::iter::repeat_n('\\', run));
        }
        run = 0;
        out.push(c);
    }
    out.extend(std::iter::repeat_n('\\', run * 2));
    out.push(q);
    out
}

/// Escape the characters the value lexer treats specially, leaving `${...}` untouched; `None`
/// when a character can be lexed in no unquoted token.
fn escape_unquoted(s: &str) -> Option<String> {
    if s.is_empty() {
        return None; // `k=` is an empty string, but `[a,]` or `{a:}` do not parse
    }
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < chars.len() {
        let interp = lex_interpolation(&chars[i..]);
        if interp > 0 {
            out.extend(&chars[i..i + interp]);
            i += interp;
            continue;
        }
        let c = chars[i];
        if "\\()[]{}:=, \t".contains(c) {
            out.push('\\');
        } else if !(c.is_ascii_alphanumeric() || "_-/+.$%*@?|".contains(c)) {
            return None;
        }
        out.push(c);
        i += 1;
    }
    Some(out)
}

/// What a value or a function argument parses to: one element, or a sweep.
pub(super) enum Parsed {
    Element(Element),
    Sweep(Sweep),
}

impl Parsed {
    pub(super) fn into_element(self) -> Result<Element, String> {
        match self {
            Parsed::Element(e) => Ok(e),
            Parsed::Sweep(_) => Err("a sweep cannot be nested inside another value".into()),
        }
    }
}
