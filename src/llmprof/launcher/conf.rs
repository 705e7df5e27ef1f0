//! The chosen launcher, read from the composed `hydra.launcher` node (conf/hydra/launcher/*.yaml)
//! by its `_target_`, as Hydra instantiates it. Hydra's own targets are accepted for the same
//! meaning (BasicLauncher, the joblib launcher as `local`, submitit's SlurmLauncher), so an option
//! file copied from a Hydra project selects the matching launcher. Unknown keys are errors.
use anyhow::{bail, Context, Result};
use serde::Deserialize;
use std::collections::BTreeMap;

/// `_target_` values and the launcher each selects.
/// The most jobs the local launcher runs at once (`n_jobs`, `jobs_per_gpu`).
pub const MAX_PARALLEL_JOBS: usize = 1024;

const TARGETS: &[(&str, Kind)] = &[
    ("llmprof.launcher.BasicLauncher", Kind::Basic),
    ("llmprof.launcher.LocalLauncher", Kind::Local),
    ("llmprof.launcher.SlurmLauncher", Kind::Slurm),
    (
        "hydra._internal.core_plugins.basic_launcher.BasicLauncher",
        Kind::Basic,
    ),
    (
        "hydra_plugins.hydra_joblib_launcher.joblib_launcher.JoblibLauncher",
        Kind::Local,
    ),
    (
        "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher",
        Kind::Slurm,
    ),
];

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Basic,
    Local,
    Slurm,
}

#[derive(Debug, Clone, PartialEq)]
pub enum LauncherConf {
    Basic,
    Local(LocalConf),
    Slurm(Box<SlurmConf>),
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LocalConf {
    /// Jobs at once; None: one per GPU slot, or 1 without GPUs.
    #[serde(default)]
    pub n_jobs: Option<usize>,
    /// GPUs to hand out (CUDA_VISIBLE_DEVICES names); None: every visible GPU.
    #[serde(default)]
    pub gpus: Option<Vec<String>>,
    /// Jobs sharing one GPU at a time.
    #[serde(default = "one")]
    pub jobs_per_gpu: usize,
}

fn one() -> usize {
    1
}

/// submitit_slurm's names where the meaning is the same (`SlurmQueueConf`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlurmConf {
    #[serde(default = "sixty")]
    pub timeout_min: u64,
    #[serde(default)]
    pub cpus_per_task: Option<u32>,
    #[serde(default)]
    pub gpus_per_node: Option<u32>,
    #[serde(default)]
    pub mem_gb: Option<u32>,
    #[serde(default = "one_u32")]
    pub nodes: u32,
    #[serde(default = "one_u32")]
    pub tasks_per_node: u32,
    #[serde(default = "default_name")]
    pub name: String,
    #[serde(default)]
    pub partition: Option<String>,
    #[serde(default)]
    pub qos: Option<String>,
    #[serde(default)]
    pub account: Option<String>,
    #[serde(default)]
    pub comment: Option<String>,
    #[serde(default)]
    pub constraint: Option<String>,
    #[serde(default)]
    pub exclude: Option<String>,
    #[serde(default)]
    pub gres: Option<String>,
    #[serde(default = "parallelism")]
    pub array_parallelism: u32,
    #[serde(default)]
    pub additional_parameters: BTreeMap<String, serde_json::Value>,
    #[serde(default)]
    pub setup: Vec<String>,
    #[serde(default = "five")]
    pub poll_interval_s: f64,
    #[serde(default = "status_timeout")]
    pub status_timeout_s: f64,
    #[serde(default)]
    pub llmprof_bin: Option<String>,
}

fn sixty() -> u64 {
    60
}
fn one_u32() -> u32 {
    1
}
fn default_name() -> String {
    "llmprof".into()
}
fn parallelism() -> u32 {
    256
}
fn five() -> f64 {
    5.0
}
fn status_timeout() -> f64 {
    300.0
}

