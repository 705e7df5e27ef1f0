//! OmegaConf 2.3 interpolation: `${a.b}`, relative `${.x}`/`${..y}`, string interpolation,
//! nested `${a.${b}}`, escapes (`\${`), and the resolvers `oc.env`, `oc.select`, `oc.decode`,
//! `now` and `hydra`. Resolves a whole tree; detects cycles and missing keys.
use super::node::{Map, Node};
use super::overrides::{lex_float, lex_int, lex_word_ci, parse_hydra_float};

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum InterpolationError {
    #[error("Interpolation key '{key}' not found (in '{at}': {expr})\n  fix: set '{key}' in a config file, or add it with +{key}=<value>")]
    KeyNotFound {
        key: String,
        at: String,
        expr: String,
    },
    #[error("Cyclic interpolation: {chain}\n  fix: one of these keys must hold a value instead of an interpolation")]
    Cycle { chain: String },
    #[error("Missing mandatory value: '{key}' is ??? (referenced from '{at}')\n  fix: set it on the command line, e.g. {key}=<value>")]
    Missing { key: String, at: String },
    #[error("Unsupported interpolation type or resolver '{name}' (in '{at}')\n  supported resolvers: oc.env, oc.select, oc.decode, now, hydra")]
    UnknownResolver { name: String, at: String },
    #[error("Error resolving '{expr}' at '{at}': {reason}")]
    Resolver {
        expr: String,
        at: String,
        reason: String,
    },
    #[error("Grammar error in '{expr}' at '{at}': {reason}")]
    Grammar {
        expr: String,
        at: String,
        reason: String,
    },
}

/// What the resolvers read from outside the config.
pub struct ResolveContext<'a> {
    /// Hydra's own config node, for `${hydra:...}`.
    pub hydra: Option<&'a Node>,
    /// The run's timestamp, for `${now:...}` (one value for the whole run, like Hydra's cache).
    pub now: chrono::DateTime<chrono::Local>,
    /// Environment lookup (tests inject their own).
    pub env: &'a dyn Fn(&str) -> Option<String>,
}

/// True when a string value contains an (unescaped) interpolation.
pub fn is_interpolation(s: &str) -> bool {
    let b = s.as_bytes();
    (0..b.len().saturating_sub(1))
        .any(|i| b[i] == b'$' && b[i + 1] == b'{' && (i == 0 || b[i - 1] != b'\\'))
}

/// Resolve every interpolation in `root` (OmegaConf `to_container(resolve=True)`).
pub fn resolve_tree(root: &Node, ctx: &ResolveContext) -> Result<Node, InterpolationError> {
    let r = Resolver {
        root,
        ctx,
        stack: std::cell::RefCell::new(Vec::new()),
    };
    r.resolve_subtree(root, &[])
}

/// Resolve one value found at `path` (dotted) inside `root`.
pub fn resolve_value_at(
    root: &Node,
    path: &str,
    ctx: &ResolveContext,
) -> Result<Node, InterpolationError> {
    let r = Resolver {
        root,
        ctx,
        stack: std::cell::RefCell::new(Vec::new()),
    };
    let segs: Vec<String> = path.split('.').map(str::to_string).collect();
    let node = root
        .get_path(path)
        .ok_or_else(|| InterpolationError::KeyNotFound {
            key: path.to_string(),
            at: path.to_string(),
            expr: path.to_string(),
        })?;
    r.resolve_subtree(node, &segs)
}

struct Resolver<'a> {
    root: &'a Node,
    ctx: &'a ResolveContext<'a>,
    stack: std::cell::RefCell<Vec<String>>,
}

/// Parsed pieces of a string with interpolations.
#[derive(Debug, Clone)]
enum Piece {
    Text(String),
    Interp(Interp),
}

#[derive(Debug, Clone)]
enum Interp {
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
enum Arg {
    /// Unquoted primitive: its raw pieces (typed when it is one token).
    Primitive(Vec<Piece>),
    Quoted(Vec<Piece>),
    List(Vec<Arg>),
    Dict(Vec<(String, Arg)>),
}

impl<'a> Resolver<'a> {
    fn path_str(path: &[String]) -> String {
        if path.is_empty() {
            "<root>".into()
        } else {
            path.join(".")
        }
    }

