//! Presets read from the YAML files that runs compose (conf/runtime/, conf/model/<family>/optim/),
//! so code that needs "fast" or "eager" without composing a config (the debug checks, tests)
//! means what a run means. A preset's `defaults` list may name only the `fast` preset, which
//! this overlays the way Hydra merges it.
use serde::de::DeserializeOwned;
use serde_json::Value;

/// A preset file as JSON, without its `defaults` list (an empty file is an empty map).
fn parse(text: &str) -> Result<Value, String> {
    let mut v: Value = serde_yaml::from_str(text).map_err(|e| e.to_string())?;
    if v.is_null() {
        v = Value::Object(serde_json::Map::new());
    }
    if let Some(m) = v.as_object_mut() {
        m.remove("defaults");
    }
    Ok(v)
}

/// `top` merged over `base`, maps key by key.
fn overlay(base: Value, top: Value) -> Value {
    match (base, top) {
        (Value::Object(mut b), Value::Object(t)) => {
            for (k, v) in t {
                let merged = match b.remove(&k) {
                    Some(old) => overlay(old, v),
                    None => v,
                };
                b.insert(k, merged);
            }
            Value::Object(b)
        }
        (_, t) => t,
    }
}

/// The preset `name` (`fast`, or `eager` merged over `fast`) from the texts of `dir`'s fast.yaml
/// and eager.yaml; `package` picks the key the switches sit under in those files (`optim` in
/// conf/runtime/), `None` when they are the whole file (conf/model/<family>/optim/).
pub fn read<T: DeserializeOwned>(
    dir: &str,
    fast: &str,
    eager: &str,
    package: Option<&str>,
    name: &str,
) -> Result<T, String> {
    let switches = |text: &str| -> Result<Value, String> {
        let file = parse(text)?;
        Ok(match package {
            Some(key) => file.get(key).cloned().unwrap_or_default(),
            None => file,
        })
    };
    let value = match name {
        "fast" => switches(fast)?,
        "eager" => overlay(switches(fast)?, switches(eager)?),
        other => return Err(format!("no preset '{other}' in {dir}/: fast or eager")),
    };
    serde_json::from_value(value).map_err(|e| format!("{dir}/{name}.yaml: {e}"))
}