impl LauncherConf {
    /// The launcher of a resolved `hydra.launcher` node (None or null: basic).
    pub fn from_node(node: Option<&serde_json::Value>) -> Result<Self> {
        let Some(serde_json::Value::Object(map)) = node else {
            return match node {
                None | Some(serde_json::Value::Null) => Ok(LauncherConf::Basic),
                Some(other) => bail!(
                    "hydra.launcher must be a mapping with a _target_, found {other}\n  fix: choose one with hydra/launcher=basic|local|slurm"
                ),
            };
        };
        let target = map.get("_target_").and_then(|t| t.as_str()).unwrap_or("");
        let Some((_, kind)) = TARGETS.iter().find(|(t, _)| *t == target) else {
            bail!(
                "hydra.launcher._target_ '{target}' is not a launcher llmprof knows\n  fix: choose hydra/launcher=basic|local|slurm, or use one of these targets: {}",
                TARGETS.iter().map(|(t, _)| *t).collect::<Vec<_>>().join(", ")
            );
        };
        let mut fields = map.clone();
        fields.remove("_target_");
        let value = serde_json::Value::Object(fields);
        let parse = |what: &str| format!("reading hydra.launcher ({what} launcher)");
        Ok(match kind {
            Kind::Basic => LauncherConf::Basic,
            Kind::Local => {
                let c: LocalConf = serde_path_to_error::deserialize(value)
                    .map_err(|e| anyhow::anyhow!("hydra.launcher.{e}"))
                    .with_context(|| parse("local"))?;
                if c.jobs_per_gpu == 0 || c.n_jobs == Some(0) {
                    bail!("hydra.launcher.n_jobs and jobs_per_gpu must be at least 1");
                }
                if c.jobs_per_gpu > MAX_PARALLEL_JOBS
                    || c.n_jobs.is_some_and(|n| n > MAX_PARALLEL_JOBS)
                {
                    bail!("hydra.launcher.n_jobs and jobs_per_gpu are at most {MAX_PARALLEL_JOBS} (jobs run at once on this machine)");
                }
                LauncherConf::Local(c)
            }
            Kind::Slurm => {
                let c: SlurmConf = serde_path_to_error::deserialize(value)
                    .map_err(|e| anyhow::anyhow!("hydra.launcher.{e}"))
                    .with_context(|| parse("slurm"))?;
                if c.array_parallelism == 0 || c.poll_interval_s <= 0.0 {
                    bail!("hydra.launcher.array_parallelism and poll_interval_s must be positive");
                }
                LauncherConf::Slurm(Box::new(c))
            }
        })
    }

    /// The name status.json and summary.md record.
    pub fn name(&self) -> &'static str {
        match self {
            LauncherConf::Basic => "basic",
            LauncherConf::Local(_) => "local",
            LauncherConf::Slurm(_) => "slurm",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn targets_pick_the_launcher_and_fields_are_typed() {
        assert_eq!(LauncherConf::from_node(None).unwrap(), LauncherConf::Basic);
        let local = LauncherConf::from_node(Some(&json!({
            "_target_": "llmprof.launcher.LocalLauncher", "n_jobs": 2, "gpus": null
        })))
        .unwrap();
        assert_eq!(
            local,
            LauncherConf::Local(LocalConf {
                n_jobs: Some(2),
                gpus: None,
                jobs_per_gpu: 1
            })
        );
        let slurm = LauncherConf::from_node(Some(&json!({
            "_target_": "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher",
            "partition": "gpu", "mem_gb": 32, "setup": ["module load cuda"]
        })))
        .unwrap();
        let LauncherConf::Slurm(s) = slurm else {
            panic!("{slurm:?}")
        };
        assert_eq!(
            (s.partition.as_deref(), s.mem_gb, s.timeout_min),
            (Some("gpu"), Some(32), 60)
        );
        assert_eq!(s.setup, ["module load cuda"]);
    }

    #[test]
    fn bad_launcher_configs_name_the_key() {
        let e = LauncherConf::from_node(Some(&json!({
            "_target_": "llmprof.launcher.SlurmLauncher", "gpus_per_job": 1
        })))
        .unwrap_err();
        assert!(format!("{e:#}").contains("gpus_per_job"), "{e:#}");
        let e = LauncherConf::from_node(Some(&json!({"_target_": "x.Y"}))).unwrap_err();
        assert!(format!("{e:#}").contains("hydra/launcher=basic|local|slurm"));
        let e = LauncherConf::from_node(Some(&json!({
            "_target_": "llmprof.launcher.LocalLauncher", "n_jobs": 0
        })))
        .unwrap_err();
        assert!(format!("{e:#}").contains("at least 1"));
    }
}
