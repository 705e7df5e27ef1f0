//! GPU time by stage and module from one Kineto pass: every piece of GPU work is charged to its
//! stage and to the module that launched it, eagerly (the module scope above its launch,
//! measure/module_attr.rs) or at a graph's capture (its record, measure/graph_match.rs). Work in
//! a stage outside every module is `(outside modules)`; replayed work the matcher could not
//! place is `(unmatched)`; both stay in the sums, so a stage's rows add up to all its GPU work.
//! Pure.
use super::capture_record::NodeOwner;
use super::graph_match::{GraphMapping, ReplayOwners};
use super::kineto_events::{HostKind, ProfileEvents};
use super::module_attr::host_module;
use super::op_tables::{Attribution, KernelRow};
use super::step_timeline::StageTimeline;
use crate::region::{is_module_scope, ModulePath};
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
    /// FLOPs Kineto counted for the operators run in it (ops it has a formula for: mm, addmm,
    /// bmm, conv...); replayed graphs and llmprof's own kernels have no operators to count.
    #[serde(default)]
    pub kineto_flops: u64,
}

/// Which clock a module breakdown's times come from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimeSource {
    /// GPU work (kernels, copies, memsets) by module.
    #[default]
    Gpu,
    /// A pass without GPU work: the module scopes' host time.
    Host,
}

/// One kernel's GPU work within one module kind (summed over layers) of one stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModuleKernelRow {
    pub stage: String,
    pub module: String,
    /// The kernel's full (demangled) name.
    pub name: String,
    pub calls: u64,
    pub total_ns: u64,
}

/// The module breakdown of a Kineto pass.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModuleProfile {
    #[serde(default)]
    pub source: TimeSource,
    pub rows: Vec<ModuleTimeRow>,
    /// How many times each stage ran in the pass (its user scopes), to give times per step.
    pub stage_runs: BTreeMap<String, u64>,
    pub mapping: GraphMapping,
    /// Each stage's timeline (span, busy, gaps), per run.
    #[serde(default)]
    pub timelines: Vec<StageTimeline>,
    /// GPU work per (stage, module kind, kernel): which kernels each module runs.
    #[serde(default)]
    pub kernels: Vec<ModuleKernelRow>,
    /// Stages with other stages inside (a prefill holding vision): their timed mean includes
    /// those stages' time, their rows do not.
    #[serde(default)]
    pub nesting_stages: Vec<String>,
}

/// Each GPU event's (stage, module, layer index), `None` outside every stage: `eager` is each
/// device event's module from its scopes, `replay` the matcher's owners.
fn event_modules(
    events: &ProfileEvents,
    attribution: &Attribution,
    eager: &[Option<ModulePath>],
    replay: &ReplayOwners,
) -> Vec<Option<(String, String, Option<u32>)>> {
    events
        .kernels
        .iter()
        .enumerate()
        .map(|(i, k)| {
            if !k.is_gpu_work() {
                return None;
            }
            let owner: Option<&NodeOwner> = replay.owners[i].as_ref();
            let stage = owner
                .and_then(|o| o.region.clone())
                .or_else(|| attribution.kernel_stage[i].as_deref().map(str::to_string))?;
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
            Some((stage, module, index))
        })
        .collect()
}

/// Rows per (stage, module, index), and per (stage, module kind, kernel name) summed over
/// layers. Work outside every stage is left out.
pub fn module_rows(
    events: &ProfileEvents,
    attribution: &Attribution,
    eager: &[Option<ModulePath>],
    replay: &ReplayOwners,
) -> (Vec<ModuleTimeRow>, Vec<ModuleKernelRow>) {
    let mut rows = RowMap::new();
    let mut kernels: BTreeMap<(String, String, String), ModuleKernelRow> = BTreeMap::new();
    let owners = event_modules(events, attribution, eager, replay);
    for (i, k) in events.kernels.iter().enumerate() {
        let Some((stage, module, index)) = owners[i].clone() else {
            continue;
        };
        let row = row_of(&mut rows, &stage, &module, index);
        row.time_ns += k.duration_ns;
        row.kernels += 1;
        if replay.replayed[i] {
            row.replayed_ns += k.duration_ns;
        }
        let kr = kernels
            .entry((stage.clone(), module.clone(), k.name.to_string()))
            .or_insert_with(|| ModuleKernelRow {
                stage,
                module,
                name: k.name.to_string(),
                calls: 0,
                total_ns: 0,
            });
        kr.calls += 1;
        kr.total_ns += k.duration_ns;
    }
    add_kineto_flops(&mut rows, events, attribution);
    (
        rows.into_values().collect(),
        kernels.into_values().collect(),
    )
}

