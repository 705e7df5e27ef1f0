//! Fast-path switches, in two owners: the engine's and the shared decoder layers'
//! (`runtime.optim`, [`EngineOptim`]) and each model family's own (`model.optim`, a type per
//! family implementing [`FamilyOptions`], held by the spec as `crate::model::FamilyOptim`).
//! "fast" and "eager" each mean one thing: the presets of that name in conf/runtime/ and
//! conf/model/<family>/optim/, which `runtime=fast|eager` picks together (docs/fast-path.md).
//! Reports and checks treat the switches as named, serialised data.
mod engine;
pub mod preset;

pub use engine::EngineOptim;

use serde::{de::DeserializeOwned, Serialize};

/// A family's own switches (`model.optim`).
pub trait FamilyOptions:
    Serialize + DeserializeOwned + Copy + std::fmt::Debug + PartialEq + Send + Sync + 'static
{
    /// The family's preset `name` (`fast` or `eager`), read from its conf/model/<family>/optim/.
    fn preset(name: &str) -> Result<Self, String>;

    /// The rules between its switches, and between them and the engine's; the message names
    /// the keys and the fix.
    fn check(&self, engine: &EngineOptim) -> Result<(), String>;
}

/// A switch that only works on top of another: (switch, it is on, the switch it needs, that one
/// is on, why).
pub type Needs<'a> = (&'a str, bool, &'a str, bool, &'a str);

/// The first of `rules` broken, as a message naming both keys (under `prefix`, e.g.
/// `model.optim`) and the fix.
pub fn check_needs(prefix: &str, rules: &[Needs]) -> Result<(), String> {
    match rules.iter().find(|(_, on, _, needed_on, _)| *on && !needed_on) {
        Some((switch, _, needed, _, why)) => Err(format!(
            "{prefix}.{switch}=true needs {prefix}.{needed}=true: {why}\n  fix: set {prefix}.{needed}=true, or {prefix}.{switch}=false"
        )),
        None => Ok(()),
    }
}

/// The switches as named values, in declaration order.
pub fn named<T: Serialize>(options: &T) -> serde_json::Map<String, serde_json::Value> {
    match serde_json::to_value(options) {
        Ok(serde_json::Value::Object(m)) => m,
        _ => serde_json::Map::new(),
    }
}

/// The names of the on/off switches that are on.
pub fn switches_on<T: Serialize>(options: &T) -> Vec<String> {
    named(options)
        .into_iter()
        .filter(|(_, v)| v.as_bool() == Some(true))
        .map(|(k, _)| k)
        .collect()
}

/// `options` with the named on/off switches set to `on`; `None` when one of them is not a
/// switch of `T`.
pub fn with_switches<T: Serialize + DeserializeOwned>(
    options: &T,
    names: &[&str],
    on: bool,
) -> Option<T> {
    let mut m = named(options);
    for name in names {
        match m.get_mut(*name) {
            Some(v @ serde_json::Value::Bool(_)) => *v = serde_json::Value::Bool(on),
            _ => return None,
        }
    }
    serde_json::from_value(serde_json::Value::Object(m)).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_runtime_presets_read_and_pass_their_checks() {
        let fast = EngineOptim::fast();
        let eager = EngineOptim::eager();
        fast.check().unwrap();
        eager.check().unwrap();
        assert!(switches_on(&eager).is_empty(), "{:?}", switches_on(&eager));
        assert!(fast.cuda_graph && fast.sdpa);
        // eager.yaml overlays fast.yaml: the counts are fast's.
        assert_eq!(eager.graph_kv_bucket, fast.graph_kv_bucket);
    }

    #[test]
    fn switches_are_set_by_name_and_unknown_names_refused() {
        let e = EngineOptim::eager();
        let o = with_switches(&e, &["sdpa", "static_kv_cache"], true).unwrap();
        assert_eq!(switches_on(&o), ["sdpa", "static_kv_cache"]);
        assert!(with_switches(&e, &["sam_patch_gemm"], true).is_none());
        // A count is not a switch.
        assert!(with_switches(&e, &["graph_kv_bucket"], true).is_none());
    }

    /// Turning a kernel off is one override: its refinements (the decode-attention kernel's
    /// tensor-core pass) act only with it and ask for nothing, while a switch another one
    /// needs is still refused with the fix.
    #[test]
    fn one_switch_off_is_enough_for_a_kernel_and_its_refinement() {
        let no_kernel = with_switches(&EngineOptim::fast(), &["decode_attention_kernel"], false)
            .expect("a switch");
        assert!(no_kernel.decode_attention_tensor_cores);
        no_kernel.check().unwrap();
        let no_fused =
            with_switches(&EngineOptim::fast(), &["fused_projections"], false).expect("a switch");
        let err = no_fused.check().unwrap_err();
        assert!(err.contains("rope_kv_kernel=true needs"), "{err}");
    }
}