    fn resolve_subtree(&self, node: &Node, path: &[String]) -> Result<Node, InterpolationError> {
        match node {
            Node::Map(m) => {
                let mut out = Map::new();
                for (k, v) in m {
                    let mut p = path.to_vec();
                    p.push(k.clone());
                    out.insert(k.clone(), self.resolve_subtree(v, &p)?);
                }
                Ok(Node::Map(out))
            }
            Node::List(l) => l
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let mut p = path.to_vec();
                    p.push(i.to_string());
                    self.resolve_subtree(v, &p)
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Node::List),
            Node::Str(s) if is_interpolation(s) => {
                let v = self.resolve_string_at(s, path)?;
                // A resolved container may hold interpolations of its own, relative to where it lives.
                match v {
                    (Node::Map(_) | Node::List(_), Some(src)) => {
                        let target = self
                            .root
                            .get_path(&src.join("."))
                            .cloned()
                            .unwrap_or(Node::Null);
                        self.resolve_subtree(&target, &src)
                    }
                    (other, _) => Ok(other),
                }
            }
            Node::Str(s) => Ok(Node::Str(unescape_plain(s))),
            other => Ok(other.clone()),
        }
    }

    /// Resolve the string value stored at `path`. Returns the value and, when the string was a
    /// single node reference, the path of the node it points to.
    fn resolve_string_at(
        &self,
        s: &str,
        path: &[String],
    ) -> Result<(Node, Option<Vec<String>>), InterpolationError> {
        let at = Self::path_str(path);
        {
            let mut st = self.stack.borrow_mut();
            if st.contains(&at) {
                let mut chain = st.clone();
                chain.push(at.clone());
                return Err(InterpolationError::Cycle {
                    chain: chain.join(" -> "),
                });
            }
            st.push(at.clone());
        }
        let result = self.eval_text(s, path);
        self.stack.borrow_mut().pop();
        result
    }

    fn eval_text(
        &self,
        s: &str,
        path: &[String],
    ) -> Result<(Node, Option<Vec<String>>), InterpolationError> {
        let at = Self::path_str(path);
        let grammar = |reason: String| InterpolationError::Grammar {
            expr: s.to_string(),
            at: at.clone(),
            reason,
        };
        let chars: Vec<char> = s.chars().collect();
        let mut p = TextParser { c: &chars, i: 0 };
        let pieces = p.text(&[]).map_err(grammar)?;
        if p.i != chars.len() {
            return Err(grammar("unexpected '}'".into()));
        }
        let parent: &[String] = if path.is_empty() {
            path
        } else {
            &path[..path.len() - 1]
        };
        if let [Piece::Interp(interp)] = pieces.as_slice() {
            return self.eval_interp(interp, parent, s, &at);
        }
        Ok((Node::Str(self.concat(&pieces, parent, s, &at)?), None))
    }

    fn concat(
        &self,
        pieces: &[Piece],
        parent: &[String],
        expr: &str,
        at: &str,
    ) -> Result<String, InterpolationError> {
        let mut out = String::new();
        for p in pieces {
            match p {
                Piece::Text(t) => out.push_str(t),
                Piece::Interp(i) => {
                    out.push_str(&self.eval_interp(i, parent, expr, at)?.0.to_python_str())
                }
            }
        }
        Ok(out)
    }

