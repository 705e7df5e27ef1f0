//! OmegaConf 2.3 merge rules (`BaseContainer._map_merge`/`_list_merge`): dicts merge key by key,
//! lists are replaced, a `???` in the source never replaces a value, a dict never merges with a
//! list ("Cannot merge DictConfig with ListConfig"), and a destination key that interpolates a
//! container is first replaced by a copy of that container. `update` (OmegaConf.update in struct
//! mode, as Hydra applies `key=value`) lives in update.rs.
use super::interpolate::container_reference;
use super::node::{Map, Node};

/// A merge OmegaConf refuses.
#[derive(Debug, Clone, PartialEq)]
pub enum MergeError {
    /// A dict met a list (either way round): OmegaConf's ConfigTypeError.
    DictWithList,
    /// A key the destination does not have, while new keys are refused (struct mode): OmegaConf's
    /// ConfigKeyError. Holds the dotted path of the key.
    NewKey(String),
}

impl std::fmt::Display for MergeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            // OmegaConf formats the error at the root of the merge: no key, object type dict.
            MergeError::DictWithList => write!(
                f,
                "Cannot merge DictConfig with ListConfig\n    full_key: \n    object_type=dict"
            ),
            MergeError::NewKey(k) => write!(f, "Key '{k}' is not in struct"),
        }
    }
}

impl MergeError {
    /// The OmegaConf exception class, as Hydra names it in its messages.
    pub fn class_name(&self) -> &'static str {
        match self {
            MergeError::DictWithList => "ConfigTypeError",
            MergeError::NewKey(_) => "ConfigKeyError",
        }
    }
}

/// Merge `src` into the whole config `root` (`root.merge_with(src)`; later wins).
pub fn merge_into(root: &mut Node, src: &Node) -> Result<(), MergeError> {
    merge_at(root, &mut Vec::new(), src, true)
}

/// Merge `src` into the node at `path` (map keys or list indices) inside `root`; `new_keys`
/// false refuses keys the destination lacks (struct mode).
pub(super) fn merge_at(
    root: &mut Node,
    path: &mut Vec<String>,
    src: &Node,
    new_keys: bool,
) -> Result<(), MergeError> {
    let Some(dest) = at_mut(root, path) else {
        return Ok(());
    };
    match (dest, src) {
        (Node::Map(_), Node::Map(s)) => merge_map(root, path, s, new_keys),
        (Node::List(d), Node::List(s)) => {
            *d = s.clone();
            Ok(())
        }
        (Node::Map(_), Node::List(_)) | (Node::List(_), Node::Map(_)) => {
            Err(MergeError::DictWithList)
        }
        (_, Node::Missing) => Ok(()),
        (d, s) => {
            *d = s.clone();
            Ok(())
        }
    }
}

fn merge_map(
    root: &mut Node,
    path: &mut Vec<String>,
    src: &Map,
    new_keys: bool,
) -> Result<(), MergeError> {
    for (k, v) in src {
        // A destination value `${...}` naming a container becomes a copy of it first.
        let copy = match at(root, path)
            .and_then(|d| d.as_map())
            .and_then(|m| m.get(k))
        {
            Some(Node::Str(s)) => container_reference(root, path, s).cloned(),
            _ => None,
        };
        let Some(Node::Map(dest)) = at_mut(root, path) else {
            return Ok(());
        };
        if let Some(c) = copy {
            dest.insert(k.clone(), c);
        }
        let Some(existing) = dest.get_mut(k) else {
            if !new_keys {
                let mut full = path.clone();
                full.push(k.clone());
                return Err(MergeError::NewKey(full.join(".")));
            }
            dest.insert(k.clone(), v.clone());
            continue;
        };
        match (&*existing, v) {
            (_, Node::Missing) => {}
            (Node::Map(_), Node::Map(_)) => {
                path.push(k.clone());
                let r = merge_at(root, path, v, new_keys);
                path.pop();
                r?;
            }
            (Node::Map(_), Node::List(_)) | (Node::List(_), Node::Map(_)) => {
                return Err(MergeError::DictWithList)
            }
            _ => *existing = v.clone(),
        }
    }
    Ok(())
}

