//! `model=hf`: any Hugging Face checkpoint of a family llmprof implements (#42). The preset
//! leaves `model.family` and `model.arch` as [`FROM_CONFIG`]; before the spec is built, the
//! checkpoint's config.json (`model.path`, after a Hub download; or `model.config` for synthetic
//! weights) names the family by its `model_type` and gives the architecture, which are written
//! into the resolved config, so the run records them like any preset's. `model.optim`, given as
//! the runtime preset's name, becomes the family's switches of that name.
use super::{Arch, Family};
use crate::config::Node;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// What `model.family` and `model.arch` say in the `hf` preset.
pub const FROM_CONFIG: &str = "from_config";

/// Fills `model.family`, `model.arch` and `model.optim` of a resolved config whose family is
/// [`FROM_CONFIG`]; any other config is left as it is.
pub fn resolve(resolved: &mut Node) -> Result<()> {
    if resolved.get_path("model.family") != Some(&Node::Str(FROM_CONFIG.into())) {
        return Ok(());
    }
    let text = |key: &str| match resolved.get_path(key) {
        Some(Node::Str(s)) if !s.trim().is_empty() => Some(s.trim().to_string()),
        _ => None,
    };
    let file = match text("model.weights").as_deref() {
        Some("synthetic") => PathBuf::from(text("model.config").context(
            "model=hf with model.weights=synthetic needs the architecture: model.config=<path to a config.json>",
        )?),
        _ => {
            let path = PathBuf::from(text("model.path").context(
                "model=hf needs the checkpoint: model.path=<folder with config.json and *.safetensors>, or model.weights=hub model.repo=<org/name>",
            )?);
            match path.is_file() {
                true => path.parent().unwrap_or(&path).join("config.json"),
                false => path.join("config.json"),
            }
        }
    };
    let (family, arch) = read_arch(&file)?;
    if family == Family::DeepseekOcr {
        bail!(
            "{} is a DeepSeek-OCR checkpoint, which also needs its page preprocessing\n  fix: model=deepseek_ocr (or deepseek_ocr2) model.weights=files model.path={}",
            file.display(),
            file.parent().unwrap_or(Path::new(".")).display()
        );
    }
    let arch_json = serde_json::to_value(&arch).context("serialising the architecture")?;
    let optim = match resolved.get_path("model.optim") {
        Some(Node::Str(preset)) => {
            let o = family.optim_preset(preset).map_err(anyhow::Error::msg)?;
            Some(serde_json::to_value(&o).context("serialising model.optim")?)
        }
        _ => None,
    };
    let model = resolved
        .get_path_mut("model")
        .and_then(|m| match m {
            Node::Map(m) => Some(m),
            _ => None,
        })
        .context("the resolved config has no model map")?;
    model.insert("family".into(), Node::Str(family.name().into()));
    model.insert("arch".into(), Node::from(&arch_json));
    if let Some(o) = optim {
        model.insert("optim".into(), Node::from(&o));
    }
    tracing::info!(family = family.name(), config = %file.display(), "model=hf: the architecture from config.json");
    Ok(())
}

/// The family and architecture `file` describes; an unsupported `model_type` names the ones
/// llmprof reads.
pub fn read_arch(file: &Path) -> Result<(Family, Arch)> {
    let v = super::config_json::read(file).context("model=hf")?;
    let model_type = v.get("model_type").and_then(|t| t.as_str()).unwrap_or("");
    let Some(family) = Family::for_hf_model_type(model_type) else {
        bail!(
            "{}: model_type '{model_type}' is not one llmprof implements\n  supported: {}",
            file.display(),
            Family::supported_model_types()
        );
    };
    let arch = family
        .arch_from_hf_config(&v)
        .with_context(|| format!("reading {}", file.display()))?;
    Ok((family, arch))
}

#[cfg(test)]
mod tests;