    fn eval_interp(
        &self,
        interp: &Interp,
        parent: &[String],
        expr: &str,
        at: &str,
    ) -> Result<(Node, Option<Vec<String>>), InterpolationError> {
        match interp {
            Interp::Key { dots, segs } => {
                let mut keys = Vec::new();
                for seg in segs {
                    keys.push(self.concat(seg, parent, expr, at)?);
                }
                let mut full: Vec<String> = if *dots == 0 {
                    Vec::new()
                } else {
                    // `${.x}`: sibling; each extra dot goes one level up.
                    let up = dots - 1;
                    if up > parent.len() {
                        return Err(InterpolationError::KeyNotFound {
                            key: format!("{}{}", ".".repeat(*dots), keys.join(".")),
                            at: at.to_string(),
                            expr: expr.to_string(),
                        });
                    }
                    parent[..parent.len() - up].to_vec()
                };
                full.extend(
                    keys.iter()
                        .flat_map(|k| k.split('.').map(str::to_string))
                        .collect::<Vec<_>>(),
                );
                let key = full.join(".");
                let node =
                    self.root
                        .get_path(&key)
                        .ok_or_else(|| InterpolationError::KeyNotFound {
                            key: if *dots == 0 {
                                key.clone()
                            } else {
                                format!("{}{}", ".".repeat(*dots), keys.join("."))
                            },
                            at: at.to_string(),
                            expr: expr.to_string(),
                        })?;
                match node {
                    Node::Missing => Err(InterpolationError::Missing {
                        key,
                        at: at.to_string(),
                    }),
                    Node::Str(s) if is_interpolation(s) => {
                        let (v, src) = self.resolve_string_at(s, &full)?;
                        Ok((v, src.or(Some(full))))
                    }
                    Node::Str(s) => Ok((Node::Str(unescape_plain(s)), Some(full))),
                    other => Ok((other.clone(), Some(full))),
                }
            }
            Interp::Resolver { name, args } => {
                let name = self.concat(name, parent, expr, at)?;
                let mut values = Vec::new();
                for a in args {
                    values.push(self.eval_arg(a, parent, expr, at)?);
                }
                self.call_resolver(&name, values, expr, at)
                    .map(|v| (v, None))
            }
        }
    }

    fn eval_arg(
        &self,
        arg: &Arg,
        parent: &[String],
        expr: &str,
        at: &str,
    ) -> Result<Node, InterpolationError> {
        match arg {
            Arg::Quoted(pieces) => Ok(Node::Str(self.concat(pieces, parent, expr, at)?)),
            Arg::List(items) => items
                .iter()
                .map(|a| self.eval_arg(a, parent, expr, at))
                .collect::<Result<Vec<_>, _>>()
                .map(Node::List),
            Arg::Dict(items) => {
                let mut m = Map::new();
                for (k, v) in items {
                    m.insert(k.clone(), self.eval_arg(v, parent, expr, at)?);
                }
                Ok(Node::Map(m))
            }
            Arg::Primitive(pieces) => {
                if let [Piece::Interp(i)] = pieces.as_slice() {
                    return Ok(self.eval_interp(i, parent, expr, at)?.0);
                }
                if pieces.iter().all(|p| matches!(p, Piece::Text(_))) {
                    let text = self.concat(pieces, parent, expr, at)?;
                    return Ok(type_primitive(&text));
                }
                Ok(Node::Str(self.concat(pieces, parent, expr, at)?))
            }
        }
    }

