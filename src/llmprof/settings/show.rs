//! `llmprof settings`: every setting with its merged value and the layer it came from (figment's
//! metadata: the file, the environment variable, or the built-in default). Rendering only.
use super::layers::{figment, Origins};
use super::{env_var_name, Settings, SettingsError};
use figment::{Figment, Source};

/// The settings as `key = value    # source` lines, one per setting (maps entry by entry).
pub fn render(origins: &Origins) -> Result<String, SettingsError> {
    let settings = Settings::load_from(origins)?;
    let fig = figment(origins);
    let tree = serde_json::to_value(&settings).expect("settings serialise");
    let mut rows: Vec<(String, String, String)> = Vec::new();
    leaves(&tree, &mut Vec::new(), &mut |path, value| {
        let key = path.join(".");
        let source = if value.is_null() {
            "unset".to_string()
        } else {
            source_of(&fig, origins, &key, path)
        };
        rows.push((key, toml_value(value), source));
    });
    let mut out = String::from("# llmprof settings (lowest first: built-in defaults < ");
    match &origins.user_file {
        Some(f) => out.push_str(&f.display().to_string()),
        None => out.push_str("(no user file: neither XDG_CONFIG_HOME nor HOME is set)"),
    }
    out.push_str(&format!(
        " < {} < {}<SECTION>__<KEY>)\n",
        origins.project_file.display(),
        origins.env_prefix
    ));
    let width = rows
        .iter()
        .map(|(k, v, _)| k.len() + v.len() + 3)
        .max()
        .unwrap_or(0);
    for (key, value, source) in rows {
        let line = format!("{key} = {value}");
        out.push_str(&format!("{line:<width$}  # {source}\n"));
    }
    Ok(out)
}

/// Call `f` on every leaf (scalar, list, empty map) with its key path.
fn leaves(
    v: &serde_json::Value,
    path: &mut Vec<String>,
    f: &mut dyn FnMut(&[String], &serde_json::Value),
) {
    match v {
        serde_json::Value::Object(m) if !m.is_empty() => {
            for (k, child) in m {
                path.push(k.clone());
                leaves(child, path, f);
                path.pop();
            }
        }
        other => f(path, other),
    }
}

/// Where the setting `key` (`slurm.env.HF_HOME`) of this process comes from: its file, its
/// environment variable, the built-in default, or `unset`; for errors a setting causes.
pub fn source_of_setting(key: &str) -> String {
    let origins = Origins::from_env();
    let path: Vec<String> = key.split('.').map(String::from).collect();
    source_of(&figment(&origins), &origins, key, &path)
}

/// The layer a key's value came from, or `unset`.
fn source_of(fig: &Figment, origins: &Origins, key: &str, path: &[String]) -> String {
    let Some(md) = fig.find_metadata(key) else {
        return "unset".into();
    };
    match &md.source {
        Some(Source::File(p)) => p.display().to_string(),
        _ if md.name.contains("environment") => {
            format!("environment: {}", env_var_name(&origins.env_prefix, path))
        }
        _ => "built-in default".into(),
    }
}

/// A value as TOML writes it (`"gpu"`, `["a", "b"]`, `{}`); `null` is unset.
fn toml_value(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => "(unset)".into(),
        serde_json::Value::Object(m) if m.is_empty() => "{}".into(),
        other => other.to_string(),
    }
}
