//! OmegaConf merge and update rules: dicts merge key by key, lists and scalars are replaced,
//! a `???` in the source never replaces a value; `update` walks a dotted key (list indices
//! allowed) and refuses unknown keys unless asked to add them (Hydra's struct mode).
use super::node::{Map, Node};

/// Merge `src` into `dest` (later wins).
pub fn merge_into(dest: &mut Node, src: &Node) {
    match (dest, src) {
        (Node::Map(d), Node::Map(s)) => {
            for (k, v) in s {
                match d.get_mut(k) {
                    Some(existing) => {
                        if matches!(v, Node::Missing) {
                            continue;
                        }
                        if matches!((&*existing, v), (Node::Map(_), Node::Map(_))) {
                            merge_into(existing, v);
                        } else {
                            *existing = v.clone();
                        }
                    }
                    None => {
                        d.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (d, s) => {
            if !matches!(s, Node::Missing) {
                *d = s.clone();
            }
        }
    }
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

#[derive(Debug, PartialEq)]
pub enum UpdateError {
    /// A key on the path does not exist and adding was not allowed.
    KeyNotFound,
    /// A key on the path is a scalar (or a list given a non-index key).
    NotAContainer(String),
    IndexOutOfRange(String),
}

/// OmegaConf.update(cfg, key, value, merge=True[, force_add]).
pub fn update(root: &mut Node, key: &str, value: Node, force_add: bool) -> Result<(), UpdateError> {
    let segs: Vec<&str> = key.split('.').collect();
    let (last, parents) = segs.split_last().expect("split always yields one item");
    let mut node = root;
    for (i, seg) in parents.iter().enumerate() {
        let here = segs[..=i].join(".");
        node = match node {
            Node::Map(m) => {
                if !m.contains_key(*seg) {
                    if !force_add {
                        return Err(UpdateError::KeyNotFound);
                    }
                    m.insert(seg.to_string(), Node::empty_map());
                }
                let child = m.get_mut(*seg).expect("inserted above");
                if matches!(child, Node::Null) && force_add {
                    *child = Node::empty_map();
                }
                child
            }
            Node::List(l) => {
                let idx: usize = seg
                    .parse()
                    .map_err(|_| UpdateError::NotAContainer(here.clone()))?;
                l.get_mut(idx).ok_or(UpdateError::IndexOutOfRange(here))?
            }
            _ => return Err(UpdateError::NotAContainer(segs[..i].join("."))),
        };
    }
    match node {
        Node::Map(m) => match m.get_mut(*last) {
            Some(existing) => {
                if matches!((&*existing, &value), (Node::Map(_), Node::Map(_))) {
                    merge_into(existing, &value);
                } else {
                    *existing = value;
                }
                Ok(())
            }
            None if force_add => {
                m.insert(last.to_string(), value);
                Ok(())
            }
            None => Err(UpdateError::KeyNotFound),
        },
        Node::List(l) => {
            let idx: usize = last
                .parse()
                .map_err(|_| UpdateError::NotAContainer(parents.join(".")))?;
            let slot = l
                .get_mut(idx)
                .ok_or(UpdateError::IndexOutOfRange(key.to_string()))?;
            *slot = value;
            Ok(())
        }
        _ => Err(UpdateError::NotAContainer(parents.join("."))),
    }
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

    #[test]
    fn dicts_merge_and_lists_replace() {
        let mut a = parse("env: {A: '1', B: '2'}\nargs: [a, b]\nx: 1\n").unwrap();
        merge_into(
            &mut a,
            &parse("env: {B: '3'}\nargs: [c]\nx: ???\n").unwrap(),
        );
        assert_eq!(
            a,
            parse("env: {A: '1', B: '3'}\nargs: [c]\nx: 1\n").unwrap()
        );
    }

    #[test]
    fn update_respects_struct_mode_and_list_indices() {
        let mut a = parse("r: {b: [1, 2, 4], env: {A: x}}\n").unwrap();
        update(&mut a, "r.b.1", Node::Int(16), false).unwrap();
        assert_eq!(a.get_path("r.b.1"), Some(&Node::Int(16)));
        assert_eq!(
            update(&mut a, "r.nope", Node::Int(1), false),
            Err(UpdateError::KeyNotFound)
        );
        update(&mut a, "r.new.deep", Node::Int(1), true).unwrap();
        assert_eq!(a.get_path("r.new.deep"), Some(&Node::Int(1)));
        update(&mut a, "r.env", parse("{B: y}").unwrap(), false).unwrap();
        assert_eq!(a.get_path("r.env.A"), Some(&Node::Str("x".into())));
        assert!(matches!(
            update(&mut a, "r.b.9", Node::Int(1), false),
            Err(UpdateError::IndexOutOfRange(_))
        ));
    }

    #[test]
    fn embedding_nests_under_the_package() {
        let n = embed_at_package(&parse("a: 1").unwrap(), "pipeline.nsys");
        assert_eq!(n.get_path("pipeline.nsys.a"), Some(&Node::Int(1)));
    }
}
