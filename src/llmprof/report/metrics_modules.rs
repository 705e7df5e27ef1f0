//! metrics.json `modules`: where each stage's GPU time goes, module by module, and how the
//! stage's time on the GPU timeline adds up (docs/metrics-schema.md). Built by
//! report/stage1/modules.rs from the Kineto pass's module breakdown.
use crate::measure::graph_match::GraphMapping;
pub use crate::measure::module_tables::TimeSource;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModulesInfo {
    /// `gpu`: GPU work by module; `host`: a run without a GPU, the module scopes' host time.
    pub source: TimeSource,
    /// How replayed kernels were matched to their graphs' capture records.
    pub mapping: GraphMapping,
    /// Of the replayed GPU time, the share no capture node explains.
    pub unmatched_share: f64,
    /// Per stage (`decode_step` first in the report; `prefill`, vision stages, `decode`).
    pub stages: BTreeMap<String, StageModules>,
}

impl ModulesInfo {
    /// How its times are named: (what they are, where they were taken).
    pub fn time_words(&self) -> (&'static str, &'static str) {
        match self.source {
            TimeSource::Gpu => ("GPU time", "on the GPU"),
            TimeSource::Host => (
                "Host time (no GPU: the module scopes' own CPU time)",
                "on the host",
            ),
        }
    }
}

/// One stage's breakdown, per run of the stage (a decode step, a prefill).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StageModules {
    /// Runs of the stage in the Kineto pass.
    pub runs: u64,
    /// GPU work per run: Σ durations of its kernels, copies and memsets (= Σ `kinds`).
    pub work_ms: f64,
    /// Work of two streams at the same time (counted in `work_ms` twice).
    pub overlap_ms: f64,
    /// Time kernels were resident before the work ahead of them on their stream ended
    /// (programmatic dependent launch): not charged to them, so not in `work_ms`.
    #[serde(default)]
    pub early_start_ms: f64,
    /// GPU idle inside the run's span, between its kernels.
    pub idle_inside_ms: f64,
    /// First start to last end on the GPU: `work − overlap + idle_inside`.
    pub span_ms: f64,
    /// From a run's end to the next run's start, and the GPU work of other stages inside it
    /// (sampling between decode steps).
    pub gap_ms: f64,
    pub gap_work_ms: f64,
    /// The stage's timed mean (CUDA events over the timed repeats), when timed and holding no
    /// other stage.
    pub timed_ms: Option<f64>,
    /// The timed mean less the GPU busy time of the profiled runs (work − overlap): the idle
    /// between kernels the unprofiled runs had, if their kernels took as long.
    #[serde(default)]
    pub timed_idle_ms: Option<f64>,
    /// (span − timed) ÷ timed, in %.
    pub residual_pct: Option<f64>,
    /// |residual| ≤ 2 %.
    pub within_2pct: Option<bool>,
    /// Per module kind, summed over its instances (layers); sorted by time above the floor where
    /// there are floors, else by time; `(outside modules)` and `(unmatched)` last.
    pub kinds: Vec<ModuleKind>,
    /// Per layer: its modules' time per run.
    pub layers: Vec<LayerTime>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModuleKind {
    /// `layer.attention.qkv`, `lm_head`, `(outside modules)`, `(unmatched)`.
    pub module: String,
    pub instances: usize,
    pub ms_per_run: f64,
    /// Of the stage's work.
    pub share: f64,
    pub kernels_per_run: f64,
    /// The analytic floor per run (the decode step, with peaks): the larger of the module's
    /// bytes at peak bandwidth and its FLOPs at peak compute, summed over instances.
    pub floor_ms: Option<f64>,
    pub times_floor: Option<f64>,
    pub above_floor_ms: Option<f64>,
    /// Kineto's FLOP count for its operators ÷ its analytic FLOPs, per run (the decode step),
    /// where Kineto counted something.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kineto_flops_ratio: Option<f64>,
    /// Why there is no ratio where the module has analytic FLOPs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kineto_flops_na: Option<String>,
    /// Its kernels with the most time (at most 3), under short names that stay distinct within
    /// the stage.
    #[serde(default)]
    pub top_kernels: Vec<KernelTime>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelTime {
    pub name: String,
    pub ms_per_run: f64,
    pub calls_per_run: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LayerTime {
    pub index: u32,
    pub ms_per_run: f64,
}

/// Breakdowns for tests: a module kind of 2 instances with `ms` per run (share `ms`/10), and a
/// stage of 2 runs whose work is `work_ms` over `kinds`, nothing else set.
#[cfg(test)]
pub(crate) mod test_fixtures {
    use super::{ModuleKind, StageModules};

    pub(crate) fn kind(module: &str, ms: f64) -> ModuleKind {
        ModuleKind {
            module: module.into(),
            instances: 2,
            ms_per_run: ms,
            share: ms / 10.0,
            kernels_per_run: 2.0,
            floor_ms: None,
            times_floor: None,
            above_floor_ms: None,
            kineto_flops_ratio: None,
            kineto_flops_na: None,
            top_kernels: vec![],
        }
    }

    pub(crate) fn stage(work_ms: f64, kinds: Vec<ModuleKind>) -> StageModules {
        StageModules {
            runs: 2,
            work_ms,
            overlap_ms: 0.0,
            early_start_ms: 0.0,
            idle_inside_ms: 0.0,
            span_ms: work_ms,
            gap_ms: 0.0,
            gap_work_ms: 0.0,
            timed_ms: None,
            timed_idle_ms: None,
            residual_pct: None,
            within_2pct: None,
            kinds,
            layers: vec![],
        }
    }
}
