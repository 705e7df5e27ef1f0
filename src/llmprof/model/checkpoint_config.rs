//! A checkpoint's own `config.json` against the model a run chose (docs/security.md: a checkpoint
//! is not trusted to be what the config says it is). The family reads config.json into its
//! architecture; the fields that decide tensor shapes must equal the configured ones, else the run
//! stops before it starts, naming each field with both values. A checkpoint of another family
//! fails here too, instead of as a list of missing tensors after loading.
use super::{Arch, Family};
use anyhow::{bail, Context, Result};
use std::path::Path;

/// The fields of each family's architecture compared (paths in its serialised form).
fn checked_fields(family: Family) -> &'static [&'static str] {
    match family {
        Family::DeepseekOcr => super::deepseek_ocr::arch::CHECKPOINT_FIELDS,
        Family::DenseDecoder => super::dense::arch::CHECKPOINT_FIELDS,
    }
}

/// Checks `dir`/config.json (or the folder of a single checkpoint file) against `arch`; no
/// config.json is no check (the loader names missing files itself).
pub fn check(arch: &Arch, path: &Path) -> Result<()> {
    let dir = if path.is_file() {
        path.parent().unwrap_or(path)
    } else {
        path
    };
    let file = dir.join("config.json");
    if !file.is_file() {
        return Ok(());
    }
    let family = arch.family();
    let described = family.arch_from_hf_config_json(&file).with_context(|| {
        format!(
            "{} is not a {} checkpoint's config\n  fix: choose the model preset of that checkpoint's family (docs/models.md), or point model.path at a {} checkpoint",
            file.display(),
            family.name(),
            family.name()
        )
    })?;
    let mismatches = differences(arch, &described, checked_fields(family));
    if !mismatches.is_empty() {
        bail!(
            "{} does not match the chosen model:\n  {}\n  fix: choose the preset of this checkpoint (or set those model.arch keys), or point model.path at the checkpoint the preset describes",
            file.display(),
            mismatches.join("\n  ")
        );
    }
    Ok(())
}

/// `model.arch.<field>: config.json says X, the chosen model says Y` for each differing field.
fn differences(chosen: &Arch, described: &Arch, fields: &[&str]) -> Vec<String> {
    let (a, b) = (
        serde_json::to_value(chosen).unwrap_or_default(),
        serde_json::to_value(described).unwrap_or_default(),
    );
    fields
        .iter()
        .filter_map(|f| {
            let pointer = format!("/{}", f.replace('.', "/"));
            let (mine, theirs) = (a.pointer(&pointer), b.pointer(&pointer));
            (mine != theirs).then(|| {
                let show =
                    |v: Option<&serde_json::Value>| v.map_or("nothing".into(), |v| v.to_string());
                format!(
                    "model.arch.{f}: config.json says {}, the chosen model says {}",
                    show(theirs),
                    show(mine)
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir_with(name: &str, json: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("llmprof-ckpt-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("config.json"), json).unwrap();
        d
    }

    fn qwen_0_5b() -> Arch {
        let text = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../conf/model/dense_decoder/arch/qwen2_5_0_5b.yaml"),
        )
        .unwrap();
        let v: serde_json::Value = serde_yaml::from_str(&text).unwrap();
        Family::DenseDecoder.parse_arch(v).unwrap()
    }

    #[test]
    fn a_checkpoint_of_other_dimensions_names_each_field_with_both_values() {
        let chosen = qwen_0_5b();
        let Arch::DenseDecoder(a) = &chosen else {
            unreachable!()
        };
        let mut same = serde_json::to_value(a).unwrap();
        same["model_type"] = "qwen2".into();
        if same["rope_scaling"].is_null() {
            same.as_object_mut().unwrap().remove("rope_scaling");
        }
        let ok = dir_with("same", &same.to_string());
        check(&chosen, &ok).unwrap();
        let mut bigger = same.clone();
        bigger["hidden_size"] = 3584.into();
        bigger["num_hidden_layers"] = 28.into();
        let bad = dir_with("bigger", &bigger.to_string());
        let e = format!("{:#}", check(&chosen, &bad).unwrap_err());
        assert!(
            e.contains("model.arch.hidden_size: config.json says 3584, the chosen model says 896")
                && e.contains("model.arch.num_hidden_layers: config.json says 28"),
            "{e}"
        );
        let other = dir_with(
            "other-family",
            r#"{"model_type": "mamba", "hidden_size": 4096}"#,
        );
        let e = format!("{:#}", check(&chosen, &other).unwrap_err());
        assert!(
            e.contains("is not a dense_decoder checkpoint's config") && e.contains("mamba"),
            "{e}"
        );
        let none = std::env::temp_dir().join(format!("llmprof-ckpt-none-{}", std::process::id()));
        std::fs::create_dir_all(&none).unwrap();
        check(&chosen, &none).unwrap();
        for d in [ok, bad, other, none] {
            std::fs::remove_dir_all(d).unwrap();
        }
    }
}
