//! Model families, their architectures and their own fast-path switches, typed: `model.family`
//! picks the family, and `model.arch` (conf/model/<family>/arch/*.yaml) and `model.optim`
//! (conf/model/<family>/optim/*.yaml) must match its schemas, checked when the spec is built,
//! before any run directory exists.
use super::{deepseek_ocr, dense};
use crate::optim::{EngineOptim, FamilyOptions};
use crate::region::RegionTree;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    /// DeepSeek-OCR: SAM + CLIP vision, DeepSeek-V2 MoE decoder (docs/deepseek-ocr.md).
    DeepseekOcr,
    /// Dense decoder LLMs from HF config.json fields: Qwen2/2.5, Llama 3 (docs/models.md).
    DenseDecoder,
}

impl Family {
    /// Every family llmprof implements.
    pub const ALL: [Family; 2] = [Family::DeepseekOcr, Family::DenseDecoder];

    /// The YAML spelling.
    pub fn name(self) -> &'static str {
        match self {
            Family::DeepseekOcr => "deepseek_ocr",
            Family::DenseDecoder => "dense_decoder",
        }
    }

    /// The family whose implementation reads an HF checkpoint with this `model_type` in its
    /// config.json, if llmprof has one.
    pub fn for_hf_model_type(model_type: &str) -> Option<Family> {
        Family::ALL
            .into_iter()
            .find(|f| f.hf_model_types().contains(&model_type))
    }

    /// The `model_type`s of HF config.json files this family reads.
    pub fn hf_model_types(self) -> &'static [&'static str] {
        match self {
            Family::DeepseekOcr => deepseek_ocr::HF_MODEL_TYPES,
            Family::DenseDecoder => dense::HF_MODEL_TYPES,
        }
    }

    /// The regions models of this family mark.
    pub fn regions(self) -> RegionTree {
        match self {
            Family::DeepseekOcr => deepseek_ocr::REGIONS,
            Family::DenseDecoder => dense::REGIONS,
        }
    }

    /// The architecture an HF `config.json` describes, read as this family reads it.
    pub fn arch_from_hf_config_json(self, file: &std::path::Path) -> anyhow::Result<Arch> {
        use anyhow::Context;
        let v = super::config_json::read(file)?;
        self.arch_from_hf_config(&v)
            .with_context(|| format!("reading {}", file.display()))
    }

    /// [`Family::arch_from_hf_config_json`] from the parsed JSON.
    pub fn arch_from_hf_config(self, v: &serde_json::Value) -> anyhow::Result<Arch> {
        Ok(match self {
            Family::DeepseekOcr => {
                Arch::DeepseekOcr(deepseek_ocr::ArchConfig::mapped_from_hf_config(v)?)
            }
            Family::DenseDecoder => Arch::DenseDecoder(dense::DenseArch::from_hf_config(v)?),
        })
    }

    /// Every `model_type` llmprof reads, with its family (for error messages).
    pub fn supported_model_types() -> String {
        Family::ALL
            .iter()
            .flat_map(|f| {
                f.hf_model_types()
                    .iter()
                    .map(move |t| format!("{t} ({})", f.name()))
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Parses `model.arch` against this family's schema.
    pub fn parse_arch(self, value: serde_json::Value) -> Result<Arch, String> {
        let arch = match self {
            Family::DeepseekOcr => Arch::DeepseekOcr(typed(value, "model.arch")?),
            Family::DenseDecoder => Arch::DenseDecoder(typed(value, "model.arch")?),
        };
        arch.validate().map_err(|e| format!("model.arch: {e:#}"))?;
        Ok(arch)
    }

    /// Parses `model.optim` against this family's schema (absent: an empty map, which a family
    /// without switches of its own accepts).
    pub fn parse_optim(self, value: Option<serde_json::Value>) -> Result<FamilyOptim, String> {
        let value = match value {
            None | Some(serde_json::Value::Null) => serde_json::json!({}),
            Some(v) => v,
        };
        Ok(match self {
            Family::DeepseekOcr => FamilyOptim::DeepseekOcr(typed(value, "model.optim")?),
            Family::DenseDecoder => FamilyOptim::DenseDecoder(typed(value, "model.optim")?),
        })
    }

    /// This family's preset `name` (`fast` or `eager`) of `model.optim`.
    pub fn optim_preset(self, name: &str) -> Result<FamilyOptim, String> {
        Ok(match self {
            Family::DeepseekOcr => FamilyOptim::DeepseekOcr(FamilyOptions::preset(name)?),
            Family::DenseDecoder => FamilyOptim::DenseDecoder(FamilyOptions::preset(name)?),
        })
    }
}

/// `value` as a `T`, an error naming the key under `at` (`model.arch.decoder: unknown field ...`).
fn typed<T: serde::de::DeserializeOwned>(value: serde_json::Value, at: &str) -> Result<T, String> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let key = if path == "." {
            at.to_string()
        } else {
            format!("{at}.{path}")
        };
        format!("{key}: {}", e.inner())
    })
}

