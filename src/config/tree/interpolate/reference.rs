//! Finding nodes by key: the walk of `${a.b.c}` through the tree (OmegaConf's select, which
//! resolves the interpolations it meets on the way), and the container a `${...}` names, which
//! merging needs (OmegaConf copies it before merging into it). No resolvers here.
use super::grammar::{is_interpolation, Interp, Piece, TextParser};
use super::resolve::{missing_or_str, unescape_plain, InterpolationError, Resolver};
use super::resolvers::node_count;
use crate::tree::limits::MAX_RESOLVE_DEPTH;
use crate::tree::node::Node;

/// The node at `path` (map keys, list indices).
pub(super) fn node_at<'a>(root: &'a Node, path: &[String]) -> Option<&'a Node> {
    path.iter().try_fold(root, |n, k| n.child(k))
}

/// The container that the string `s`, stored in the map at `parent`, names when it is a plain
/// reference (`${a.b}`, `${..x}`), following references to references. Resolver calls and
/// string interpolations name no container here (OmegaConf would resolve them; a merge then
/// replaces the value, which is what this answer leads to).
pub fn container_reference<'a>(root: &'a Node, parent: &[String], s: &str) -> Option<&'a Node> {
    let mut parent = parent.to_vec();
    let mut text = s.to_string();
    for _ in 0..MAX_RESOLVE_DEPTH {
        if !is_interpolation(&text) {
            return None;
        }
        let chars: Vec<char> = text.chars().collect();
        let mut p = TextParser::new(&chars);
        let pieces = p.text(&[]).ok()?;
        if p.i != chars.len() {
            return None;
        }
        let [Piece::Interp(interp)] = pieces.as_slice() else {
            return None;
        };
        let Interp::Key { dots, segs } = interp.as_ref() else {
            return None;
        };
        let mut full: Vec<String> = if *dots == 0 {
            Vec::new()
        } else {
            let up = dots - 1;
            if up > parent.len() {
                return None;
            }
            parent[..parent.len() - up].to_vec()
        };
        for seg in segs {
            let [Piece::Text(t)] = seg.as_slice() else {
                return None;
            };
            full.extend(t.split('.').map(str::to_string));
        }
        match node_at(root, &full)? {
            n @ (Node::Map(_) | Node::List(_)) => return Some(n),
            Node::Str(next) => {
                text = next.clone();
                full.pop();
                parent = full;
            }
            _ => return None,
        }
    }
    None
}

impl Resolver<'_> {
    /// The value at the absolute path `full`, going through interpolations met on the way (as
    /// OmegaConf's select does). Returns the value and the path where it lives, if in the tree.
    pub(super) fn select(
        &self,
        full: &[String],
        key: &str,
        expr: &str,
        at: &str,
    ) -> Result<(Node, Option<Vec<String>>), InterpolationError> {
        let not_found = || InterpolationError::KeyNotFound {
            key: key.to_string(),
            at: at.to_string(),
            expr: expr.to_string(),
        };
        let missing = |upto: &[String]| InterpolationError::Missing {
            key: upto.join("."),
            at: at.to_string(),
        };
        let mut cur = Cur::Tree(self.root, Vec::new());
        for (i, seg) in full.iter().enumerate() {
            // An interpolation on the way is resolved first, as OmegaConf's select does.
            if let Cur::Tree(Node::Str(s), l) = &cur {
                if is_interpolation(s) {
                    let (v, src) = self.resolve_string_at(s, l)?;
                    cur = match src.and_then(|p| node_at(self.root, &p).map(|n| (n, p))) {
                        Some((n, p)) => Cur::Tree(n, p),
                        None => Cur::Value(v),
                    };
                }
            }
            cur = match cur {
                Cur::Tree(Node::Missing, _) | Cur::Value(Node::Missing) => {
                    return Err(missing(&full[..i]))
                }
                Cur::Tree(n, mut l) => {
                    let c = n.child(seg).ok_or_else(not_found)?;
                    l.push(seg.clone());
                    Cur::Tree(c, l)
                }
                Cur::Value(v) => Cur::Value(v.child(seg).cloned().ok_or_else(not_found)?),
            };
        }
        match cur {
            Cur::Tree(Node::Missing, _) | Cur::Value(Node::Missing) => Err(missing(full)),
            Cur::Tree(Node::Str(s), l) if is_interpolation(s) => {
                let (v, src) = self.resolve_string_at(s, &l)?;
                Ok((v, src.or(Some(l))))
            }
            Cur::Tree(Node::Str(s), l) => Ok((missing_or_str(unescape_plain(s)), Some(l))),
            Cur::Tree(other, l) => {
                // A container is copied for each reference to it: the copies count as work.
                if matches!(other, Node::Map(_) | Node::List(_)) {
                    self.spend(node_count(other), at)?;
                }
                Ok((other.clone(), Some(l)))
            }
            Cur::Value(v) => Ok((v, None)),
        }
    }
}

/// Where a key walk stands: a node of the tree (with its path), or a value a resolver made.
enum Cur<'r> {
    Tree(&'r Node, Vec<String>),
    Value(Node),
}