/// Rows keyed by (stage, module, layer index).
type RowMap = BTreeMap<(String, String, Option<u32>), ModuleTimeRow>;

/// The row of (`stage`, `module`, `index`), empty until something is added to it.
fn row_of<'a>(
    rows: &'a mut RowMap,
    stage: &str,
    module: &str,
    index: Option<u32>,
) -> &'a mut ModuleTimeRow {
    rows.entry((stage.to_string(), module.to_string(), index))
        .or_insert_with(|| ModuleTimeRow {
            stage: stage.to_string(),
            module: module.to_string(),
            index,
            time_ns: 0,
            kernels: 0,
            replayed_ns: 0,
            kineto_flops: 0,
        })
}

/// Adds Kineto's FLOP counts to `rows`, by the module scope above each counted operator (rows
/// created where an operator's module has none yet).
fn add_kineto_flops(rows: &mut RowMap, events: &ProfileEvents, attribution: &Attribution) {
    let ops = &events.ops;
    for (i, op) in ops.iter().enumerate() {
        if op.flops == 0 || op.kind != HostKind::Op {
            continue;
        }
        let Some(stage) = attribution.op_scope[i] else {
            continue;
        };
        let (module, index) = host_module(events, attribution, i)
            .map_or((OUTSIDE_MODULES.to_string(), None), |p| (p.kind, p.index));
        row_of(rows, &ops[stage].name, &module, index).kineto_flops += op.flops;
    }
}

/// Rows from host time, for a pass without GPU work (a CPU run): each module scope's self time
/// (its duration less the module scopes directly inside it), charged to the stage scope around
/// it; the rest of each scope of `stages` (less the stage scopes inside it) is
/// `(outside modules)`. `kernels` counts the operators whose innermost module scope it is. The
/// rows of a stage add up to its scopes' own durations.
pub fn host_module_rows(
    events: &ProfileEvents,
    attribution: &Attribution,
    stages: &[&str],
) -> Vec<ModuleTimeRow> {
    let ops = &events.ops;
    let is_module = |i: usize| ops[i].kind == HostKind::UserScope && is_module_scope(&ops[i].name);
    // The nearest module scope above `i` (not `i` itself), stopping at a stage scope.
    let module_parent = |i: usize| -> Option<usize> {
        let mut cur = attribution.op_parent[i];
        while let Some(p) = cur {
            if is_module(p) {
                return Some(p);
            }
            if ops[p].kind == HostKind::UserScope {
                return None;
            }
            cur = attribution.op_parent[p];
        }
        None
    };
    let mut child_ns = vec![0u64; ops.len()];
    let mut op_count = vec![0u64; ops.len()];
    let is_stage = |i: usize| ops[i].kind == HostKind::UserScope && stages.contains(&&*ops[i].name);
    let mut top_level_ns: BTreeMap<usize, u64> = BTreeMap::new();
    for (i, op) in ops.iter().enumerate() {
        if is_stage(i) {
            top_level_ns.entry(i).or_default();
            // A stage inside another: its time is its own, not the outer stage's.
            if let Some(outer) = attribution.op_parent[i].and_then(|p| attribution.op_scope[p]) {
                *top_level_ns.entry(outer).or_default() += op.duration_ns;
            }
        }
        if is_module(i) {
            match module_parent(i) {
                Some(p) => child_ns[p] += op.duration_ns,
                None => {
                    if let Some(stage) = attribution.op_scope[i] {
                        *top_level_ns.entry(stage).or_default() += op.duration_ns;
                    }
                }
            }
        } else if op.kind == HostKind::Op {
            if let Some(p) = module_parent(i) {
                op_count[p] += 1;
            }
        }
    }
    let mut rows = RowMap::new();
    let mut add = |stage: &str, module: &str, index: Option<u32>, ns: u64, ops: u64| {
        let row = row_of(&mut rows, stage, module, index);
        row.time_ns += ns;
        row.kernels += ops;
    };
    for i in (0..ops.len()).filter(|&i| is_module(i)) {
        let (Some(stage), Some(path)) = (
            attribution.op_scope[i],
            ModulePath::parse_scope(&ops[i].name),
        ) else {
            continue;
        };
        let own = ops[i].duration_ns.saturating_sub(child_ns[i]);
        add(&ops[stage].name, &path.kind, path.index, own, op_count[i]);
    }
    for (stage, inside) in top_level_ns.into_iter().filter(|(s, _)| is_stage(*s)) {
        let rest = ops[stage].duration_ns.saturating_sub(inside);
        if rest > 0 {
            add(&ops[stage].name, OUTSIDE_MODULES, None, rest, 0);
        }
    }
    add_kineto_flops(&mut rows, events, attribution);
    rows.into_values().collect()
}

