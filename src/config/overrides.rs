//! Command-line override grammar of Hydra 1.3 (`hydra/grammar/Override{Lexer,Parser}.g4`):
//! `key=value`, `group=option`, `+key=v`, `++key=v`, `~key[=v]`, `group@pkg=option`, typed values,
//! quoted strings with escapes, lists, dicts, sweeps (`a,b`, `choice`, `range`, `glob`) and casts.
//! Parsing only: no file I/O and no knowledge of the config tree.
use super::node::{Map, Node};
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

    fn number(&self) -> Option<f64> {
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
                    write!(f, "{}", super::node::python_float_repr(*x))
                }
            }
            Element::Str { text, quote } => match quote {
                Some(q) => {
                    let escaped = text.replace(*q, &format!("\\{q}"));
                    write!(f, "{q}{escaped}{q}")
                }
                None => write!(f, "{}", escape_unquoted(text)),
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

/// Escape the characters the value lexer treats specially, leaving `${...}` untouched.
fn escape_unquoted(s: &str) -> String {
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
        if "\\()[]{}:=, \t".contains(chars[i]) {
            out.push('\\');
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

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
    Ok((kog.to_string(), pkg.map(str::to_string)))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    POpen,
    Comma,
    PClose,
    BracketOpen,
    BracketClose,
    BraceOpen,
    BraceClose,
    Colon,
    Equal,
    Float,
    Int,
    Bool,
    Null,
    UnquotedChar,
    Id,
    Esc,
    Ws,
    Quoted,
    Interpolation,
}

struct Token {
    kind: Tok,
    text: String,
}

/// Lexer for VALUE_MODE: at each position the longest match wins, ties go to the rule
/// defined first (ANTLR's rule), which the order of `candidates` reproduces.
fn lex(s: &str) -> Result<Vec<Token>, String> {
    let chars: Vec<char> = s.chars().collect();
    let mut pos = 0;
    let mut out = Vec::new();
    while pos < chars.len() {
        let c = &chars[pos..];
        let candidates = [
            (Tok::POpen, punct(c, '(', true, true)),
            (Tok::Comma, punct(c, ',', true, true)),
            (Tok::PClose, punct(c, ')', true, false)),
            (Tok::BracketOpen, punct(c, '[', false, true)),
            (Tok::BracketClose, punct(c, ']', true, false)),
            (Tok::BraceOpen, punct(c, '{', false, true)),
            (Tok::BraceClose, punct(c, '}', true, false)),
            (Tok::Colon, punct(c, ':', true, true)),
            (Tok::Equal, punct(c, '=', true, true)),
            (Tok::Float, lex_float(c)),
            (Tok::Int, lex_int(c)),
            (
                Tok::Bool,
                lex_word_ci(c, "true").max(lex_word_ci(c, "false")),
            ),
            (Tok::Null, lex_word_ci(c, "null")),
            (
                Tok::UnquotedChar,
                usize::from("/-\\+.$%*@?|".contains(c[0])),
            ),
            (Tok::Id, lex_id(c)),
            (Tok::Esc, lex_esc(c)),
            (
                Tok::Ws,
                c.iter().take_while(|x| **x == ' ' || **x == '\t').count(),
            ),
            (Tok::Quoted, lex_quoted(c)),
            (Tok::Interpolation, lex_interpolation(c)),
        ];
        let (kind, len) =
            candidates.iter().fold(
                (Tok::Ws, 0),
                |best, &(k, l)| if l > best.1 { (k, l) } else { best },
            );
        if len == 0 {
            return Err(format!(
                "token recognition error at: '{}' (quote it, or escape it with a backslash)",
                c[0]
            ));
        }
        out.push(Token {
            kind,
            text: c[..len].iter().collect(),
        });
        pos += len;
    }
    Ok(out)
}

fn ws_len(c: &[char]) -> usize {
    c.iter().take_while(|x| **x == ' ' || **x == '\t').count()
}

fn punct(c: &[char], p: char, ws_before: bool, ws_after: bool) -> usize {
    let mut i = if ws_before { ws_len(c) } else { 0 };
    if c.get(i) != Some(&p) {
        return 0;
    }
    i += 1;
    if ws_after {
        i += ws_len(&c[i..]);
    }
    i
}

fn digits_us(c: &[char], start: usize) -> usize {
    // DIGIT (('_')? DIGIT)*  — returns the end index (start if no digit)
    let mut i = start;
    if !c.get(i).is_some_and(char::is_ascii_digit) {
        return start;
    }
    i += 1;
    loop {
        if c.get(i).is_some_and(char::is_ascii_digit) {
            i += 1;
        } else if c.get(i) == Some(&'_') && c.get(i + 1).is_some_and(char::is_ascii_digit) {
            i += 2;
        } else {
            return i;
        }
    }
}

fn int_unsigned(c: &[char], start: usize) -> usize {
    match c.get(start) {
        Some('0') => start + 1,
        Some(d) if d.is_ascii_digit() => digits_us(c, start),
        _ => start,
    }
}

fn point_float(c: &[char], start: usize) -> usize {
    // INT_UNSIGNED '.' | INT_UNSIGNED? '.' DIGIT (('_')? DIGIT)*
    let iu = int_unsigned(c, start);
    if c.get(iu) != Some(&'.') {
        return start;
    }
    let after_dot = iu + 1;
    let frac = digits_us(c, after_dot);
    if frac > after_dot {
        frac
    } else if iu > start {
        after_dot
    } else {
        start
    }
}

pub(crate) fn lex_float(c: &[char]) -> usize {
    let s = usize::from(matches!(c.first(), Some('+' | '-')));
    let pf = point_float(c, s);
    let iu = int_unsigned(c, s);
    let mantissa_end = pf.max(iu);
    let mut exp = s;
    if mantissa_end > s && matches!(c.get(mantissa_end), Some('e' | 'E')) {
        let mut i = mantissa_end + 1;
        if matches!(c.get(i), Some('+' | '-')) {
            i += 1;
        }
        let d = digits_us(c, i);
        if d > i {
            exp = d;
        }
    }
    let special = [lex_word_ci(&c[s..], "inf"), lex_word_ci(&c[s..], "nan")]
        .into_iter()
        .max()
        .unwrap_or(0);
    let special = if special > 0 { s + special } else { 0 };
    let best = if pf > s { pf } else { 0 };
    best.max(if exp > s { exp } else { 0 }).max(special)
}

pub(crate) fn lex_int(c: &[char]) -> usize {
    let s = usize::from(matches!(c.first(), Some('+' | '-')));
    let e = int_unsigned(c, s);
    if e > s {
        e
    } else {
        0
    }
}

pub(crate) fn lex_word_ci(c: &[char], w: &str) -> usize {
    let n = w.chars().count();
    if c.len() >= n
        && c[..n]
            .iter()
            .zip(w.chars())
            .all(|(a, b)| a.eq_ignore_ascii_case(&b))
    {
        n
    } else {
        0
    }
}

fn lex_id(c: &[char]) -> usize {
    if !c
        .first()
        .is_some_and(|x| x.is_ascii_alphabetic() || *x == '_')
    {
        return 0;
    }
    1 + c[1..]
        .iter()
        .take_while(|x| x.is_ascii_alphanumeric() || **x == '_' || **x == '-')
        .count()
}

fn lex_esc(c: &[char]) -> usize {
    let mut i = 0;
    while c.get(i) == Some(&'\\') {
        match c.get(i + 1) {
            Some('\\' | '(' | ')' | '[' | ']' | '{' | '}' | ':' | '=' | ',' | ' ' | '\t') => i += 2,
            _ => break,
        }
    }
    i
}

fn lex_quoted(c: &[char]) -> usize {
    let q = match c.first() {
        Some(q @ ('\'' | '"')) => *q,
        _ => return 0,
    };
    // Ends at the first quote preceded by an even number of backslashes.
    let mut i = 1;
    while i < c.len() {
        if c[i] == q {
            let mut bs = 0;
            while bs < i - 1 && c[i - 1 - bs] == '\\' {
                bs += 1;
            }
            if bs % 2 == 0 {
                return i + 1;
            }
        }
        i += 1;
    }
    0
}

fn lex_interpolation(c: &[char]) -> usize {
    if c.len() < 3 || c[0] != '$' || c[1] != '{' {
        return 0;
    }
    match c[2..].iter().position(|x| *x == '}') {
        Some(0) | None => 0,
        Some(p) => p + 3,
    }
}

/// Hydra's `_unescape_quoted_string`: only backslashes before a quote are escapes.
fn unescape_quoted(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let q = chars[0];
    let inner = &chars[1..chars.len() - 1];
    let mut out = String::new();
    let mut i = 0;
    while i < inner.len() {
        if inner[i] == '\\' {
            let run = inner[i..].iter().take_while(|x| **x == '\\').count();
            let next = inner.get(i + run);
            if next == Some(&q) {
                out.extend(std::iter::repeat_n('\\', run / 2));
                out.push(q);
                i += run + 1;
            } else if next.is_none() {
                out.extend(std::iter::repeat_n('\\', run / 2));
                i += run;
            } else {
                out.extend(std::iter::repeat_n('\\', run));
                i += run;
            }
        } else {
            out.push(inner[i]);
            i += 1;
        }
    }
    out
}

struct ValueParser {
    toks: Vec<Token>,
    pos: usize,
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
            Element::Float(f) => super::node::python_float_repr(f),
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

enum Parsed {
    Element(Element),
    Sweep(Sweep),
}

impl Parsed {
    fn into_element(self) -> Result<Element, String> {
        match self {
            Parsed::Element(e) => Ok(e),
            Parsed::Sweep(_) => Err("a sweep cannot be nested inside another value".into()),
        }
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

pub(crate) fn parse_hydra_float(t: &str) -> f64 {
    let lower = t.to_ascii_lowercase().replace('_', "");
    let (neg, body) = match lower.strip_prefix('-') {
        Some(b) => (true, b.to_string()),
        None => (false, lower.trim_start_matches('+').to_string()),
    };
    let v = match body.as_str() {
        "inf" => f64::INFINITY,
        "nan" => f64::NAN,
        b => b.parse().expect("the lexer only accepts valid floats"),
    };
    if neg {
        -v
    } else {
        v
    }
}

fn eval_function(
    name: &str,
    args: Vec<Parsed>,
    kwargs: Vec<(String, Parsed)>,
) -> Result<Parsed, String> {
    let elems = |v: Vec<Parsed>| -> Result<Vec<Element>, String> {
        v.into_iter().map(Parsed::into_element).collect()
    };
    let kw = |k: &str, kwargs: &[(String, Parsed)]| kwargs.iter().position(|(n, _)| n == k);
    match name {
        "choice" => {
            if !kwargs.is_empty() {
                return Err("choice() takes no keyword arguments".into());
            }
            let items = elems(args)?;
            if items.is_empty() {
                return Err("empty choice is not legal".into());
            }
            Ok(Parsed::Sweep(Sweep::Choice {
                items,
                simple: false,
            }))
        }
        "range" => {
            let mut a = elems(args)?;
            for (k, v) in kwargs {
                let idx = match k.as_str() {
                    "start" => 0,
                    "stop" => 1,
                    "step" => 2,
                    _ => return Err(format!("range() got an unexpected keyword argument '{k}'")),
                };
                while a.len() <= idx {
                    a.push(Element::Null);
                }
                a[idx] = v.into_element()?;
            }
            if a.len() == 1 {
                a.insert(0, Element::Int(0));
            }
            if a.len() == 2 {
                a.push(Element::Int(1));
            }
            if a.len() != 3 {
                return Err("range(start, stop, step=1) takes 1 to 3 arguments".into());
            }
            let all_int = a.iter().all(|e| matches!(e, Element::Int(_)));
            let nums: Vec<f64> = a
                .iter()
                .map(|e| e.number().ok_or("range() arguments must be numbers".to_string()))
                .collect::<Result<_, _>>()?;
            let (start, stop, step) = (nums[0], nums[1], nums[2]);
            if step == 0.0 {
                return Err("range() step must not be zero".into());
            }
            let mut items = Vec::new();
            let mut i = 0usize;
            loop {
                let v = start + step * i as f64;
                if (step > 0.0 && v >= stop) || (step < 0.0 && v <= stop) || i > 1_000_000 {
                    break;
                }
                items.push(if all_int {
                    Element::Int(v as i64)
                } else {
                    Element::Float(v)
                });
                i += 1;
            }
            Ok(Parsed::Sweep(Sweep::Range { items }))
        }
        "glob" => {
            let strs = |e: Element| -> Result<Vec<String>, String> {
                match e {
                    Element::Str { text, .. } => Ok(vec![text]),
                    Element::List(l) => l
                        .into_iter()
                        .map(|x| {
                            x.as_plain_str()
                                .map(str::to_string)
                                .ok_or_else(|| "glob patterns must be strings".to_string())
                        })
                        .collect(),
                    other => Err(format!("glob pattern must be a string, got {other}")),
                }
            };
            let mut a = elems(args)?;
            let mut kwargs = kwargs;
            if let Some(i) = kw("include", &kwargs) {
                a.insert(0, kwargs.remove(i).1.into_element()?);
            }
            let exclude = match kw("exclude", &kwargs) {
                Some(i) => strs(kwargs.remove(i).1.into_element()?)?,
                None if a.len() > 1 => strs(a.remove(1))?,
                None => Vec::new(),
            };
            if a.len() != 1 || !kwargs.is_empty() {
                return Err("glob(include, exclude=[]) takes an include pattern".into());
            }
            Ok(Parsed::Sweep(Sweep::Glob {
                include: strs(a.remove(0))?,
                exclude,
            }))
        }
        "interval" => {
            let a = elems(args)?;
            let nums: Vec<f64> = a.iter().filter_map(Element::number).collect();
            if nums.len() != 2 || a.len() != 2 {
                return Err("interval(start, end) takes two numbers".into());
            }
            Ok(Parsed::Sweep(Sweep::Interval {
                start: nums[0],
                end: nums[1],
            }))
        }
        "sort" => {
            let reverse = match kw("reverse", &kwargs) {
                Some(i) => matches!(kwargs[i].1, Parsed::Element(Element::Bool(true))),
                None => false,
            };
            let sort_items = |mut v: Vec<Element>| -> Vec<Element> {
                v.sort_by(|a, b| match (a.number(), b.number()) {
                    (Some(x), Some(y)) => x.total_cmp(&y),
                    _ => a.to_string().cmp(&b.to_string()),
                });
                if reverse {
                    v.reverse();
                }
                v
            };
            let mut args = args;
            if args.len() == 1 {
                match args.remove(0) {
                    Parsed::Sweep(Sweep::Choice { items, simple }) => {
                        return Ok(Parsed::Sweep(Sweep::Choice {
                            items: sort_items(items),
                            simple,
                        }))
                    }
                    Parsed::Sweep(Sweep::Range { items }) => {
                        return Ok(Parsed::Sweep(Sweep::Range {
                            items: sort_items(items),
                        }))
                    }
                    Parsed::Element(Element::List(l)) => {
                        return Ok(Parsed::Element(Element::List(sort_items(l))))
                    }
                    other => args.push(other),
                }
            }
            Ok(Parsed::Sweep(Sweep::Choice {
                items: sort_items(elems(args)?),
                simple: false,
            }))
        }
        "int" | "float" | "str" | "bool" => {
            if args.len() != 1 || !kwargs.is_empty() {
                return Err(format!("{name}() takes exactly one argument"));
            }
            let cast = |e: Element| cast_element(name, e);
            match args.into_iter().next().expect("one argument") {
                Parsed::Element(e) => Ok(Parsed::Element(cast(e)?)),
                Parsed::Sweep(Sweep::Choice { items, simple }) => Ok(Parsed::Sweep(Sweep::Choice {
                    items: items.into_iter().map(cast).collect::<Result<_, _>>()?,
                    simple,
                })),
                Parsed::Sweep(Sweep::Range { items }) => Ok(Parsed::Sweep(Sweep::Range {
                    items: items.into_iter().map(cast).collect::<Result<_, _>>()?,
                })),
                Parsed::Sweep(other) => Err(format!("cannot cast {other:?}")),
            }
        }
        _ => Err(format!(
            "unknown function '{name}': supported are choice, range, glob, interval, sort, int, float, str, bool"
        )),
    }
}

fn cast_element(to: &str, e: Element) -> Result<Element, String> {
    let bad = |e: &Element| format!("cannot cast '{e}' to {to}");
    Ok(match (to, &e) {
        (_, Element::List(l)) => Element::List(
            l.iter()
                .cloned()
                .map(|x| cast_element(to, x))
                .collect::<Result<_, _>>()?,
        ),
        (_, Element::Dict(d)) => Element::Dict(
            d.iter()
                .map(|(k, v)| Ok((k.clone(), cast_element(to, v.clone())?)))
                .collect::<Result<_, String>>()?,
        ),
        ("int", Element::Int(_)) => e,
        ("int", Element::Float(f)) => Element::Int(f.trunc() as i64),
        ("int", Element::Bool(b)) => Element::Int(i64::from(*b)),
        ("int", Element::Str { text, .. }) => {
            Element::Int(text.trim().parse().map_err(|_| bad(&e))?)
        }
        ("float", Element::Int(i)) => Element::Float(*i as f64),
        ("float", Element::Float(_)) => e,
        ("float", Element::Bool(b)) => Element::Float(f64::from(u8::from(*b))),
        ("float", Element::Str { text, .. }) => {
            Element::Float(text.trim().parse().map_err(|_| bad(&e))?)
        }
        ("str", Element::Str { text, .. }) => Element::Str {
            text: text.clone(),
            quote: None,
        },
        ("str", Element::Null) => Element::Str {
            text: "None".into(),
            quote: None,
        },
        ("str", other) => Element::Str {
            text: match other {
                Element::Bool(b) => if *b { "True" } else { "False" }.to_string(),
                Element::Float(f) => super::node::python_float_repr(*f),
                x => x.to_string(),
            },
            quote: None,
        },
        ("bool", Element::Bool(_)) => e,
        ("bool", Element::Int(i)) => Element::Bool(*i != 0),
        ("bool", Element::Float(f)) => Element::Bool(*f != 0.0),
        ("bool", Element::Str { text, .. }) => match text.to_ascii_lowercase().as_str() {
            "true" => Element::Bool(true),
            "false" => Element::Bool(false),
            _ => return Err(bad(&e)),
        },
        _ => return Err(bad(&e)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn el(s: &str) -> Element {
        match parse_override(&format!("x={s}")).unwrap().value.unwrap() {
            Value::Element(e) => e,
            Value::Sweep(s) => panic!("sweep {s:?}"),
        }
    }

    fn string(s: &str) -> Element {
        Element::Str {
            text: s.into(),
            quote: None,
        }
    }

    #[test]
    fn scalar_types_follow_the_lexer() {
        assert_eq!(el("42"), Element::Int(42));
        assert_eq!(el("-7"), Element::Int(-7));
        assert_eq!(el("1_000"), Element::Int(1000));
        assert_eq!(el("0.25"), Element::Float(0.25));
        assert_eq!(el("1e3"), Element::Float(1000.0));
        assert_eq!(el("-inf"), Element::Float(f64::NEG_INFINITY));
        assert!(matches!(el("nan"), Element::Float(f) if f.is_nan()));
        assert_eq!(el("True"), Element::Bool(true));
        assert_eq!(el("NULL"), Element::Null);
        assert_eq!(el("info"), string("info"));
        assert_eq!(el("cuda:1"), string("cuda:1"));
        assert_eq!(el("1.2.3"), string("1.2.3"));
        assert_eq!(el("/scratch/runs"), string("/scratch/runs"));
        assert_eq!(el("a b "), string("a b"));
        assert_eq!(el("${a.b}"), string("${a.b}"));
        assert_eq!(el("x_${a}"), string("x_${a}"));
    }

    #[test]
    fn quoted_strings_and_escapes() {
        assert_eq!(
            el("'hello world'"),
            Element::Str {
                text: "hello world".into(),
                quote: Some('\'')
            }
        );
        assert_eq!(el(r#""a\"b""#).as_plain_str(), Some("a\"b"));
        assert_eq!(el(r#"'abc\\'"#).as_plain_str(), Some("abc\\"));
        assert_eq!(el(r"a\,b\ c"), string("a,b c"));
        assert_eq!(el("'42'").as_plain_str(), Some("42"));
    }

    #[test]
    fn containers() {
        assert_eq!(
            el("[a, 'b c', 3.5, null]"),
            Element::List(vec![
                string("a"),
                Element::Str {
                    text: "b c".into(),
                    quote: Some('\'')
                },
                Element::Float(3.5),
                Element::Null
            ])
        );
        assert_eq!(
            el("{a:1,b:[x,y]}"),
            Element::Dict(vec![
                ("a".into(), Element::Int(1)),
                ("b".into(), Element::List(vec![string("x"), string("y")]))
            ])
        );
        assert_eq!(el("[]"), Element::List(vec![]));
    }

    #[test]
    fn prefixes_keys_and_packages() {
        let o = parse_override("++infer.top_p=0.95").unwrap();
        assert_eq!(o.kind, OverrideKind::ForceAdd);
        assert_eq!(o.key_or_group, "infer.top_p");
        let o = parse_override("~profiling@pipeline.ncu").unwrap();
        assert_eq!(o.kind, OverrideKind::Delete);
        assert_eq!(o.package.as_deref(), Some("pipeline.ncu"));
        assert_eq!(o.value, None);
        let o = parse_override("hydra/launcher=basic").unwrap();
        assert!(o.is_hydra_override());
        let o = parse_override("x=").unwrap();
        assert_eq!(o.element(), Some(&string("")));
        assert_eq!(
            parse_override("runtime.batch_sizes.1=16")
                .unwrap()
                .key_or_group,
            "runtime.batch_sizes.1"
        );
    }

    #[test]
    fn sweeps() {
        let o = parse_override("a=1,2,3").unwrap();
        assert_eq!(
            o.value,
            Some(Value::Sweep(Sweep::Choice {
                items: vec![Element::Int(1), Element::Int(2), Element::Int(3)],
                simple: true
            }))
        );
        let o = parse_override("a=range(1,7,2)").unwrap();
        assert_eq!(
            o.value,
            Some(Value::Sweep(Sweep::Range {
                items: vec![Element::Int(1), Element::Int(3), Element::Int(5)]
            }))
        );
        let o = parse_override("m=glob(*,exclude=tiny*)").unwrap();
        assert_eq!(
            o.value,
            Some(Value::Sweep(Sweep::Glob {
                include: vec!["*".into()],
                exclude: vec!["tiny*".into()]
            }))
        );
        let o = parse_override("a=choice([1,2],[3])").unwrap();
        assert!(matches!(
            o.value,
            Some(Value::Sweep(Sweep::Choice { simple: false, .. }))
        ));
        assert_eq!(
            parse_override("a=int(3.7)").unwrap().element(),
            Some(&Element::Int(3))
        );
    }

    #[test]
    fn malformed_overrides_are_errors() {
        assert!(parse_override("novalue").is_err());
        assert!(parse_override("=3").is_err());
        assert!(parse_override("a=[1,2").is_err());
        assert!(parse_override("a=b=c").is_err());
        assert!(parse_override("a b=1").is_err());
        assert!(parse_override("a=nofunc(1)").is_err());
    }

    #[test]
    fn elements_round_trip_through_display() {
        for s in [
            "[a,'b c',3.5,null]",
            "{a:1,b:[x,y]}",
            "1000.0",
            "'x,y'",
            r"a\,b",
        ] {
            let e = el(s);
            assert_eq!(el(&e.to_string()), e, "{s}");
        }
    }
}