    fn call_resolver(
        &self,
        name: &str,
        args: Vec<Node>,
        expr: &str,
        at: &str,
    ) -> Result<Node, InterpolationError> {
        let fail = |reason: String| InterpolationError::Resolver {
            expr: expr.to_string(),
            at: at.to_string(),
            reason,
        };
        match name {
            "oc.env" => {
                let key = match args.first() {
                    Some(Node::Str(k)) => k.clone(),
                    _ => {
                        return Err(fail(
                            "oc.env needs the variable name as first argument".into(),
                        ))
                    }
                };
                match (self.ctx.env)(&key) {
                    Some(v) => Ok(Node::Str(v)),
                    None => match args.get(1) {
                        Some(Node::Null) => Ok(Node::Null),
                        Some(d) => Ok(Node::Str(d.to_python_str())),
                        None => Err(fail(format!(
                            "Environment variable '{key}' not found\n  fix: export {key}=..., or give a default: ${{oc.env:{key},<default>}}"
                        ))),
                    },
                }
            }
            "oc.select" => {
                let key = match args.first() {
                    Some(Node::Str(k)) => k.clone(),
                    _ => return Err(fail("oc.select needs a key".into())),
                };
                match self.root.get_path(&key) {
                    Some(Node::Str(s)) if is_interpolation(s) => {
                        let segs: Vec<String> = key.split('.').map(str::to_string).collect();
                        Ok(self.resolve_string_at(s, &segs)?.0)
                    }
                    Some(Node::Missing) | None => Ok(args.get(1).cloned().unwrap_or(Node::Null)),
                    Some(v) => Ok(v.clone()),
                }
            }
            "oc.decode" => match args.first() {
                Some(Node::Null) => Ok(Node::Null),
                Some(Node::Str(s)) => {
                    let chars: Vec<char> = s.chars().collect();
                    let mut p = TextParser { c: &chars, i: 0 };
                    let arg = p.element(&[]).map_err(&fail)?;
                    self.eval_arg(&arg, &[], expr, at)
                }
                _ => Err(fail(
                    "oc.decode can only take strings or None as input".into(),
                )),
            },
            "now" => {
                let fmt = match args.first() {
                    Some(Node::Str(f)) => f.clone(),
                    Some(other) => other.to_python_str(),
                    None => {
                        return Err(fail(
                            "now needs a strftime pattern, e.g. ${now:%Y-%m-%d}".into(),
                        ))
                    }
                };
                use std::fmt::Write as _;
                let mut out = String::new();
                write!(out, "{}", self.ctx.now.format(&fmt))
                    .map_err(|_| fail(format!("invalid strftime pattern '{fmt}'")))?;
                Ok(Node::Str(out))
            }
            "hydra" => {
                let key = match args.first() {
                    Some(Node::Str(k)) => k.clone(),
                    _ => return Err(fail("hydra needs a key, e.g. ${hydra:runtime.cwd}".into())),
                };
                let hydra = self
                    .ctx
                    .hydra
                    .ok_or_else(|| fail("the hydra config is not available here".into()))?;
                if hydra.get_path(&key).is_none() {
                    return Err(fail(format!(
                        "key 'hydra.{key}' not found in the hydra config"
                    )));
                }
                // Values inside the hydra node may interpolate too; resolve them against it.
                let sub = ResolveContext {
                    hydra: None,
                    now: self.ctx.now,
                    env: self.ctx.env,
                };
                let mut wrapped = Map::new();
                wrapped.insert("hydra".into(), hydra.clone());
                let wrapped = Node::Map(wrapped);
                resolve_value_at(&wrapped, &format!("hydra.{key}"), &sub)
            }
            other => Err(InterpolationError::UnknownResolver {
                name: other.to_string(),
                at: at.to_string(),
            }),
        }
    }
}

/// Type an unquoted resolver argument the way OmegaConf's grammar does (single token only).
fn type_primitive(text: &str) -> Node {
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

/// `\${` in a plain string is the literal text `${`.
fn unescape_plain(s: &str) -> String {
    if s.contains("\\${") {
        s.replace("\\${", "${")
    } else {
        s.to_string()
    }
}

struct TextParser<'c> {
    c: &'c [char],
    i: usize,
}

