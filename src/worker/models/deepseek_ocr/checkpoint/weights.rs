//! Official-name checkpoint tensors (docs/deepseek-ocr.md §6): load `model*.safetensors` (single
//! file or sharded through `model.safetensors.index.json`) straight to the target device/dtype,
//! or build seeded synthetic tensors with the same names and shapes. Name/shape problems → one
//! error listing all.
pub use super::tensor_names::{expected_tensors, Part, TensorSpec};
use crate::checkpoint::tensors::read_checked;
pub use crate::checkpoint::tensors::WeightPath;
use anyhow::{Context, Result};
use llmprof::model::deepseek_ocr::arch::ArchConfig;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use tch::{Device, Kind, Tensor};

/// Loaded (or synthetic) tensors by official name, all on one device in one dtype.
pub struct Weights {
    tensors: HashMap<String, Tensor>,
    parts: Vec<Part>,
    device: Device,
    kind: Kind,
}

impl std::fmt::Debug for Weights {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Weights({} tensors on {:?} as {:?})",
            self.tensors.len(),
            self.device,
            self.kind
        )
    }
}

impl Weights {
    /// Loads the tensors of `parts` from a checkpoint file or folder onto `device` as `kind`.
    /// Tensors of parts not requested are skipped (decoder-only or SAM-only files work). Missing,
    /// unexpected (not an official name of any part) and wrong-shaped tensors are reported together.
    pub fn load(
        path: &Path,
        cfg: &ArchConfig,
        parts: &[Part],
        device: Device,
        kind: Kind,
    ) -> Result<Self> {
        let all: HashSet<String> = Part::ALL
            .iter()
            .flat_map(|&p| expected_tensors(cfg, p).into_iter().map(|t| t.name))
            .collect();
        let wanted: Vec<TensorSpec> = parts
            .iter()
            .flat_map(|&p| expected_tensors(cfg, p))
            .collect();
        let tensors = read_checked(
            path,
            &wanted,
            &|n| all.contains(n),
            "DeepSeek-OCR",
            device,
            kind,
        )?;
        Ok(Weights {
            tensors,
            parts: parts.to_vec(),
            device,
            kind,
        })
    }

    /// Seeded random tensors for `parts` with the official names/shapes, created on `device` as
    /// `kind` without any file. Norm weights are ≈1, linear weights have std 1/√fan_in, biases and
    /// position tables std 0.02, newline/separator std 1/√hidden (their HF init).
    pub fn synthetic(
        cfg: &ArchConfig,
        parts: &[Part],
        seed: i64,
        device: Device,
        kind: Kind,
    ) -> Result<Self> {
        tch::manual_seed(seed);
        let mut tensors = HashMap::new();
        for &p in parts {
            for t in expected_tensors(cfg, p) {
                let std = synthetic_std(&t, cfg);
                let mut x = Tensor::f_randn(&t.shape, (Kind::Float, device))?.f_mul_scalar(std)?;
                if is_norm_weight(&t.name) {
                    x = x.f_add_scalar(1.0)?;
                }
                tensors.insert(t.name, x.f_to_kind(kind)?);
            }
        }
        Ok(Weights {
            tensors,
            parts: parts.to_vec(),
            device,
            kind,
        })
    }

    /// Another handle on the same tensors (no copy), e.g. to load one set of weights into
    /// models built with different implementation choices.
    pub fn shallow_clone(&self) -> Self {
        Weights {
            tensors: self
                .tensors
                .iter()
                .map(|(n, t)| (n.clone(), t.shallow_clone()))
                .collect(),
            parts: self.parts.clone(),
            device: self.device,
            kind: self.kind,
        }
    }

    /// The same weights rounded to `kind` (e.g. bf16 copies of fp32 weights, so both dtypes run
    /// one model).
    pub fn to_kind(&self, kind: Kind) -> Result<Self> {
        Ok(Weights {
            tensors: self
                .tensors
                .iter()
                .map(|(n, t)| Ok((n.clone(), t.f_to_kind(kind)?)))
                .collect::<Result<_>>()?,
            parts: self.parts.clone(),
            device: self.device,
            kind,
        })
    }

    /// Wraps tensors that already carry official names (tests, converters).
    pub fn from_tensors(
        tensors: HashMap<String, Tensor>,
        parts: &[Part],
        device: Device,
        kind: Kind,
    ) -> Self {
        Weights {
            tensors,
            parts: parts.to_vec(),
            device,
            kind,
        }
    }

    /// The parts these weights hold.
    pub fn parts(&self) -> &[Part] {
        &self.parts
    }

    pub fn has_part(&self, p: Part) -> bool {
        self.parts.contains(&p)
    }

    pub fn device(&self) -> Device {
        self.device
    }

    pub fn kind(&self) -> Kind {
        self.kind
    }

    pub fn len(&self) -> usize {
        self.tensors.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tensors.is_empty()
    }

    /// Sorted tensor names.
    pub fn names(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.tensors.keys().map(String::as_str).collect();
        v.sort();
        v
    }

    /// A shallow (storage-sharing) handle to tensor `name`.
    pub fn get(&self, name: &str) -> Result<Tensor> {
        self.tensors
            .get(name)
            .map(Tensor::shallow_clone)
            .with_context(|| format!("weight `{name}` was not loaded"))
    }

    /// Removes and returns `name` (lets the model free tensors it restacks).
    pub fn take(&mut self, name: &str) -> Option<Tensor> {
        self.tensors.remove(name)
    }

