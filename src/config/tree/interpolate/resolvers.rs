//! OmegaConf's and Hydra's built-in resolvers, as llmprof supports them: `oc.env`, `oc.select`,
//! `oc.decode`, `now` and `hydra`, applied to already-evaluated arguments. Walking the tree is
//! resolve.rs's and reference.rs's job.
use super::grammar::TextParser;
use super::resolve::{resolve_value_at, InterpolationError, ResolveContext, Resolver};
use crate::tree::node::{Map, Node};

impl Resolver<'_> {
    pub(super) fn call_resolver(
        &self,
        name: &str,
        args: Vec<Node>,
        parent: &[String],
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
                let default = || Ok(args.get(1).cloned().unwrap_or(Node::Null));
                let dots = key.chars().take_while(|c| *c == '.').count();
                let mut full: Vec<String> = if dots == 0 {
                    Vec::new()
                } else if dots - 1 > parent.len() {
                    return default();
                } else {
                    parent[..parent.len() - (dots - 1)].to_vec()
                };
                full.extend(key[dots..].split('.').map(str::to_string));
                match self.select(&full, &key, expr, at) {
                    Ok((v, _)) => Ok(v),
                    Err(
                        InterpolationError::KeyNotFound { .. } | InterpolationError::Missing { .. },
                    ) => default(),
                    Err(e) => Err(e),
                }
            }
            "oc.decode" => match args.first() {
                Some(Node::Null) => Ok(Node::Null),
                Some(Node::Str(s)) => {
                    let chars: Vec<char> = s.chars().collect();
                    self.spend(chars.len(), at)?;
                    let mut p = TextParser::new(&chars);
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
                self.spend(node_count(hydra), at)?;
                let mut wrapped = Map::new();
                wrapped.insert("hydra".into(), hydra.clone());
                let wrapped = Node::Map(wrapped);
                // Hydra's resolver is OmegaConf.select: a missing value reads as None.
                match resolve_value_at(&wrapped, &format!("hydra.{key}"), &sub) {
                    Ok(Node::Missing) | Err(InterpolationError::Missing { .. }) => Ok(Node::Null),
                    other => other,
                }
            }
            other => Err(InterpolationError::UnknownResolver {
                name: other.to_string(),
                at: at.to_string(),
            }),
        }
    }
}

/// Nodes in a tree (what copying it costs).
pub(super) fn node_count(n: &Node) -> usize {
    match n {
        Node::Map(m) => 1 + m.values().map(node_count).sum::<usize>(),
        Node::List(l) => 1 + l.iter().map(node_count).sum::<usize>(),
        _ => 1,
    }
}
