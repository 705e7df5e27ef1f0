//! Resolution of OmegaConf 2.3 interpolations over a tree: `${a.b}`, relative `${.x}`/`${..y}`,
//! string and nested interpolation, keys that pass through other interpolations; detects cycles,
//! references to a parent node and missing keys, and bounds the depth and the work of one
//! resolution (tree/limits.rs). The built-in resolvers are resolvers.rs's; parsing the `${...}`
//! text is grammar's job.
use super::args::type_primitive;
use super::grammar::{is_interpolation, Arg, Interp, Piece, TextParser};
use crate::tree::limits::{MAX_NESTING, MAX_RESOLVE_DEPTH, MAX_RESOLVE_WORK};
use crate::tree::node::{Map, Node};
use std::cell::{Cell, RefCell};

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
    #[error("Interpolation to parent node detected (in '{at}': {expr})\n  fix: an interpolation cannot hold the node that contains it")]
    ParentNode { at: String, expr: String },
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
    #[error("Interpolations nested more than {limit} levels deep (at '{at}')\n  fix: shorten the chain of interpolations that point at interpolations")]
    TooDeep { at: String, limit: usize },
    #[error("Resolving the config produces more than {limit} values (at '{at}'): interpolations copy containers or strings exponentially")]
    TooLarge { at: String, limit: usize },
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

/// Resolve every interpolation in `root` as `OmegaConf.resolve` does (what `--cfg job --resolve`
/// prints): an interpolation whose value is missing (`???`) becomes `???`.
pub fn resolve_tree(root: &Node, ctx: &ResolveContext) -> Result<Node, InterpolationError> {
    Resolver::new(root, ctx).resolve_subtree(root, &[])
}

/// Resolve one value found at `path` (dotted) inside `root`; a missing value is an error.
pub fn resolve_value_at(
    root: &Node,
    path: &str,
    ctx: &ResolveContext,
) -> Result<Node, InterpolationError> {
    let segs: Vec<String> = path.split('.').map(str::to_string).collect();
    let not_found = || InterpolationError::KeyNotFound {
        key: path.to_string(),
        at: path.to_string(),
        expr: path.to_string(),
    };
    let node = root.get_path(path).ok_or_else(not_found)?;
    let r = Resolver::new(root, ctx);
    match node {
        Node::Str(s) if is_interpolation(s) => {
            let (v, src) = r.resolve_string_at(s, &segs)?;
            match (v, src) {
                (Node::Map(_) | Node::List(_), Some(src)) => r.expand_container(&src, &segs),
                (v, _) => Ok(v),
            }
        }
        other => r.resolve_subtree(other, &segs),
    }
}

pub(super) struct Resolver<'a> {
    pub(super) root: &'a Node,
    pub(super) ctx: &'a ResolveContext<'a>,
    /// Strings being resolved (cycle detection), by path.
    stack: RefCell<Vec<String>>,
    /// Containers being copied through an interpolation, by path (cycle detection).
    expanding: RefCell<Vec<String>>,
    depth: Cell<usize>,
    work: Cell<usize>,
}

impl<'a> Resolver<'a> {
    pub(super) fn new(root: &'a Node, ctx: &'a ResolveContext<'a>) -> Self {
        Self {
            root,
            ctx,
            stack: RefCell::new(Vec::new()),
            expanding: RefCell::new(Vec::new()),
            depth: Cell::new(0),
            work: Cell::new(0),
        }
    }

    pub(super) fn path_str(path: &[String]) -> String {
        if path.is_empty() {
            "<root>".into()
        } else {
            path.join(".")
        }
    }

    /// Run `f` one interpolation step deeper, within the depth bound.
    pub(super) fn deeper<T>(
        &self,
        at: &str,
        f: impl FnOnce() -> Result<T, InterpolationError>,
    ) -> Result<T, InterpolationError> {
        if self.depth.get() >= MAX_RESOLVE_DEPTH {
            return Err(InterpolationError::TooDeep {
                at: at.to_string(),
                limit: MAX_RESOLVE_DEPTH,
            });
        }
        self.depth.set(self.depth.get() + 1);
        let r = f();
        self.depth.set(self.depth.get() - 1);
        r
    }

    /// Count produced values against the work bound.
    pub(super) fn spend(&self, units: usize, at: &str) -> Result<(), InterpolationError> {
        self.work.set(self.work.get().saturating_add(units));
        if self.work.get() > MAX_RESOLVE_WORK {
            return Err(InterpolationError::TooLarge {
                at: at.to_string(),
                limit: MAX_RESOLVE_WORK,
            });
        }
        Ok(())
    }

