//! The typed site settings: what belongs to a machine or cluster rather than to an experiment.
//! Every field is optional (unset = llmprof's own behaviour); unknown keys are refused. Loading
//! and layering is layers.rs's job.
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// All site settings (`llmprof settings` prints them with their sources).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Settings {
    pub slurm: SlurmSettings,
    pub tools: ToolSettings,
    pub hub: HubSettings,
    pub defaults: DefaultSettings,
}

/// The cluster's Slurm account details, for `hydra/launcher=slurm` (names as in Hydra's
/// submitit_slurm launcher where the meaning is the same).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SlurmSettings {
    /// `#SBATCH --partition`.
    pub partition: Option<String>,
    /// `#SBATCH --account`.
    pub account: Option<String>,
    /// `#SBATCH --qos`.
    pub qos: Option<String>,
    /// Shell lines run in each job before llmprof (`module load cuda/12.4`, `source venv/bin/activate`).
    pub setup: Vec<String>,
    /// Environment variables exported in each job.
    pub env: BTreeMap<String, String>,
}

/// Where the profilers are, when not on PATH or in NVIDIA's install folders.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ToolSettings {
    /// The `nsys` binary (Nsight Systems).
    pub nsys: Option<PathBuf>,
    /// The `ncu` binary (Nsight Compute).
    pub ncu: Option<PathBuf>,
}

/// The Hugging Face hub: its cache and how long to wait for it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HubSettings {
    /// The cache folder (as `HF_HUB_CACHE`, which it overrides).
    pub cache_dir: Option<PathBuf>,
    /// Seconds to wait for a connection to the Hub (default 20, at most 3600).
    pub connect_timeout_s: Option<u64>,
    /// Seconds to wait for each read of an answer (default 120, at most 3600).
    pub read_timeout_s: Option<u64>,
}

/// Fallbacks for config values an experiment leaves to the machine.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DefaultSettings {
    /// The device used when the composed config says `device: auto` and the command line does
    /// not set `device` (`cpu`, `cuda`, `cuda:N`).
    pub device: Option<String>,
}