impl TextParser<'_> {
    fn peek(&self) -> Option<char> {
        self.c.get(self.i).copied()
    }

    fn starts(&self, s: &str) -> bool {
        let n = s.chars().count();
        self.c.len() >= self.i + n && self.c[self.i..self.i + n].iter().copied().eq(s.chars())
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.i += 1;
        }
    }

    /// Top-level (or quoted) text until one of `stop` (not consumed).
    fn text(&mut self, stop: &[char]) -> Result<Vec<Piece>, String> {
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
    fn push_interpolation(
        &mut self,
        pieces: &mut Vec<Piece>,
        buf: &mut String,
    ) -> Result<(), String> {
        if !buf.is_empty() {
            pieces.push(Piece::Text(std::mem::take(buf)));
        }
        pieces.push(Piece::Interp(self.interpolation()?));
        Ok(())
    }

    fn interpolation(&mut self) -> Result<Interp, String> {
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
                pieces.push(Piece::Interp(self.interpolation()?));
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

    /// `element (',' element?)*` until `close` (not consumed). Empty elements are ''.
    fn sequence(&mut self, close: char) -> Result<Vec<Arg>, String> {
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

    fn element(&mut self, close: &[char]) -> Result<Arg, String> {
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
                let items = self.sequence(']')?;
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
                    let v = self.element(&[',', '}'])?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml;

    fn ctx_env(k: &str) -> Option<String> {
        (k == "SET_VAR").then(|| "from_env".to_string())
    }

    fn resolve(text: &str) -> Result<Node, InterpolationError> {
        let root = yaml::parse(text).unwrap();
        let hydra = yaml::parse("runtime: {cwd: /work}\njob: {name: llmprof}\n").unwrap();
        let ctx = ResolveContext {
            hydra: Some(&hydra),
            now: chrono::Local::now(),
            env: &ctx_env,
        };
        resolve_tree(&root, &ctx)
    }

    #[test]
    fn absolute_relative_and_string_interpolation() {
        let n = resolve(
            "m: {len: 8192, name: ocr}\ni: {max: 512, b: {t: '${..max}'}, s: '${.max}'}\nr: '${m.name}_t${i.max}'\nq: '${i.max}'\n",
        )
        .unwrap();
        assert_eq!(n.get_path("i.b.t"), Some(&Node::Int(512)));
        assert_eq!(n.get_path("i.s"), Some(&Node::Int(512)));
        assert_eq!(n.get_path("r"), Some(&Node::Str("ocr_t512".into())));
        assert_eq!(n.get_path("q"), Some(&Node::Int(512)));
    }

    #[test]
    fn env_defaults_and_nested() {
        let n = resolve(
            "a: '${oc.env:UNSET_X,/tmp/c}'\nb: '${oc.env:SET_VAR,nobody}'\nc: '${oc.env:UNSET_X,null}'\nk: name\nd: {name: z}\ne: '${d.${k}}'\nf: '${oc.env:UNSET_X,${k}}'\n",
        )
        .unwrap();
        assert_eq!(n.get_path("a"), Some(&Node::Str("/tmp/c".into())));
        assert_eq!(n.get_path("b"), Some(&Node::Str("from_env".into())));
        assert_eq!(n.get_path("c"), Some(&Node::Null));
        assert_eq!(n.get_path("e"), Some(&Node::Str("z".into())));
        assert_eq!(n.get_path("f"), Some(&Node::Str("name".into())));
    }

    #[test]
    fn hydra_and_now_resolvers() {
        let n = resolve("c: '${hydra:runtime.cwd}/data'\nj: '${hydra:job.name}'\nd: '${now:%Y}'\n")
            .unwrap();
        assert_eq!(n.get_path("c"), Some(&Node::Str("/work/data".into())));
        assert_eq!(n.get_path("j"), Some(&Node::Str("llmprof".into())));
        let year = chrono::Local::now().format("%Y").to_string();
        assert_eq!(n.get_path("d"), Some(&Node::Str(year)));
    }

    #[test]
    fn errors_missing_cycle_and_escape() {
        assert!(matches!(
            resolve("a: '${b.c}'\n"),
            Err(InterpolationError::KeyNotFound { .. })
        ));
        assert!(matches!(
            resolve("a: '${b}'\nb: '${a}'\n"),
            Err(InterpolationError::Cycle { .. })
        ));
        assert!(matches!(
            resolve("a: ???\nb: '${a}'\n"),
            Err(InterpolationError::Missing { .. })
        ));
        assert!(matches!(
            resolve("a: '${nope:1}'\n"),
            Err(InterpolationError::UnknownResolver { .. })
        ));
        let n = resolve("a: '\\${b}'\n").unwrap();
        assert_eq!(n.get_path("a"), Some(&Node::Str("${b}".into())));
    }

    #[test]
    fn containers_and_typed_resolver_args() {
        let n = resolve("a: {x: 1, y: '${.x}'}\nb: '${a}'\nc: '${oc.select:a.x,5}'\nd: '${oc.select:a.none,5}'\ne: '${oc.decode:\"[1, 2]\"}'\n").unwrap();
        assert_eq!(n.get_path("b.y"), Some(&Node::Int(1)));
        assert_eq!(n.get_path("c"), Some(&Node::Int(1)));
        assert_eq!(n.get_path("d"), Some(&Node::Int(5)));
        assert_eq!(
            n.get_path("e"),
            Some(&Node::List(vec![Node::Int(1), Node::Int(2)]))
        );
    }
}
