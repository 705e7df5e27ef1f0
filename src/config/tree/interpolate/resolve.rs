//! Resolution of OmegaConf 2.3 interpolations over a tree: `${a.b}`, relative `${.x}`/`${..y}`,
//! string and nested interpolation, the resolvers `oc.env`, `oc.select`, `oc.decode`, `now` and
//! `hydra`; detects cycles and missing keys. Parsing the `${...}` text is grammar's job.
use super::grammar::{is_interpolation, type_primitive, Arg, Interp, Piece, TextParser};
use crate::tree::node::{Map, Node};

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

/// `\${` in a plain string is the literal text `${`.
fn unescape_plain(s: &str) -> String {
    if s.contains("\\${") {
        s.replace("\\${", "${")
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::yaml_read as yaml;

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
