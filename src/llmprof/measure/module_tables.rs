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
/// layers, each event at its charged duration (`Attribution::kernel_charged_ns`: a kernel that started
/// early under programmatic dependent launch is charged from the end of the work ahead of it).
/// Work outside every stage is left out.
pub fn module_rows(
    events: &ProfileEvents,
    attribution: &Attribution,
    eager: &[Option<ModulePath>],
    replay: &ReplayOwners,
) -> (Vec<ModuleTimeRow>, Vec<ModuleKernelRow>) {
    let mut rows = RowMap::new();
    let mut kernels: BTreeMap<(String, String, String), ModuleKernelRow> = BTreeMap::new();
    let owners = event_modules(events, attribution, eager, replay);
    let charged = &attribution.kernel_charged_ns;
    for (i, k) in events.kernels.iter().enumerate() {
        let Some((stage, module, index)) = owners[i].clone() else {
            continue;
        };
        let row = row_of(&mut rows, &stage, &module, index);
        row.time_ns += charged[i];
        row.kernels += 1;
        if replay.replayed[i] {
            row.replayed_ns += charged[i];
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
        kr.total_ns += charged[i];
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
/// `(outside modules)`. `kernels` counts the operators whose innermost module scope it is (for
/// `(outside modules)`, the stage's operators outside every module: on a loaded CPU a stage's
/// time outside its modules also holds the thread's waits between them, its operators do not).
/// The rows of a stage add up to its scopes' own durations.
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
    // The stage scope around `i`: its innermost scope, or the nearest stage above a scope that is
    // not one (a user scope of the workload's own inside a stage).
    let stage_of = |i: usize| -> Option<usize> {
        let mut scope = attribution.op_scope[i];
        while let Some(s) = scope {
            if is_stage(s) {
                return Some(s);
            }
            scope = attribution.op_parent[s].and_then(|p| attribution.op_scope[p]);
        }
        None
    };
    let mut top_level_ns: BTreeMap<usize, u64> = BTreeMap::new();
    let mut outside_ops: BTreeMap<usize, u64> = BTreeMap::new();
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
            match module_parent(i) {
                Some(p) => op_count[p] += 1,
                None => {
                    if let Some(stage) = stage_of(i) {
                        *outside_ops.entry(stage).or_default() += 1;
                    }
                }
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
        let outside = outside_ops.get(&stage).copied().unwrap_or(0);
        if rest > 0 || outside > 0 {
            add(&ops[stage].name, OUTSIDE_MODULES, None, rest, outside);
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
mod tests;
