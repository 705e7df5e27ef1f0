//! The grammar of OmegaConf 2.3 interpolations (`omegaconf/grammar/OmegaConfGrammarParser.g4`):
//! a string → text pieces and `${key}` / `${resolver:args}` nodes, escapes, and the typing of an
//! unquoted resolver argument. Parsing only: nothing is looked up or resolved here.
use crate::tree::limits::{too_deep, MAX_NESTING};
use std::collections::HashMap;
use std::rc::Rc;

/// True when a string value contains an (unescaped) interpolation.
pub fn is_interpolation(s: &str) -> bool {
    let b = s.as_bytes();
    (0..b.len().saturating_sub(1))
        .any(|i| b[i] == b'$' && b[i + 1] == b'{' && (i == 0 || b[i - 1] != b'\\'))
}

/// Parsed pieces of a string with interpolations. An interpolation is shared (`Rc`): the parser
/// keeps each one it parsed by position, and hands the same one out again when it backtracks.
#[derive(Debug, Clone)]
pub(super) enum Piece {
    Text(String),
    Interp(Rc<Interp>),
}

#[derive(Debug, Clone)]
pub(super) enum Interp {
    /// Leading dots (relative depth) and key segments, each a concatenation of pieces.
    Key {
        dots: usize,
        segs: Vec<Vec<Piece>>,
    },
    Resolver {
        name: Vec<Piece>,
        args: Vec<Arg>,
    },
}

#[derive(Debug, Clone)]
pub(super) enum Arg {
    /// Unquoted primitive: its raw pieces (typed when it is one token).
    Primitive(Vec<Piece>),
    Quoted(Vec<Piece>),
    List(Vec<Arg>),
    Dict(Vec<(String, Arg)>),
}

pub(super) struct TextParser<'c> {
    pub(super) c: &'c [char],
    pub(super) i: usize,
    /// Nesting of `${`, `[` and `{` at the cursor (bounded: the parser recurses on it).
    depth: usize,
    /// `${...}` parsed at each position, and where it ended: trying a resolver name before a key
    /// parses a nested `${` twice, which without this is exponential in the nesting.
    memo: HashMap<usize, (Result<Rc<Interp>, String>, usize)>,
}

impl<'c> TextParser<'c> {
    pub(super) fn new(c: &'c [char]) -> Self {
        Self {
            c,
            i: 0,
            depth: 0,
            memo: HashMap::new(),
        }
    }

    /// Run `f` one nesting level deeper, refusing to go past the bound.
    pub(super) fn nested<T>(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<T, String>,
    ) -> Result<T, String> {
        if self.depth >= MAX_NESTING {
            return Err(too_deep("the interpolation", MAX_NESTING));
        }
        self.depth += 1;
        let r = f(self);
        self.depth -= 1;
        r
    }

    pub(super) fn peek(&self) -> Option<char> {
        self.c.get(self.i).copied()
    }

    pub(super) fn starts(&self, s: &str) -> bool {
        let n = s.chars().count();
        self.c.len() >= self.i + n && self.c[self.i..self.i + n].iter().copied().eq(s.chars())
    }