    fn resolve_subtree(&self, node: &Node, path: &[String]) -> Result<Node, InterpolationError> {
        if path.len() > 4 * MAX_NESTING {
            return Err(InterpolationError::TooDeep {
                at: Self::path_str(path),
                limit: 4 * MAX_NESTING,
            });
        }
        self.spend(1, "")?;
        match node {
            Node::Map(m) => {
                let mut out = Map::new();
                let mut p = path.to_vec();
                for (k, v) in m {
                    p.push(k.clone());
                    out.insert(k.clone(), self.resolve_subtree(v, &p)?);
                    p.pop();
                }
                Ok(Node::Map(out))
            }
            Node::List(l) => {
                let mut out = Vec::with_capacity(l.len());
                let mut p = path.to_vec();
                for (i, v) in l.iter().enumerate() {
                    p.push(i.to_string());
                    out.push(self.resolve_subtree(v, &p)?);
                    p.pop();
                }
                Ok(Node::List(out))
            }
            Node::Str(s) if is_interpolation(s) => match self.resolve_string_at(s, path) {
                // OmegaConf.resolve: an interpolation to a missing value becomes missing.
                Err(InterpolationError::Missing { .. }) => Ok(Node::Missing),
                Err(e) => Err(e),
                // A container reached by reference holds interpolations of its own, relative to
                // where it lives.
                Ok((Node::Map(_) | Node::List(_), Some(src))) => self.expand_container(&src, path),
                Ok((other, _)) => Ok(other),
            },
            Node::Str(s) => Ok(missing_or_str(unescape_plain(s))),
            other => Ok(other.clone()),
        }
    }

    /// The container at `src`, resolved, as the value of the node at `at`.
    fn expand_container(&self, src: &[String], at: &[String]) -> Result<Node, InterpolationError> {
        let key = src.join(".");
        {
            let mut exp = self.expanding.borrow_mut();
            if exp.contains(&key) {
                let mut chain = exp.clone();
                chain.push(Self::path_str(at));
                chain.push(key);
                return Err(InterpolationError::Cycle {
                    chain: chain.join(" -> "),
                });
            }
            exp.push(key);
        }
        let target = src
            .iter()
            .try_fold(self.root, |n, k| n.child(k))
            .unwrap_or(&Node::Null);
        let r = self.deeper(&Self::path_str(at), || self.resolve_subtree(target, src));
        self.expanding.borrow_mut().pop();
        r
    }

    /// Resolve the string value stored at `path`. Returns the value and, when the string was a
    /// single node reference, the path of the node it points to.
    pub(super) fn resolve_string_at(
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
        let result = self.deeper(&at, || self.eval_text(s, path));
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
        // Parsing counts too: a string read again at every step of a deep resolution adds up.
        self.spend(chars.len(), &at)?;
        let mut p = TextParser::new(&chars);
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
            let (v, src) = self.eval_interp(interp, parent, s, &at)?;
            if let Some(src) = &src {
                if path.starts_with(src) {
                    return Err(InterpolationError::ParentNode {
                        at: at.clone(),
                        expr: s.to_string(),
                    });
                }
            }
            return Ok((v, src));
        }
        let text = self.concat(&pieces, parent, s, &at)?;
        Ok((missing_or_str(text), None))
    }

    pub(super) fn concat(
        &self,
        pieces: &[Piece],
        parent: &[String],
        expr: &str,
        at: &str,
    ) -> Result<String, InterpolationError> {
        let mut out = String::new();
        for p in pieces {
            let piece = match p {
                Piece::Text(t) => std::borrow::Cow::Borrowed(t.as_str()),
                Piece::Interp(i) => std::borrow::Cow::Owned(
                    self.eval_interp(i, parent, expr, at)?.0.to_python_str(),
                ),
            };
            // Counted as it grows: `${a}${a}…` with a long `a` must stop before it is built.
            self.spend(1 + piece.len() / 16, at)?;
            out.push_str(&piece);
        }
        Ok(out)
    }

    pub(super) fn eval_interp(
        &self,
        interp: &Interp,
        parent: &[String],
        expr: &str,
        at: &str,
    ) -> Result<(Node, Option<Vec<String>>), InterpolationError> {
        self.deeper(at, || match interp {
            Interp::Key { dots, segs } => {
                let mut keys = Vec::new();
                for seg in segs {
                    keys.push(self.concat(seg, parent, expr, at)?);
                }
                let shown = format!("{}{}", ".".repeat(*dots), keys.join("."));
                let mut full: Vec<String> = if *dots == 0 {
                    Vec::new()
                } else {
                    // `${.x}`: sibling; each extra dot goes one level up.
                    let up = dots - 1;
                    if up > parent.len() {
                        return Err(InterpolationError::KeyNotFound {
                            key: shown,
                            at: at.to_string(),
                            expr: expr.to_string(),
                        });
                    }
                    parent[..parent.len() - up].to_vec()
                };
                full.extend(keys.iter().flat_map(|k| k.split('.').map(str::to_string)));
                let key = if *dots == 0 { full.join(".") } else { shown };
                self.select(&full, &key, expr, at)
            }
            Interp::Resolver { name, args } => {
                let name = self.concat(name, parent, expr, at)?;
                let mut values = Vec::new();
                for a in args {
                    values.push(self.eval_arg(a, parent, expr, at)?);
                }
                self.call_resolver(&name, values, parent, expr, at)
                    .map(|v| (v, None))
            }
        })
    }

    pub(super) fn eval_arg(
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
}

/// `\${` in a plain string is the literal text `${`.
pub(super) fn unescape_plain(s: &str) -> String {
    if s.contains("\\${") {
        s.replace("\\${", "${")
    } else {
        s.to_string()
    }
}

/// OmegaConf holds the string `???` as a missing value.
pub(super) fn missing_or_str(s: String) -> Node {
    if s == "???" {
        Node::Missing
    } else {
        Node::Str(s)
    }
}