/// Puts on each kernel-table row the modules that ran its kernel in its stage, most time first.
pub fn attach_modules(rows: &mut [KernelRow], kernels: &[ModuleKernelRow]) {
    let mut by_kernel: BTreeMap<(&str, &str), Vec<(&str, u64)>> = BTreeMap::new();
    for k in kernels {
        by_kernel
            .entry((&k.stage, &k.name))
            .or_default()
            .push((&k.module, k.total_ns));
    }
    for row in rows {
        let Some(stage) = row.stage.as_deref() else {
            continue;
        };
        if let Some(mods) = by_kernel.get_mut(&(stage, row.name.as_str())) {
            mods.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
            row.modules = mods.iter().map(|(m, _)| m.to_string()).collect();
        }
    }
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

/// Stages that ran only inside CUDA graphs captured with their regions open (a whole vision pass
/// in one graph) have no user scopes of their own: each replay of a graph whose capture ran the
/// stage counts as one run of it.
pub fn add_replayed_stage_runs(
    runs: &mut BTreeMap<String, u64>,
    events: &ProfileEvents,
    records: &BTreeMap<u64, crate::measure::capture_record::CaptureRecord>,
) {
    let scoped: std::collections::BTreeSet<String> = runs
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(s, _)| s.clone())
        .collect();
    for op in &events.ops {
        let Some(serial) = crate::measure::capture_record::replay_serial(&op.name) else {
            continue;
        };
        let Some(record) = records.get(&serial) else {
            continue;
        };
        let regions: std::collections::BTreeSet<&str> = record
            .nodes
            .iter()
            .filter_map(|n| n.owner.region.as_deref())
            .collect();
        for region in regions.into_iter().filter(|r| !scoped.contains(*r)) {
            *runs.entry(region.to_string()).or_default() += 1;
        }
    }
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
    fn kernel_rows_get_their_modules_most_time_first() {
        let row = |stage: Option<&str>, name: &str| KernelRow {
            stage: stage.map(str::to_string),
            name: name.into(),
            calls: 1,
            total_ns: 1,
            mean_ns: 1.0,
            share_of_gpu: 0.1,
            modules: Vec::new(),
        };
        let mk = |module: &str, name: &str, ns: u64| ModuleKernelRow {
            stage: "decode_step".into(),
            module: module.into(),
            name: name.into(),
            calls: 1,
            total_ns: ns,
        };
        let mut rows = vec![
            row(Some("decode_step"), "gemv"),
            row(Some("prefill"), "gemv"),
            row(None, "gemv"),
            row(Some("decode_step"), "rope"),
        ];
        attach_modules(
            &mut rows,
            &[
                mk("lm_head", "gemv", 5),
                mk("layer.attention.qkv", "gemv", 9),
                mk("layer.attention.rope_kv", "rope", 1),
            ],
        );
        assert_eq!(rows[0].modules, ["layer.attention.qkv", "lm_head"]);
        assert!(rows[1].modules.is_empty() && rows[2].modules.is_empty());
        assert_eq!(rows[3].modules, ["layer.attention.rope_kv"]);
    }

    #[test]
    fn host_rows_give_each_module_its_self_time_and_the_stage_the_rest() {
        // decode [0,300) ⊃ decode_step [0,100) ⊃ layer[0] [10,60) ⊃ attention [20,40) ⊃ mm;
        // lm_head [70,90).
        let ops = vec![
            host("decode", HostKind::UserScope, 0, 300, 1),
            host("decode_step", HostKind::UserScope, 0, 100, 2),
            host("module:layer[0]", HostKind::UserScope, 10, 50, 3),
            host("module:layer[0].attention", HostKind::UserScope, 20, 20, 4),
            host("aten::mm", HostKind::Op, 25, 5, 5),
            host("module:lm_head", HostKind::UserScope, 70, 20, 6),
        ];
        let mut events = ProfileEvents {
            ops,
            kernels: vec![],
        };
        events.ops[4].flops = 100; // aten::mm inside the attention
        let a = Attribution::new(&events);
        let rows = host_module_rows(&events, &a, &["decode", "decode_step", "prefill"]);
        let attention = rows.iter().find(|r| r.module == "layer.attention").unwrap();
        assert_eq!(attention.kineto_flops, 100);
        let got: Vec<(&str, &str, Option<u32>, u64, u64)> = rows
            .iter()
            .map(|r| (&*r.stage, &*r.module, r.index, r.time_ns, r.kernels))
            .collect();
        assert_eq!(
            got,
            [
                ("decode", OUTSIDE_MODULES, None, 200, 0),
                ("decode_step", OUTSIDE_MODULES, None, 30, 0),
                ("decode_step", "layer", Some(0), 30, 0),
                ("decode_step", "layer.attention", Some(0), 20, 1),
                ("decode_step", "lm_head", None, 20, 0),
            ]
        );
        let step: u64 = rows
            .iter()
            .filter(|r| r.stage == "decode_step")
            .map(|r| r.time_ns)
            .sum();
        assert_eq!(step, 100);
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
                    mangled: String::new(),
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
                    mangled: String::new(),
                    deps: vec![0],
                    owner: NodeOwner::default(),
                },
            ],
            error: None,
        };
        let mut events = events;
        events.ops[2].flops = 1_000; // aten::mm in layer[0].mlp.down
        events.ops[4].flops = 10; // aten::copy_ outside modules
        let a = Attribution::new(&events);
        let eager = kernel_modules(&events, &a);
        let replay = match_replays(&events, &a, &BTreeMap::from([(4, record)]));
        let (rows, kernels) = module_rows(&events, &a, &eager, &replay);
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
        let flops: Vec<u64> = rows.iter().map(|r| r.kineto_flops).collect();
        assert_eq!(flops, [0, 0, 10, 1_000]);
        let by_kernel: Vec<(&str, &str, &str, u64)> = kernels
            .iter()
            .map(|r| (&*r.stage, &*r.module, &*r.name, r.total_ns))
            .collect();
        assert_eq!(
            by_kernel,
            [
                ("decode_step", UNMATCHED, "other", 7),
                ("decode_step", "lm_head", "lm_head_gemm", 40),
                ("prefill", OUTSIDE_MODULES, "Memcpy HtoD", 5),
                ("prefill", "layer.mlp.down", "gemm", 30),
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

    #[test]
    fn stages_captured_inside_a_graph_count_its_replays_as_runs() {
        // Two replays of graph 7, whose capture ran sam twice (two views) and clip once inside
        // the vision scope; vision has scopes of its own and keeps its count.
        let ops = vec![
            host("vision", HostKind::UserScope, 0, 100, 1),
            host(&format!("{REPLAY_OP_PREFIX}7"), HostKind::Op, 10, 50, 2),
            host("vision", HostKind::UserScope, 200, 100, 3),
            host(&format!("{REPLAY_OP_PREFIX}7"), HostKind::Op, 210, 50, 4),
            host(&format!("{REPLAY_OP_PREFIX}9"), HostKind::Op, 400, 5, 5),
        ];
        let events = ProfileEvents {
            ops,
            kernels: vec![],
        };
        let node = |region: &str| GraphNode {
            kind: NodeKind::Kernel,
            name: "k".into(),
            mangled: String::new(),
            deps: vec![],
            owner: NodeOwner {
                region: Some(region.into()),
                module: None,
            },
        };
        let record = CaptureRecord {
            serial: 7,
            label: "vision".into(),
            nodes: vec![node("sam"), node("sam"), node("clip"), node("vision")],
            error: None,
        };
        let mut runs = stage_runs(&events, &["vision", "sam", "clip"]);
        add_replayed_stage_runs(&mut runs, &events, &BTreeMap::from([(7, record)]));
        assert_eq!(
            runs,
            BTreeMap::from([("clip".into(), 2), ("sam".into(), 2), ("vision".into(), 2)])
        );
    }
}