    /// Root of the name tree, like `nn::VarStore::root()`.
    pub fn root(&self) -> WeightPath<'_> {
        WeightPath::root(&self.tensors, self.device, self.kind)
    }

    /// Writes all tensors to one safetensors file (tests, fixtures).
    pub fn write_safetensors(&self, path: &Path) -> Result<()> {
        let mut named: Vec<(&str, &Tensor)> =
            self.tensors.iter().map(|(n, t)| (n.as_str(), t)).collect();
        named.sort_by(|a, b| a.0.cmp(b.0));
        Tensor::write_safetensors(&named, path)
            .with_context(|| format!("writing {}", path.display()))
    }
}

fn is_norm_weight(name: &str) -> bool {
    name.ends_with(".weight")
        && (name.contains("norm")
            || name.ends_with("neck.1.weight")
            || name.ends_with("neck.3.weight"))
}

fn synthetic_std(t: &TensorSpec, cfg: &ArchConfig) -> f64 {
    let n = &t.name;
    if is_norm_weight(n) {
        0.02
    } else if n == "model.image_newline" || n == "model.view_seperator" {
        1.0 / (cfg.projector.n_embed as f64).sqrt()
    } else if n == "model.embed_tokens.weight" {
        1.0
    } else if t.shape.len() >= 2
        && !n.contains("rel_pos")
        && !n.contains("pos_embed")
        && !n.contains("position_embedding")
    {
        let fan_in: i64 = t.shape[1..].iter().product();
        1.0 / (fan_in as f64).sqrt()
    } else {
        0.02
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::temp_dir;

    #[test]
    fn synthetic_round_trip_and_error_listing() {
        let cfg = ArchConfig::tiny();
        let w = Weights::synthetic(&cfg, &Part::ALL, 7, Device::Cpu, Kind::Float).unwrap();
        let dir = temp_dir("weights");
        let file = dir.join("model-00001-of-000001.safetensors");
        w.write_safetensors(&file).unwrap();
        let back = Weights::load(&dir, &cfg, &Part::ALL, Device::Cpu, Kind::Float).unwrap();
        assert_eq!(back.names(), w.names());
        for n in w.names() {
            assert!(
                back.get(n).unwrap().equal(&w.get(n).unwrap()),
                "{n} differs"
            );
        }
        // Decoder-only loading ignores the other parts' tensors.
        let dec =
            Weights::load(&file, &cfg, &[Part::Decoder], Device::Cpu, Kind::BFloat16).unwrap();
        assert_eq!(dec.len(), expected_tensors(&cfg, Part::Decoder).len());
        assert_eq!(dec.get("lm_head.weight").unwrap().kind(), Kind::BFloat16);

        // Break it: drop one tensor, reshape another, add a stray one.
        let mut named: Vec<(String, Tensor)> = w
            .names()
            .into_iter()
            .map(|n| (n.to_string(), w.get(n).unwrap()))
            .collect();
        named.retain(|(n, _)| n != "model.layers.1.mlp.experts.3.up_proj.weight");
        for (n, t) in named.iter_mut() {
            if n == "model.sam_model.blocks.0.attn.rel_pos_h" {
                *t = Tensor::zeros([5, 16], (Kind::Float, Device::Cpu));
            }
        }
        named.push((
            "model.sam_model.blocks.0.attn.typo".into(),
            Tensor::zeros([2], (Kind::Float, Device::Cpu)),
        ));
        let bad = dir.join("bad.safetensors");
        Tensor::write_safetensors(&named, &bad).unwrap();
        let err = format!(
            "{:#}",
            Weights::load(&bad, &cfg, &Part::ALL, Device::Cpu, Kind::Float).unwrap_err()
        );
        assert!(
            err.contains("1 missing")
                && err.contains("model.layers.1.mlp.experts.3.up_proj.weight"),
            "{err}"
        );
        assert!(
            err.contains("1 with a wrong shape")
                && err.contains("rel_pos_h: file [5, 16], expected [7, 16]"),
            "{err}"
        );
        assert!(
            err.contains("1 unexpected") && err.contains("attn.typo"),
            "{err}"
        );
        // SAM-only load of the broken file only complains about SAM.
        let err = format!(
            "{:#}",
            Weights::load(&bad, &cfg, &[Part::Sam], Device::Cpu, Kind::Float).unwrap_err()
        );
        assert!(!err.contains("missing"), "{err}");
    }

    #[test]
    fn sharded_index_is_followed() {
        let cfg = ArchConfig::tiny();
        let w = Weights::synthetic(
            &cfg,
            &[Part::Projector, Part::Sam],
            1,
            Device::Cpu,
            Kind::Float,
        )
        .unwrap();
        let dir = temp_dir("sharded");
        let names = w.names();
        let (a, b) = names.split_at(names.len() / 2);
        let mut map = serde_json::Map::new();
        for (file, part) in [
            ("model-00001-of-00002.safetensors", a),
            ("model-00002-of-00002.safetensors", b),
        ] {
            let named: Vec<(&str, Tensor)> = part.iter().map(|n| (*n, w.get(n).unwrap())).collect();
            Tensor::write_safetensors(&named, dir.join(file)).unwrap();
            for n in part {
                map.insert(n.to_string(), file.into());
            }
        }
        let index = serde_json::json!({"metadata": {}, "weight_map": map});
        std::fs::write(dir.join("model.safetensors.index.json"), index.to_string()).unwrap();
        let back = Weights::load(
            &dir,
            &cfg,
            &[Part::Projector, Part::Sam],
            Device::Cpu,
            Kind::Float,
        )
        .unwrap();
        assert_eq!(back.len(), w.len());
    }
}
