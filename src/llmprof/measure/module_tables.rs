//! GPU time by stage and module from one Kineto pass: every piece of GPU work is charged to its
//! stage and to the module that launched it, eagerly (the module scope above its launch,
//! measure/module_attr.rs) or at a graph's capture (its record, measure/graph_match.rs). Work in
//! a stage outside every module is `(outside modules)`; replayed work the matcher could not
//! place is `(unmatched)`; both stay in the sums, so a stage's rows add up to all its GPU work.
//! Pure.
use super::capture_record::NodeOwner;
use super::graph_match::{GraphMapping, ReplayOwners};
use super::kineto_events::{HostKind, ProfileEvents};
use super::op_tables::Attribution;
use crate::region::ModulePath;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The module name of work inside a stage but outside every module.
pub const OUTSIDE_MODULES: &str = "(outside modules)";
/// The module name of replayed work with no matched capture node.
pub const UNMATCHED: &str = "(unmatched)";

/// GPU work of one module instance within one stage, summed over the pass.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModuleTimeRow {
    pub stage: String,
    /// The module path (`layer.attention.qkv`), or [`OUTSIDE_MODULES`] / [`UNMATCHED`].
    pub module: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<u32>,
    /// Σ durations of its kernels, copies and memsets.
    pub time_ns: u64,
    pub kernels: u64,
    /// Of `time_ns`, what was replayed from CUDA graphs.
    pub replayed_ns: u64,
}

/// The module breakdown of a Kineto pass.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModuleProfile {
    pub rows: Vec<ModuleTimeRow>,
    /// How many times each stage ran in the pass (its user scopes), to give times per step.
    pub stage_runs: BTreeMap<String, u64>,
    pub mapping: GraphMapping,
}

/// Rows per (stage, module, index): `eager` is each device event's module from its scopes,
/// `replay` the matcher's owners. Work outside every stage is left out.
pub fn module_rows(
    events: &ProfileEvents,
    attribution: &Attribution,
    eager: &[Option<ModulePath>],
    replay: &ReplayOwners,
) -> Vec<ModuleTimeRow> {
    let mut rows: BTreeMap<(String, String, Option<u32>), ModuleTimeRow> = BTreeMap::new();
    for (i, k) in events.kernels.iter().enumerate() {
        if !k.is_gpu_work() {
            continue;
        }
        let owner: Option<&NodeOwner> = replay.owners[i].as_ref();
        let stage = owner
            .and_then(|o| o.region.clone())
            .or_else(|| attribution.kernel_stage[i].as_deref().map(str::to_string));
        let Some(stage) = stage else { continue };
        let (module, index) = if replay.replayed[i] {
            match owner {
                None => (UNMATCHED.to_string(), None),
                Some(o) => match &o.module {
                    Some(p) => (p.kind.clone(), p.index),
                    None => (OUTSIDE_MODULES.to_string(), None),
                },
            }
        } else {
            match &eager[i] {
                Some(p) => (p.kind.clone(), p.index),
                None => (OUTSIDE_MODULES.to_string(), None),
            }
        };
        let row = rows
            .entry((stage.clone(), module.clone(), index))
            .or_insert_with(|| ModuleTimeRow {
                stage,
                module,
                index,
                time_ns: 0,
                kernels: 0,
                replayed_ns: 0,
            });
        row.time_ns += k.duration_ns;
        row.kernels += 1;
        if replay.replayed[i] {
            row.replayed_ns += k.duration_ns;
        }
    }
    rows.into_values().collect()
}

