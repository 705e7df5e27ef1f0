//! Modules: the parts of a model's network (a decoder layer and its attention, MLP or MoE
//! sub-modules, lm_head, sampling; a vision block), marked below the stage regions. The same
//! modules run under prefill, a decode step or a vision stage, so they form their own tree; a
//! kernel's key is (stage region, module path, layer index). Modules are never timed: they label
//! work (Kineto user scopes, NVTX ranges, a CUDA graph's capture record) for the module breakdown.
//! Each family declares its modules as data; measurement and reports see only the path strings.

/// One module kind. An indexed module (a decoder layer, a vision block) repeats with an index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Module {
    name: &'static str,
    parent: Option<&'static str>,
    indexed: bool,
    /// Opens inside whichever module needs it (the collectives): no declared parent.
    anywhere: bool,
}

impl Module {
    /// A top-level module (e.g. `lm_head`).
    pub const fn root(name: &'static str) -> Self {
        Module {
            name,
            parent: None,
            indexed: false,
            anywhere: false,
        }
    }

    /// A module that opens inside whichever module needs it, or at the top (the tensor-parallel
    /// collectives: after attention, after the MLP, in the embedding and the logits).
    pub const fn anywhere(name: &'static str) -> Self {
        Module {
            name,
            parent: None,
            indexed: false,
            anywhere: true,
        }
    }

    /// A module nested inside `parent` (e.g. `qkv` inside `attention`).
    pub const fn within(name: &'static str, parent: Module) -> Self {
        Module {
            name,
            parent: Some(parent.name),
            indexed: false,
            anywhere: false,
        }
    }

    /// A module that repeats with an index (a decoder layer), top level or inside `parent`.
    pub const fn indexed(name: &'static str, parent: Option<Module>) -> Self {
        Module {
            name,
            parent: match parent {
                Some(p) => Some(p.name),
                None => None,
            },
            indexed: true,
            anywhere: false,
        }
    }

    pub fn name(&self) -> &'static str {
        self.name
    }

    pub fn parent_name(&self) -> Option<&'static str> {
        self.parent
    }

    pub fn is_indexed(&self) -> bool {
        self.indexed
    }

    /// Whether the module may open inside any module ([`Module::anywhere`]).
    pub fn nests_anywhere(&self) -> bool {
        self.anywhere
    }
}

/// Where a piece of work ran: the open modules joined by dots (`layer.attention.qkv`) and the
/// index of the indexed module on the way (the layer), if any.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct ModulePath {
    pub kind: String,
    pub index: Option<u32>,
}

/// The engine's work between decode steps: the n-gram ban, the argmax, EOS bookkeeping and the
/// next tokens' upload (outside `decode_step`, so outside any captured step).
pub const SAMPLING: Module = Module::root("sampling");

/// A tensor-parallel rank's collectives (the all-reduce after attention and after the MLP, the
/// vocabulary-parallel embedding's sum, the logits' gather), inside the module that needs them
/// (`layer.attention.communication`, `layer.mlp.communication`, ...): their kernels, and with
/// them the time a rank waits for the slowest of its peers.
pub const COMMUNICATION: Module = Module::anywhere("communication");

/// The modules the engine marks whatever the model (a family lists them with its own).
pub const ENGINE_MODULES: &[Module] = &[SAMPLING, COMMUNICATION];

/// What starts the name of a module's Kineto user scope or NVTX range.
pub const SCOPE_PREFIX: &str = "module:";

impl ModulePath {
    /// The path of the open modules `stack`, outermost first (each with its index when indexed).
    /// `None` for an empty stack.
    pub fn of_stack(stack: &[(Module, Option<u32>)]) -> Option<Self> {
        if stack.is_empty() {
            return None;
        }
        let kind = stack
            .iter()
            .map(|(m, _)| m.name)
            .collect::<Vec<_>>()
            .join(".");
        let index = stack.iter().find_map(|(_, i)| *i);
        Some(ModulePath { kind, index })
    }

    /// The scope name: `module:layer[3].attention.qkv`, `module:lm_head`; the index follows the
    /// first part of the path (the indexed module is the outermost one that repeats).
    pub fn scope_name(&self) -> String {
        let (head, rest) = match self.kind.split_once('.') {
            Some((h, r)) => (h, Some(r)),
            None => (self.kind.as_str(), None),
        };
        let mut s = format!("{SCOPE_PREFIX}{head}");
        if let Some(i) = self.index {
            s.push_str(&format!("[{i}]"));
        }
        if let Some(r) = rest {
            s.push('.');
            s.push_str(r);
        }
        s
    }

