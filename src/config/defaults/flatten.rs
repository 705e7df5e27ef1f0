//! The expanded defaults tree flattened into the ordered list of configs to merge (Hydra's
//! `_tree_to_list`): children in order, `_self_` where its config's own content goes, deleted
//! and missing entries left out. Building the tree is list.rs's job.
use super::element::{DefaultKind, InputDefault, ResultDefault};

/// The defaults tree the algorithm builds (`list.rs`) and this module flattens.
pub(super) enum Child {
    Leaf(InputDefault),
    Tree(Tree),
}

pub(super) struct Tree {
    pub(super) node: InputDefault,
    pub(super) children: Option<Vec<Child>>,
}

pub(super) fn tree_to_list(tree: &Tree, parent: Option<&Tree>, out: &mut Vec<ResultDefault>) {
    match &tree.children {
        None => collect(parent, &tree.node, out),
        Some(children) if children.is_empty() => collect(parent, &tree.node, out),
        Some(children) => {
            for c in children {
                match c {
                    Child::Leaf(d) => collect(Some(tree), d, out),
                    Child::Tree(t) => tree_to_list(t, Some(tree), out),
                }
            }
        }
    }
}

fn collect(tree: Option<&Tree>, node: &InputDefault, out: &mut Vec<ResultDefault>) {
    if node.deleted || node.is_missing() {
        return;
    }
    if node.name().is_none() {
        return;
    }
    if node.is_self() {
        let t = tree.expect("_self_ always has a containing config");
        out.push(ResultDefault {
            config_path: t.node.config_path(),
            package: t.node.final_package(true),
            is_self: true,
            primary: t.node.primary,
            override_key: None,
        });
    } else {
        out.push(ResultDefault {
            config_path: node.config_path(),
            package: node.final_package(true),
            is_self: false,
            primary: node.primary,
            override_key: matches!(node.kind, DefaultKind::Group { .. })
                .then(|| node.override_key()),
        });
    }
}