/// How many user scopes named each of `stages` the pass has.
pub fn stage_runs(events: &ProfileEvents, stages: &[&str]) -> BTreeMap<String, u64> {
    stages
        .iter()
        .map(|s| {
            let n = events
                .ops
                .iter()
                .filter(|o| o.kind == HostKind::UserScope && &*o.name == *s)
                .count() as u64;
            (s.to_string(), n)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::capture_record::{CaptureRecord, GraphNode, NodeKind, REPLAY_OP_PREFIX};
    use crate::measure::graph_match::match_replays;
    use crate::measure::kineto_events::{DeviceKind, KernelRecord};
    use crate::measure::module_attr::kernel_modules;
    use crate::measure::op_tables::tests::host;

    fn kernel(name: &str, start: u64, dur: u64, corr: u64, op: u64) -> KernelRecord {
        KernelRecord {
            name: name.into(),
            kind: DeviceKind::Kernel,
            device_index: 0,
            stream: 7,
            start_ns: start,
            duration_ns: dur,
            correlation_id: corr,
            op_correlation_id: op,
        }
    }

    #[test]
    fn eager_and_replayed_work_land_in_their_modules_and_sum_to_the_stage() {
        // prefill (eager): module:layer[0].mlp.down ⊃ aten::mm (op 11) → gemm (30 ns), plus a
        // copy outside modules (5 ns). decode_step ⊃ replay#4 ⊃ cudaGraphLaunch (corr 90): two
        // replayed kernels, the first matched to lm_head, the second to nothing (renamed).
        let ops = vec![
            host("prefill", HostKind::UserScope, 0, 1000, 1),
            host("module:layer[0].mlp.down", HostKind::UserScope, 10, 100, 2),
            host("aten::mm", HostKind::Op, 20, 50, 11),
            host("cudaLaunchKernel", HostKind::Runtime, 30, 5, 80),
            host("aten::copy_", HostKind::Op, 200, 20, 12),
            host("cudaMemcpyAsync", HostKind::Runtime, 205, 5, 81),
            host("decode_step", HostKind::UserScope, 2000, 1000, 3),
            host(&format!("{REPLAY_OP_PREFIX}4"), HostKind::Op, 2010, 100, 13),
            host("cudaGraphLaunch", HostKind::Runtime, 2020, 10, 90),
        ];
        let mut copy = kernel("Memcpy HtoD", 300, 5, 81, 12);
        copy.kind = DeviceKind::Memcpy;
        let events = ProfileEvents {
            ops,
            kernels: vec![
                kernel("gemm", 100, 30, 80, 11),
                copy,
                kernel("lm_head_gemm", 2100, 40, 90, 0),
                kernel("other", 2150, 7, 90, 0),
            ],
        };
        let record = CaptureRecord {
            serial: 4,
            label: "decode".into(),
            nodes: vec![
                GraphNode {
                    kind: NodeKind::Kernel,
                    name: "lm_head_gemm".into(),
                    deps: vec![],
                    owner: NodeOwner {
                        region: None,
                        module: Some(ModulePath {
                            kind: "lm_head".into(),
                            index: None,
                        }),
                    },
                },
                GraphNode {
                    kind: NodeKind::Kernel,
                    name: "not_other".into(),
                    deps: vec![0],
                    owner: NodeOwner::default(),
                },
            ],
            error: None,
        };
        let a = Attribution::new(&events);
        let eager = kernel_modules(&events, &a);
        let replay = match_replays(&events, &a, &BTreeMap::from([(4, record)]));
        let rows = module_rows(&events, &a, &eager, &replay);
        let got: Vec<(&str, &str, Option<u32>, u64, u64)> = rows
            .iter()
            .map(|r| (&*r.stage, &*r.module, r.index, r.time_ns, r.replayed_ns))
            .collect();
        assert_eq!(
            got,
            [
                ("decode_step", UNMATCHED, None, 7, 7),
                ("decode_step", "lm_head", None, 40, 40),
                ("prefill", OUTSIDE_MODULES, None, 5, 0),
                ("prefill", "layer.mlp.down", Some(0), 30, 0),
            ]
        );
        assert_eq!(replay.mapping.mismatches_total, 1);
        assert_eq!(
            stage_runs(&events, &["decode_step", "prefill", "vision"]),
            BTreeMap::from([
                ("decode_step".into(), 1),
                ("prefill".into(), 1),
                ("vision".into(), 0)
            ])
        );
    }
}