/// A model's own fast-path switches (`model.optim`), one variant per family.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum FamilyOptim {
    DeepseekOcr(deepseek_ocr::DeepseekOcrOptim),
    DenseDecoder(dense::DenseOptim),
}

impl FamilyOptim {
    /// The rules between the family's switches and the engine's.
    pub fn check(&self, engine: &EngineOptim) -> Result<(), String> {
        match self {
            FamilyOptim::DeepseekOcr(o) => o.check(engine),
            FamilyOptim::DenseDecoder(o) => o.check(engine),
        }
    }

    /// The switches as named values, for reports.
    pub fn named(&self) -> serde_json::Map<String, serde_json::Value> {
        match self {
            FamilyOptim::DeepseekOcr(o) => crate::optim::named(o),
            FamilyOptim::DenseDecoder(o) => crate::optim::named(o),
        }
    }
}

/// A model's architecture, one variant per family.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
#[allow(clippy::large_enum_variant)] // one per run, never in a collection
pub enum Arch {
    DeepseekOcr(deepseek_ocr::ArchConfig),
    DenseDecoder(dense::DenseArch),
}

impl Arch {
    pub fn family(&self) -> Family {
        match self {
            Arch::DeepseekOcr(_) => Family::DeepseekOcr,
            Arch::DenseDecoder(_) => Family::DenseDecoder,
        }
    }

    /// `model.preprocess` against this architecture (a family without page preprocessing takes
    /// any: the spec rejects it for families that need it).
    pub fn check_preprocess(&self, p: &deepseek_ocr::PreprocessSpec) -> Result<(), String> {
        match self {
            Arch::DeepseekOcr(a) => p.check(a),
            Arch::DenseDecoder(_) => Ok(()),
        }
    }

    /// Whether the model splits over `world` tensor-parallel ranks (1: always).
    pub fn check_tensor_parallel(&self, world: u32) -> Result<(), String> {
        match self {
            _ if world == 1 => Ok(()),
            Arch::DeepseekOcr(_) => Err(format!(
                "runtime.tensor_parallel={world}: DeepSeek-OCR runs on one GPU only\n  fix: runtime.tensor_parallel=1"
            )),
            Arch::DenseDecoder(a) => dense::tensor_parallel::check(a, world as i64),
        }
    }

    fn validate(&self) -> anyhow::Result<()> {
        match self {
            Arch::DeepseekOcr(a) => a.validate(),
            Arch::DenseDecoder(a) => a.validate(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_declares_a_valid_region_tree() {
        for f in Family::ALL {
            f.regions().check().unwrap();
        }
    }

    #[test]
    fn arch_errors_name_the_key() {
        let mut v = serde_json::to_value(deepseek_ocr::ArchConfig::tiny()).unwrap();
        v["decoder"]["hidden_sizee"] = serde_json::json!(64);
        let e = Family::DeepseekOcr.parse_arch(v).unwrap_err();
        assert!(
            e.contains("model.arch.decoder") && e.contains("hidden_sizee"),
            "{e}"
        );
        let ok = serde_json::to_value(deepseek_ocr::ArchConfig::tiny()).unwrap();
        assert_eq!(
            Family::DeepseekOcr.parse_arch(ok).unwrap().family(),
            Family::DeepseekOcr
        );
    }
}
