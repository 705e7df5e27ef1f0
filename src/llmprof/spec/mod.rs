//! `RunSpec`: the composed config as typed structs (unknown keys rejected with a did-you-mean,
//! ranges checked). Everything downstream reads the spec, never the untyped tree. Defaults live
//! in conf/, so every field here is required: a key missing from the YAML is an error too.
pub mod data_paths;
mod generate;
mod groups;

pub use groups::*;

use crate::config::Node;
use anyhow::{bail, Result};
use serde::Deserialize;

#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct RunSpec {
    /// `auto`, `cpu`, `cuda` or `cuda:N`.
    pub device: String,
    pub infer: InferSpec,
    pub dataset: DatasetSpec,
    pub model: ModelSpec,
    pub hardware: HardwareSpec,
    pub runtime: RuntimeSpec,
    pub pipeline: PipelineSpec,
    pub output: OutputSpec,
}

impl RunSpec {
    /// Deserialize a resolved job config, then check ranges.
    pub fn from_tree(resolved: &Node) -> Result<Self> {
        Self::from_json(resolved.to_serde_json())
    }

    /// A config a run recorded (its resolved config.yaml), read as today's spec: in runs
    /// recorded before a family's own switches moved from `runtime.optim` to `model.optim`, they
    /// are moved (and switches the family does not have are dropped).
    pub fn from_recorded_tree(resolved: &Node) -> Result<Self> {
        let mut json = resolved.to_serde_json();
        move_family_switches(&mut json);
        Self::from_json(json)
    }

    fn from_json(json: serde_json::Value) -> Result<Self> {
        let spec: RunSpec = serde_path_to_error::deserialize(json).map_err(|e| {
            let path = e.path().to_string();
            anyhow::anyhow!(describe_serde_error(&path, &e.inner().to_string()))
        })?;
        spec.validate()?;
        Ok(spec)
    }

    fn validate(&self) -> Result<()> {
        let d = &self.device;
        let device_ok = d == "auto"
            || d == "cpu"
            || d == "cuda"
            || d.strip_prefix("cuda:")
                .is_some_and(|n| n.parse::<u32>().is_ok());
        if !device_ok {
            bail!("device='{d}' is not a device: use auto, cpu, cuda or cuda:N");
        }
        at_least("infer.max_new_tokens", self.infer.max_new_tokens as i64, 1)?;
        at_least(
            "dataset.sampling.num_epochs",
            self.dataset.sampling.num_epochs as i64,
            1,
        )?;
        if let Some(n) = self.dataset.sampling.num_samples_per_epoch {
            at_least("dataset.sampling.num_samples_per_epoch", n as i64, 1)?;
        }
        at_least("runtime.repeats", self.runtime.repeats as i64, 1)?;
        at_least("runtime.batch_size", self.runtime.batch_size as i64, 1)?;
        at_least(
            "runtime.tensor_parallel",
            self.runtime.tensor_parallel as i64,
            1,
        )?;
        at_least(
            "runtime.tensor_parallel_timeout_s",
            self.runtime.tensor_parallel_timeout_s as i64,
            1,
        )?;
        for (key, value) in self.counts() {
            if let Some(v) = value {
                let max = LIMITS
                    .iter()
                    .find(|(k, _)| *k == key)
                    .map(|(_, m)| *m)
                    .expect("every count has a limit");
                if v > max {
                    bail!("{key}={v} is out of range: at most {max} (docs/security.md, bounded sizes)");
                }
            }
        }
        self.model
            .arch
            .check_tensor_parallel(self.runtime.tensor_parallel)
            .map_err(anyhow::Error::msg)?;
        if self.pipeline.ncu.rank >= self.runtime.tensor_parallel {
            bail!(
                "pipeline.ncu.rank={} but runtime.tensor_parallel={}: the ranks are 0 .. {}\n  fix: pipeline.ncu.rank={}",
                self.pipeline.ncu.rank,
                self.runtime.tensor_parallel,
                self.runtime.tensor_parallel.saturating_sub(1),
                self.runtime.tensor_parallel.saturating_sub(1)
            );
        }
        let sampled = u64::from(self.dataset.sampling.num_samples_per_epoch.unwrap_or(1))
            * u64::from(self.dataset.sampling.num_epochs);
        if sampled > MAX_SAMPLED_INPUTS {
            bail!("dataset.sampling.num_samples_per_epoch × num_epochs = {sampled} inputs: at most {MAX_SAMPLED_INPUTS} per run\n  fix: fewer epochs or samples, or a multirun");
        }
        let engine = &self.runtime.optim;
        engine.check().map_err(anyhow::Error::msg)?;
        self.model.optim.check(engine).map_err(anyhow::Error::msg)?;
        at_least(
            "pipeline.nvml.interval_ms",
            self.pipeline.nvml.interval_ms as i64,
            1,
        )?;
        at_least("pipeline.ncu.top_k", self.pipeline.ncu.top_k as i64, 1)?;
        at_least(
            "pipeline.ncu.launch_count",
            self.pipeline.ncu.launch_count as i64,
            1,
        )?;
        let known = self.model.family.regions().module_paths();
        for m in &self.pipeline.ncu.modules {
            if !known.iter().any(|k| k == m) {
                bail!(
                    "pipeline.ncu.modules: '{m}' is not a module of this model\n  fix: use one of {} (docs/modules.md)",
                    known.join(", ")
                );
            }
        }
        if let Some(p) = &self.model.preprocess {
            self.model
                .arch
                .check_preprocess(p)
                .map_err(anyhow::Error::msg)?;
        }
        for (k, v) in [
            ("hardware.peak_tflops", self.hardware.peak_tflops),
            (
                "hardware.peak_bandwidth_gbs",
                self.hardware.peak_bandwidth_gbs,
            ),
        ] {
            if let Some(x) = v {
                if !(x.is_finite() && x > 0.0) {
                    bail!("{k}={x} is out of range: must be a positive number (or null to derive it from the GPU)");
                }
            }
        }
        Ok(())
    }
}