/// The node at `path` (map keys, list indices).
pub(super) fn at<'a>(root: &'a Node, path: &[String]) -> Option<&'a Node> {
    path.iter().try_fold(root, |n, k| n.child(k))
}

pub(super) fn at_mut<'a>(root: &'a mut Node, path: &[String]) -> Option<&'a mut Node> {
    path.iter().try_fold(root, |n, k| n.child_mut(k))
}

/// Wrap `config` under a dotted package path (`a.b` → `{a: {b: config}}`).
pub fn embed_at_package(config: &Node, package: &str) -> Node {
    if package.is_empty() {
        return config.clone();
    }
    package.rsplit('.').fold(config.clone(), |inner, key| {
        let mut m = Map::new();
        m.insert(key.to_string(), inner);
        Node::Map(m)
    })
}

/// Remove the node at a dotted key; returns it if it existed.
pub fn delete(root: &mut Node, key: &str) -> Option<Node> {
    let (parent, last) = match key.rfind('.') {
        Some(i) => (&key[..i], &key[i + 1..]),
        None => ("", key),
    };
    match root.get_path_mut(parent)? {
        Node::Map(m) => m.shift_remove(last),
        Node::List(l) => {
            let idx: usize = last.parse().ok()?;
            (idx < l.len()).then(|| l.remove(idx))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::yaml_read::parse;

    fn merged(a: &str, b: &str) -> Result<Node, MergeError> {
        let mut a = parse(a).unwrap();
        merge_into(&mut a, &parse(b).unwrap()).map(|()| a)
    }

    #[test]
    fn dicts_merge_and_lists_replace() {
        assert_eq!(
            merged(
                "env: {A: '1', B: '2'}\nargs: [a, b]\nx: 1\n",
                "env: {B: '3'}\nargs: [c]\nx: ???\n"
            ),
            Ok(parse("env: {A: '1', B: '3'}\nargs: [c]\nx: 1\n").unwrap())
        );
    }

    #[test]
    fn a_dict_never_merges_with_a_list_but_replaces_scalars() {
        assert_eq!(merged("a: [1]", "a: {x: 1}"), Err(MergeError::DictWithList));
        assert_eq!(merged("a: {x: 1}", "a: [1]"), Err(MergeError::DictWithList));
        assert_eq!(merged("a: {x: 1}", "a: 5"), Ok(parse("a: 5").unwrap()));
        assert_eq!(merged("a: 5", "a: {x: 1}"), Ok(parse("a: {x: 1}").unwrap()));
        assert_eq!(merged("a: null", "a: [1]"), Ok(parse("a: [1]").unwrap()));
        let err = MergeError::DictWithList.to_string();
        assert!(err.starts_with("Cannot merge DictConfig with ListConfig\n"));
    }

    #[test]
    fn an_interpolated_container_is_copied_before_merging() {
        // OmegaConf dereferences `b` to a copy of `a` (as merged so far), then merges into it.
        assert_eq!(
            merged(
                "a: {x: 1}\nb: ${a}\nc: ${a.x}\n",
                "a: {y: 2}\nb: {z: 3}\nc: {w: 4}\n"
            ),
            Ok(parse("a: {x: 1, y: 2}\nb: {x: 1, y: 2, z: 3}\nc: {w: 4}\n").unwrap())
        );
        assert_eq!(
            merged("a: [1]\nb: ${a}\n", "b: {z: 3}"),
            Err(MergeError::DictWithList)
        );
        assert_eq!(
            merged("a: {x: 1}\nb: ${a}\n", "b: ???"),
            Ok(parse("a: {x: 1}\nb: {x: 1}\n").unwrap())
        );
    }

    #[test]
    fn struct_mode_refuses_new_keys_at_any_depth() {
        let mut a = parse("m: {o: {a: 1}}").unwrap();
        let src = parse("o: {b: 2}").unwrap();
        let r = merge_at(&mut a, &mut vec!["m".into()], &src, false);
        assert_eq!(r, Err(MergeError::NewKey("m.o.b".into())));
    }

    #[test]
    fn embedding_nests_under_the_package() {
        let n = embed_at_package(&parse("a: 1").unwrap(), "pipeline.nsys");
        assert_eq!(n.get_path("pipeline.nsys.a"), Some(&Node::Int(1)));
    }
}