    /// The path a scope name spells, or `None` when `name` is not a module scope.
    pub fn parse_scope(name: &str) -> Option<Self> {
        let body = name.strip_prefix(SCOPE_PREFIX)?;
        let (head, rest) = match body.split_once('.') {
            Some((h, r)) => (h, Some(r)),
            None => (body, None),
        };
        let (head, index) = match head.split_once('[') {
            Some((h, i)) => (h, Some(i.strip_suffix(']')?.parse().ok()?)),
            None => (head, None),
        };
        if head.is_empty() || rest.is_some_and(|r| r.is_empty() || r.contains(['[', ']'])) {
            return None;
        }
        let kind = match rest {
            Some(r) => format!("{head}.{r}"),
            None => head.to_string(),
        };
        Some(ModulePath { kind, index })
    }
}

/// True when `name` is a module's scope (not a stage region's).
pub fn is_module_scope(name: &str) -> bool {
    name.starts_with(SCOPE_PREFIX)
}

/// Checks a family's module lists: unique names, parents declared before their children, no
/// indexed module inside another indexed one (a path carries one index).
pub fn check_modules(lists: &[&[Module]]) -> Result<(), String> {
    let all: Vec<Module> = lists.iter().flat_map(|l| l.iter().copied()).collect();
    for (i, m) in all.iter().enumerate() {
        if all[..i].iter().any(|q| q.name == m.name) {
            return Err(format!("module '{}' is declared twice", m.name));
        }
        let mut parent = m.parent;
        let mut seen_indexed = false;
        while let Some(p) = parent {
            let Some(q) = all[..i].iter().find(|q| q.name == p) else {
                return Err(format!(
                    "module '{}' is nested in '{p}', which is not declared before it",
                    m.name
                ));
            };
            seen_indexed |= q.indexed;
            parent = q.parent;
        }
        if m.indexed && seen_indexed {
            return Err(format!(
                "module '{}' is indexed inside an indexed module (a path carries one index)",
                m.name
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const LAYER: Module = Module::indexed("layer", None);
    const ATTENTION: Module = Module::within("attention", LAYER);
    const QKV: Module = Module::within("qkv", ATTENTION);
    const LM_HEAD: Module = Module::root("lm_head");

    #[test]
    fn paths_and_scope_names_round_trip() {
        let p = ModulePath::of_stack(&[(LAYER, Some(3)), (ATTENTION, None), (QKV, None)]).unwrap();
        assert_eq!(p.kind, "layer.attention.qkv");
        assert_eq!(p.index, Some(3));
        assert_eq!(p.scope_name(), "module:layer[3].attention.qkv");
        assert_eq!(ModulePath::parse_scope(&p.scope_name()), Some(p));
        let head = ModulePath::of_stack(&[(LM_HEAD, None)]).unwrap();
        assert_eq!(head.scope_name(), "module:lm_head");
        assert_eq!(ModulePath::parse_scope("module:lm_head"), Some(head));
        assert_eq!(ModulePath::of_stack(&[]), None);
        for bad in [
            "prefill",
            "module:",
            "module:layer[x].qkv",
            "module:layer[3",
            "module:a.",
            "module:a.b[1]",
        ] {
            assert_eq!(ModulePath::parse_scope(bad), None, "{bad}");
        }
        assert!(is_module_scope("module:lm_head") && !is_module_scope("decode_step"));
    }

    #[test]
    fn check_rejects_bad_module_trees() {
        check_modules(&[&[LAYER, ATTENTION], &[QKV, LM_HEAD]]).unwrap();
        let twice = check_modules(&[&[LM_HEAD], &[LM_HEAD]]).unwrap_err();
        assert!(twice.contains("twice"), "{twice}");
        let orphan = check_modules(&[&[QKV, LAYER, ATTENTION]]).unwrap_err();
        assert!(orphan.contains("not declared before"), "{orphan}");
        const EXPERT: Module = Module::indexed("expert", Some(ATTENTION));
        let nested = check_modules(&[&[LAYER, ATTENTION, EXPERT]]).unwrap_err();
        assert!(nested.contains("one index"), "{nested}");
    }
}