/// Moves the keys of `runtime.optim` that are not the engine's to `model.optim`, where the family
/// has them (see [`RunSpec::from_recorded_tree`]).
fn move_family_switches(json: &mut serde_json::Value) {
    let engine = crate::optim::named(&crate::optim::EngineOptim::fast());
    let family: Option<crate::model::Family> = json
        .pointer("/model/family")
        .and_then(|f| serde_json::from_value(f.clone()).ok());
    let Some(family) = family else { return };
    let known = family
        .optim_preset("fast")
        .map(|o| o.named())
        .unwrap_or_default();
    let Some(runtime) = json
        .pointer_mut("/runtime/optim")
        .and_then(|v| v.as_object_mut())
    else {
        return;
    };
    let not_engine: Vec<String> = runtime
        .keys()
        .filter(|k| !engine.contains_key(*k))
        .cloned()
        .collect();
    let moved: Vec<(String, serde_json::Value)> = not_engine
        .into_iter()
        .filter_map(|k| runtime.remove(&k).map(|v| (k, v)))
        .filter(|(k, _)| known.contains_key(k))
        .collect();
    if moved.is_empty() {
        return;
    }
    if let Some(model) = json.get_mut("model").and_then(|m| m.as_object_mut()) {
        let optim = model
            .entry("optim")
            .or_insert_with(|| serde_json::json!({}));
        if let Some(o) = optim.as_object_mut() {
            for (k, v) in moved {
                o.entry(k).or_insert(v);
            }
        }
    }
}