    pub(super) fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.i += 1;
        }
    }

    /// Top-level (or quoted) text until one of `stop` (not consumed).
    pub(super) fn text(&mut self, stop: &[char]) -> Result<Vec<Piece>, String> {
        let mut pieces = Vec::new();
        let mut buf = String::new();
        while let Some(ch) = self.peek() {
            if stop.contains(&ch) {
                break;
            }
            if ch == '\\' {
                // ESC_BACKSLASH* '\${'  → halve the backslashes, literal `${`
                let run = self.c[self.i..].iter().take_while(|x| **x == '\\').count();
                let after = self.i + run;
                if self.c.get(after) == Some(&'$') && self.c.get(after + 1) == Some(&'{') {
                    buf.extend(std::iter::repeat_n('\\', run / 2));
                    if run % 2 == 1 {
                        buf.push_str("${");
                        self.i = after + 2;
                    } else {
                        self.i = after;
                    }
                    continue;
                }
                if let Some(q) = stop.iter().find(|q| **q == '\'' || **q == '"') {
                    if self.c.get(after) == Some(q) {
                        buf.extend(std::iter::repeat_n('\\', run / 2));
                        if run % 2 == 1 {
                            buf.push(*q);
                            self.i = after + 1;
                        } else {
                            self.i = after;
                        }
                        continue;
                    }
                }
                buf.extend(std::iter::repeat_n('\\', run));
                self.i = after;
                continue;
            }
            if self.starts("${") {
                self.push_interpolation(&mut pieces, &mut buf)?;
                continue;
            }
            buf.push(ch);
            self.i += 1;
        }
        if !buf.is_empty() {
            pieces.push(Piece::Text(buf));
        }
        Ok(pieces)
    }

    /// Flush pending text, then parse the `${...}` at the cursor into `pieces`.
    pub(super) fn push_interpolation(
        &mut self,
        pieces: &mut Vec<Piece>,
        buf: &mut String,
    ) -> Result<(), String> {
        if !buf.is_empty() {
            pieces.push(Piece::Text(std::mem::take(buf)));
        }
        pieces.push(Piece::Interp(self.nested(Self::interpolation)?));
        Ok(())
    }

    fn interpolation(&mut self) -> Result<Rc<Interp>, String> {
        let start = self.i;
        if let Some((r, end)) = self.memo.get(&start) {
            self.i = *end;
            return r.clone();
        }
        let r = self.interpolation_here().map(Rc::new);
        self.memo.insert(start, (r.clone(), self.i));
        r
    }

    fn interpolation_here(&mut self) -> Result<Interp, String> {
        self.i += 2; // ${
        self.skip_ws();
        // Resolver: name (ID or interpolation, dotted) followed by ':'.
        let save = self.i;
        if let Some(name) = self.resolver_name()? {
            self.skip_ws();
            if self.peek() == Some(':') {
                self.i += 1;
                self.skip_ws();
                let args = self.sequence('}')?;
                self.skip_ws();
                if self.peek() != Some('}') {
                    return Err("missing '}' at the end of a resolver call".into());
                }
                self.i += 1;
                return Ok(Interp::Resolver { name, args });
            }
        }
        self.i = save;
        let mut dots = 0;
        while self.peek() == Some('.') {
            dots += 1;
            self.i += 1;
        }
        let mut segs: Vec<Vec<Piece>> = Vec::new();
        loop {
            match self.peek() {
                Some('[') => {
                    self.i += 1;
                    segs.push(self.key_seg(&[']'])?);
                    if self.peek() != Some(']') {
                        return Err("missing ']'".into());
                    }
                    self.i += 1;
                }
                Some(_) => {
                    let seg = self.key_seg(&['.', '}', '['])?;
                    if seg.is_empty() {
                        return Err(format!("empty key in interpolation at position {}", self.i));
                    }
                    segs.push(seg);
                }
                None => return Err("missing '}'".into()),
            }
            self.skip_ws();
            match self.peek() {
                Some('.') => self.i += 1,
                Some('[') => {}
                Some('}') => {
                    self.i += 1;
                    break;
                }
                Some(c) => return Err(format!("unexpected '{c}' in interpolation key")),
                None => return Err("missing '}'".into()),
            }
        }
        if segs.is_empty() {
            return Err("empty interpolation".into());
        }
        Ok(Interp::Key { dots, segs })
    }

    fn key_seg(&mut self, stop: &[char]) -> Result<Vec<Piece>, String> {
        let mut pieces = Vec::new();
        let mut buf = String::new();
        while let Some(ch) = self.peek() {
            if stop.contains(&ch) || ch == '}' || ch == ' ' || ch == '\t' {
                break;
            }
            if self.starts("${") {
                self.push_interpolation(&mut pieces, &mut buf)?;
                continue;
            }
            if "\\{()'\":".contains(ch) {
                return Err(format!("invalid character '{ch}' in interpolation key"));
            }
            buf.push(ch);
            self.i += 1;
        }
        if !buf.is_empty() {
            pieces.push(Piece::Text(buf));
        }
        Ok(pieces)
    }

    fn resolver_name(&mut self) -> Result<Option<Vec<Piece>>, String> {
        let mut pieces = Vec::new();
        loop {
            if self.starts("${") {
                pieces.push(Piece::Interp(self.nested(Self::interpolation)?));
            } else {
                let start = self.i;
                if !self
                    .peek()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                {
                    return Ok(None);
                }
                while self
                    .peek()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                {
                    self.i += 1;
                }
                pieces.push(Piece::Text(self.c[start..self.i].iter().collect()));
            }
            if self.peek() == Some('.') {
                self.i += 1;
                pieces.push(Piece::Text(".".into()));
            } else {
                return Ok(Some(pieces));
            }
        }
    }
}
