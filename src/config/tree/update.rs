//! `OmegaConf.update(cfg, key, value, merge=True[, force_add])` on a config in struct mode, which
//! is how Hydra applies `key=value`, `+key=value` and `++key=value`: the walk down the dotted
//! key, where a value that is not a container is replaced by `{}` (struct mode then refuses to
//! go on unless forced), and the final merge or assignment. Merging itself is merge.rs's.
use super::merge::{at_mut, merge_at, MergeError};
use super::node::Node;

/// Why an update failed; the loader words each as Hydra does.
#[derive(Debug, PartialEq)]
pub enum UpdateError {
    /// A key is missing and struct mode refuses to add it: Hydra's "Could not override".
    KeyNotFound,
    /// The merge of a container value failed (dict with list, a new key inside it).
    Merge(MergeError),
    /// A list index that does not exist (OmegaConf's ConfigIndexError).
    IndexOutOfRange(String),
    /// A list indexed by something that is not an integer (Python's own error text).
    NotAnIndex(String),
}

impl From<MergeError> for UpdateError {
    fn from(e: MergeError) -> Self {
        match e {
            MergeError::NewKey(_) => UpdateError::KeyNotFound,
            other => UpdateError::Merge(other),
        }
    }
}

/// OmegaConf.update(root, key, value, merge=True, force_add) with `root` in struct mode.
pub fn update(root: &mut Node, key: &str, value: Node, force_add: bool) -> Result<(), UpdateError> {
    let segs: Vec<String> = key.split('.').map(str::to_string).collect();
    let (last, parents) = segs.split_last().expect("split always yields one item");
    let mut path: Vec<String> = Vec::new();
    for seg in parents {
        let node = at_mut(root, &path).expect("the walk only enters nodes it has seen");
        let slot = match node {
            Node::Map(m) => {
                if !m.contains_key(seg) && !force_add {
                    return Err(UpdateError::KeyNotFound);
                }
                m.entry(seg.clone()).or_insert(Node::Null)
            }
            Node::List(l) => {
                let idx = list_index(seg)?;
                let len = l.len();
                l.get_mut(idx).ok_or_else(|| {
                    UpdateError::IndexOutOfRange(format!("{seg} (the list has {len} items)"))
                })?
            }
            _ => unreachable!("the walk only enters containers"),
        };
        if !matches!(slot, Node::Map(_) | Node::List(_)) {
            // `_select_one` found no container: OmegaConf puts `{}` there. Struct mode then
            // refuses every key below it unless the update is forced.
            *slot = Node::empty_map();
            if !force_add {
                return Err(UpdateError::KeyNotFound);
            }
        }
        path.push(seg.clone());
    }
    let node = at_mut(root, &path).expect("the walk only enters nodes it has seen");
    let slot_exists = match node {
        Node::Map(m) => m.contains_key(last),
        Node::List(l) => {
            let idx = list_index(last)?;
            if idx >= l.len() {
                return Err(UpdateError::IndexOutOfRange(format!(
                    "{last} (the list has {} items)",
                    l.len()
                )));
            }
            true
        }
        _ => unreachable!("the walk only enters containers"),
    };
    if !slot_exists && !force_add {
        return Err(UpdateError::KeyNotFound);
    }
    let is_container = |n: &Node| matches!(n, Node::Map(_) | Node::List(_));
    path.push(last.clone());
    let existing_is_container = at_mut(root, &path).is_some_and(|n| is_container(n));
    if is_container(&value) && existing_is_container {
        // OmegaConf merges a container into a container (`node.merge_with(value)`).
        return Ok(merge_at(root, &mut path, &value, force_add)?);
    }
    path.pop();
    match at_mut(root, &path).expect("seen above") {
        Node::Map(m) => {
            m.insert(last.clone(), value);
        }
        Node::List(l) => {
            let idx = list_index(last)?;
            l[idx] = value;
        }
        _ => unreachable!("the walk only enters containers"),
    }
    Ok(())
}

fn list_index(seg: &str) -> Result<usize, UpdateError> {
    seg.parse::<usize>().map_err(|_| {
        UpdateError::NotAnIndex(format!("invalid literal for int() with base 10: '{seg}'"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::yaml_read::parse;

    fn updated(cfg: &str, key: &str, value: &str, force: bool) -> Result<Node, UpdateError> {
        let mut a = parse(cfg).unwrap();
        update(&mut a, key, parse(value).unwrap(), force).map(|()| a)
    }

    #[test]
    fn struct_mode_and_list_indices() {
        let cfg = "r: {b: [1, 2, 4], env: {A: x}}\n";
        let a = updated(cfg, "r.b.1", "16", false).unwrap();
        assert_eq!(a.get_path("r.b.1"), Some(&Node::Int(16)));
        assert_eq!(
            updated(cfg, "r.nope", "1", false),
            Err(UpdateError::KeyNotFound)
        );
        let a = updated(cfg, "r.new.deep", "1", true).unwrap();
        assert_eq!(a.get_path("r.new.deep"), Some(&Node::Int(1)));
        let a = updated(cfg, "r.env", "{B: y}", false);
        assert_eq!(a, Err(UpdateError::KeyNotFound), "new key inside a merge");
        let a = updated(cfg, "r.env", "{B: y}", true).unwrap();
        assert_eq!(a.get_path("r.env.A"), Some(&Node::Str("x".into())));
        assert!(matches!(
            updated(cfg, "r.b.9", "1", false),
            Err(UpdateError::IndexOutOfRange(_))
        ));
        assert!(matches!(
            updated(cfg, "r.b.x", "1", false),
            Err(UpdateError::NotAnIndex(_))
        ));
    }

    #[test]
    fn a_key_below_a_scalar_does_not_exist_unless_forced() {
        let cfg = "m: {name: n, none: null, miss: ???, i: '${m}'}\n";
        for key in ["m.name.x", "m.none.x", "m.miss.x", "m.i.x", "m.nope.x"] {
            assert_eq!(
                updated(cfg, key, "{a: 1}", false),
                Err(UpdateError::KeyNotFound),
                "{key}"
            );
        }
        let a = updated(cfg, "m.name.x", "1", true).unwrap();
        assert_eq!(a.get_path("m.name"), Some(&parse("{x: 1}").unwrap()));
    }

    #[test]
    fn containers_merge_or_replace_as_omegaconf_does() {
        let cfg = "m: {l: [1, 2], d: {a: 1}, s: 3}\n";
        assert_eq!(
            updated(cfg, "m.d", "[1]", false),
            Err(UpdateError::Merge(MergeError::DictWithList))
        );
        assert_eq!(
            updated(cfg, "m.l", "{a: 1}", false),
            Err(UpdateError::Merge(MergeError::DictWithList))
        );
        let a = updated(cfg, "m.s", "{a: 1}", false).unwrap();
        assert_eq!(a.get_path("m.s.a"), Some(&Node::Int(1)));
        let a = updated(cfg, "m.d", "5", false).unwrap();
        assert_eq!(a.get_path("m.d"), Some(&Node::Int(5)));
        let a = updated(cfg, "m.l", "[3]", false).unwrap();
        assert_eq!(a.get_path("m.l"), Some(&parse("[3]").unwrap()));
    }
}