/// Upper bounds of the counts a config sets, checked before anything is allocated for them
/// (docs/security.md): far above any real run, low enough that a typo or a hostile value ends in
/// this error instead of an allocation failure.
pub const LIMITS: &[(&str, u64)] = &[
    ("infer.max_new_tokens", 1 << 20),
    ("runtime.warmup", 100_000),
    ("runtime.repeats", 100_000),
    ("runtime.batch_size", 4096),
    // One worker process per rank: a node's GPUs (past one node: docs/design/tensor-parallel.md).
    ("runtime.tensor_parallel", 64),
    // A day: past it a run is not waiting for a slow rank.
    ("runtime.tensor_parallel_timeout_s", 86_400),
    ("dataset.sampling.num_epochs", 100_000),
    ("dataset.num_prompts", 1_000_000),
    ("dataset.input_len", 1 << 20),
    ("dataset.output_len", 1 << 20),
];

/// The most inputs one run samples (samples per epoch × epochs).
pub const MAX_SAMPLED_INPUTS: u64 = 10_000_000;

impl RunSpec {
    /// Each bounded count with its value (None: unset).
    fn counts(&self) -> [(&'static str, Option<u64>); 10] {
        let d = &self.dataset;
        [
            (
                "infer.max_new_tokens",
                Some(self.infer.max_new_tokens.into()),
            ),
            ("runtime.warmup", Some(self.runtime.warmup.into())),
            ("runtime.repeats", Some(self.runtime.repeats.into())),
            ("runtime.batch_size", Some(self.runtime.batch_size.into())),
            (
                "runtime.tensor_parallel",
                Some(self.runtime.tensor_parallel.into()),
            ),
            (
                "runtime.tensor_parallel_timeout_s",
                Some(self.runtime.tensor_parallel_timeout_s.into()),
            ),
            (
                "dataset.sampling.num_epochs",
                Some(d.sampling.num_epochs.into()),
            ),
            ("dataset.num_prompts", d.num_prompts.map(u64::from)),
            ("dataset.input_len", d.input_len.map(u64::from)),
            ("dataset.output_len", d.output_len.map(u64::from)),
        ]
    }
}

fn at_least(key: &str, value: i64, min: i64) -> Result<()> {
    crate::ranges::at_least(key, value, min).map_err(anyhow::Error::msg)
}

/// Turn serde's message into one that names the full key and suggests the closest valid key.
fn describe_serde_error(path: &str, msg: &str) -> String {
    // model.arch is checked against its family's schema inside `model`: that error names its own
    // path ("model.arch.decoder: unknown field ...").
    if let Some((inner, rest)) = msg.split_once(": ") {
        if inner.starts_with("model.arch") && !inner.contains(' ') {
            return describe_serde_error(inner, rest);
        }
    }
    let parent = if path == "." {
        String::new()
    } else {
        path.to_string()
    };
    if let Some(rest) = msg.strip_prefix("unknown field `") {
        let (field, tail) = rest.split_once('`').unwrap_or((rest, ""));
        let expected: Vec<String> = tail
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect();
        // serde's path ends at the struct that rejected the field.
        let container = parent
            .trim_end_matches(&format!(".{field}"))
            .trim_end_matches(field)
            .trim_end_matches('.');
        let full = if container.is_empty() {
            field.to_string()
        } else {
            format!("{container}.{field}")
        };
        let best = expected
            .iter()
            .map(|e| (strsim::jaro_winkler(field, e), e))
            .filter(|(s, _)| *s > 0.8)
            .max_by(|a, b| a.0.total_cmp(&b.0));
        let prefix = if container.is_empty() {
            String::new()
        } else {
            format!("{container}.")
        };
        return match best {
            Some((_, e)) => format!(
                "unknown config key '{full}': did you mean '{prefix}{e}'? (valid keys here: {})",
                expected.join(", ")
            ),
            None => format!(
                "unknown config key '{full}' (valid keys here: {})",
                expected.join(", ")
            ),
        };
    }
    if let Some(rest) = msg.strip_prefix("missing field `") {
        let field = rest.split('`').next().unwrap_or(rest);
        let full = if parent.is_empty() || parent == "." {
            field.to_string()
        } else {
            format!("{parent}.{field}")
        };
        return format!("missing config key '{full}': add it to the config file of its group, or on the command line with +{full}=<value>");
    }
    if let Some(rest) = msg.strip_prefix("invalid value: ") {
        // serde: "invalid value: integer `-1`, expected u32".
        let (got, expected) = rest.split_once(", expected ").unwrap_or((rest, ""));
        let range = match expected {
            "u32" | "u64" | "usize" => Some("a whole number >= 0"),
            "i32" | "i64" => Some("a whole number"),
            _ => None,
        };
        if let Some(range) = range {
            return format!("{parent}: {got} is out of range: the allowed range is {range}\n  fix: set {parent}=<{range}>");
        }
    }
    format!("invalid value for config key '{parent}': {msg}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negative_counts_state_the_range() {
        let m = describe_serde_error(
            "runtime.repeats",
            "invalid value: integer `-1`, expected u32",
        );
        assert!(
            m.contains("runtime.repeats: integer `-1` is out of range")
                && m.contains("whole number >= 0"),
            "{m}"
        );
    }

    #[test]
    fn unknown_keys_name_the_path_and_suggest() {
        let m = describe_serde_error(
            "infer.max_new_tokns",
            "unknown field `max_new_tokns`, expected one of `max_new_tokens`, `ignore_eos`",
        );
        assert!(
            m.contains("'infer.max_new_tokns'")
                && m.contains("did you mean 'infer.max_new_tokens'"),
            "{m}"
        );
    }

    fn composed(overrides: &[&str]) -> Node {
        let conf = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conf");
        let req = crate::config::ComposeRequest {
            config_dir: conf,
            config_name: "config".into(),
            overrides: overrides.iter().map(|o| o.to_string()).collect(),
            multirun: false,
            job_name: "test".into(),
        };
        crate::config::compose(&req)
            .unwrap()
            .resolved_job()
            .unwrap()
    }

    #[test]
    fn runtime_eager_turns_the_engine_and_the_family_switches_off() {
        let spec = RunSpec::from_tree(&composed(&["runtime=eager"])).unwrap();
        assert_eq!(spec.runtime.optim, crate::optim::EngineOptim::eager());
        assert_eq!(
            spec.model.optim,
            crate::model::Family::DeepseekOcr
                .optim_preset("eager")
                .unwrap()
        );
        let fast = RunSpec::from_tree(&composed(&[])).unwrap();
        assert_eq!(fast.runtime.optim, crate::optim::EngineOptim::fast());
        assert_eq!(
            fast.model.optim,
            crate::model::Family::DeepseekOcr
                .optim_preset("fast")
                .unwrap()
        );
    }

    #[test]
    fn configs_recorded_with_every_switch_in_runtime_optim_read_as_today() {
        let runs: [&[&str]; 2] = [
            &["model=deepseek_ocr", "model.optim.vision_streams=false"],
            &["model=qwen2_5_0_5b"],
        ];
        for overrides in runs {
            let model = overrides[0];
            let today = composed(overrides);
            let spec = RunSpec::from_tree(&today).unwrap();
            // A config as runs recorded it before model.optim: every switch under runtime.optim
            // (DeepSeek-OCR's too, also in a dense model's run).
            let mut old = today.to_serde_json();
            let family = old["model"]
                .as_object_mut()
                .unwrap()
                .remove("optim")
                .unwrap_or_default();
            let deepseek = crate::model::Family::DeepseekOcr
                .optim_preset("fast")
                .unwrap();
            let runtime = old["runtime"]["optim"].as_object_mut().unwrap();
            for (k, v) in deepseek.named() {
                runtime.insert(k.clone(), family.get(&k).cloned().unwrap_or(v));
            }
            let recorded =
                crate::config::yaml::parse(&serde_yaml::to_string(&old).unwrap()).unwrap();
            assert!(
                RunSpec::from_tree(&recorded).is_err(),
                "{model}: today's reader refuses it"
            );
            let read = RunSpec::from_recorded_tree(&recorded).unwrap();
            assert_eq!(read.model.optim, spec.model.optim, "{model}");
            assert_eq!(read.runtime.optim, spec.runtime.optim, "{model}");
        }
    }
}
