//! Lexer of Hydra 1.3's override values (`hydra/grammar/OverrideLexer.g4`, VALUE_MODE): tokens by
//! longest match, ties to the rule defined first, and quoted-string unescaping. The number and word
//! rules shared with OmegaConf's interpolation grammar live in tree::lex. No parsing.
use crate::tree::lex::{lex_float, lex_int, lex_word_ci};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tok {
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

pub(super) struct Token {
    pub(super) kind: Tok,
    pub(super) text: String,
}

/// Lexer for VALUE_MODE: at each position the longest match wins, ties go to the rule
/// defined first (ANTLR's rule), which the order of `candidates` reproduces.
pub(super) fn lex(s: &str) -> Result<Vec<Token>, String> {
    let chars: Vec<char> = s.chars().collect();
    // Where the next `}` is from each position: `${` then finds its end in constant time (a
    // search per `${` made `${${${…` quadratic).
    let mut next_close = vec![usize::MAX; chars.len() + 1];
    for i in (0..chars.len()).rev() {
        next_close[i] = if chars[i] == '}' {
            i
        } else {
            next_close[i + 1]
        };
    }
    let mut pos = 0;
    let mut out = Vec::new();
    while pos < chars.len() {
        let c = &chars[pos..];
        let interpolation = if c.len() >= 3 && c[0] == '$' && c[1] == '{' {
            match next_close[pos + 2] {
                usize::MAX => 0,
                j if j == pos + 2 => 0,
                j => j - pos + 1,
            }
        } else {
            0
        };
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
            (Tok::Interpolation, interpolation),
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

pub(super) fn lex_interpolation(c: &[char]) -> usize {
    if c.len() < 3 || c[0] != '$' || c[1] != '{' {
        return 0;
    }
    match c[2..].iter().position(|x| *x == '}') {
        Some(0) | None => 0,
        Some(p) => p + 3,
    }
}

/// Hydra's `_unescape_quoted_string`: only backslashes before a quote are escapes.
pub(super) fn unescape_quoted(text: &str) -> String {
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
