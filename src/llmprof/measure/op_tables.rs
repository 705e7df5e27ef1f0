//! Operator and kernel tables from a profile: host events nested by time on each thread, GPU work
//! attributed to the op that launched it (correlation ids) and to the enclosing user scope
//! (stage), self vs total times without double counting; `markdown` renders operators.md and
//! kernels.md. Pure.
use std::collections::HashMap;

use super::kineto_events::{charged_durations, HostKind, Name, ProfileEvents};
use crate::region::is_module_scope;

mod markdown;
pub use markdown::{render_kernels_md, render_operators_md, write_tables};

/// Who contains whom, and where each piece of GPU work belongs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attribution {
    /// For each host event: the innermost host event on the same thread that contains it.
    pub op_parent: Vec<Option<usize>>,
    /// For each host event: the innermost enclosing user scope (itself for a user scope), module
    /// scopes (`module:...`, measure/module_attr.rs) skipped.
    pub op_scope: Vec<Option<usize>>,
    /// For each device event: the host event it is charged to — the op that launched it
    /// (`op_correlation_id`), else the runtime call with the same CUPTI correlation id.
    pub kernel_owner: Vec<Option<usize>>,
    /// For each device event: its stage name — the owner's user scope, else the innermost GPU
    /// user annotation on the same device that contains it.
    pub kernel_stage: Vec<Option<Name>>,
    /// The runtime or driver calls, by the CUPTI correlation id their GPU work carries.
    pub launches: Launches,
    /// For each device event: its duration as charged to it, less any wait after an early start
    /// on its stream ([`charged_durations`]); computed once for every table that sums time.
    pub kernel_charged_ns: Vec<u64>,
}

/// The runtime or driver call that launched each piece of GPU work (by CUPTI correlation id).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Launches {
    by_correlation: HashMap<u64, usize>,
}

impl Launches {
    /// Index into `events.ops` of the call that launched `k`.
    pub fn of(&self, k: &crate::measure::kineto_events::KernelRecord) -> Option<usize> {
        if k.correlation_id == 0 {
            return None;
        }
        self.by_correlation.get(&k.correlation_id).copied()
    }
}

impl Attribution {
    pub fn new(events: &ProfileEvents) -> Self {
        let ops = &events.ops;
        let op_parent = nest_by_thread(events);
        let op_scope: Vec<Option<usize>> = (0..ops.len())
            .map(|i| {
                let mut cur = Some(i);
                while let Some(j) = cur {
                    // A module's scope labels work inside a stage; it is not a stage itself.
                    if ops[j].kind == HostKind::UserScope && !is_module_scope(&ops[j].name) {
                        return Some(j);
                    }
                    cur = op_parent[j];
                }
                None
            })
            .collect();

        let mut by_op_id: HashMap<u64, usize> = HashMap::new();
        let mut launches = Launches::default();
        for (i, op) in ops.iter().enumerate() {
            if op.correlation_id == 0 {
                continue;
            }
            match op.kind {
                HostKind::Op | HostKind::UserScope => by_op_id.entry(op.correlation_id),
                HostKind::Runtime | HostKind::Driver => {
                    launches.by_correlation.entry(op.correlation_id)
                }
            }
            .or_insert(i);
        }
        let gpu_scope = innermost_gpu_scopes(events, |k| !is_module_scope(&k.name));
        let mut kernel_owner = Vec::with_capacity(events.kernels.len());
        let mut kernel_stage = Vec::with_capacity(events.kernels.len());
        for (index, k) in events.kernels.iter().enumerate() {
            let owner = if k.is_gpu_work() {
                by_op_id
                    .get(&k.op_correlation_id)
                    .copied()
                    .filter(|&i| ops[i].kind == HostKind::Op)
                    .or_else(|| launches.of(k))
                    .or_else(|| by_op_id.get(&k.op_correlation_id).copied())
            } else {
                None
            };
            let stage = owner
                .and_then(|i| op_scope[i])
                .map(|s| ops[s].name.clone())
                .or_else(|| gpu_scope[index].map(|s| events.kernels[s].name.clone()));
            kernel_owner.push(owner);
            kernel_stage.push(stage);
        }
        Attribution {
            op_parent,
            op_scope,
            kernel_owner,
            kernel_stage,
            launches,
            kernel_charged_ns: charged_durations(&events.kernels),
        }
    }
}

/// For each device event that is GPU work: the shortest GPU user annotation on the same device
/// that contains it, among those `accept` takes. One sweep per device over events sorted by
/// start, with the annotations still open on a stack (they nest on the GPU timeline as their
/// host ranges do).
pub fn innermost_gpu_scopes(
    events: &ProfileEvents,
    accept: impl Fn(&crate::measure::kineto_events::KernelRecord) -> bool,
) -> Vec<Option<usize>> {
    let kernels = &events.kernels;
    let mut out = vec![None; kernels.len()];
    if kernels.iter().all(|k| k.is_gpu_work()) {
        return out;
    }
    let mut order: Vec<usize> = (0..kernels.len()).collect();
    // Per device by start; on ties annotations (longest first) before the work they contain.
    order.sort_by_key(|&i| {
        let k = &kernels[i];
        (
            k.device_index,
            k.start_ns,
            k.is_gpu_work(),
            std::cmp::Reverse(k.duration_ns),
        )
    });
    let mut open: Vec<usize> = Vec::new();
    let mut device = None;
    for i in order {
        let k = &kernels[i];
        if device != Some(k.device_index) {
            open.clear();
            device = Some(k.device_index);
        }
        open.retain(|&s| kernels[s].end_ns() >= k.start_ns);
        if !k.is_gpu_work() {
            if accept(k) {
                open.push(i);
            }
            continue;
        }
        out[i] = open
            .iter()
            .rev()
            .copied()
            .filter(|&s| kernels[s].end_ns() >= k.end_ns())
            .min_by_key(|&s| kernels[s].duration_ns);
    }
    out
}

/// Parent of each host event: per thread, sort by start (longer first on ties) and keep a stack
/// of open events; an event's parent is the innermost open event that contains it.
fn nest_by_thread(events: &ProfileEvents) -> Vec<Option<usize>> {
    let ops = &events.ops;
    let mut order: Vec<usize> = (0..ops.len()).collect();
    // User scopes open before ops and ops before runtime calls when they start together.
    let rank = |k: HostKind| match k {
        HostKind::UserScope => 0,
        HostKind::Op => 1,
        HostKind::Runtime => 2,
        HostKind::Driver => 3,
    };
    order.sort_by_key(|&i| {
        let o = &ops[i];
        (
            o.thread_id,
            o.start_ns,
            std::cmp::Reverse(o.duration_ns),
            rank(o.kind),
        )
    });
    let mut parent = vec![None; ops.len()];
    let mut stack: Vec<usize> = Vec::new();
    let mut thread = None;
    for i in order {
        let o = &ops[i];
        if thread != Some(o.thread_id) {
            stack.clear();
            thread = Some(o.thread_id);
        }
        while let Some(&top) = stack.last() {
            let t = &ops[top];
            if t.start_ns <= o.start_ns && o.end_ns() <= t.end_ns() {
                break;
            }
            stack.pop();
        }
        parent[i] = stack.last().copied();
        stack.push(i);
    }
    parent
}

/// One row of the operator table (all instances of one name and kind), times in ns.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct OperatorRow {
    pub name: String,
    pub kind: HostKind,
    pub calls: u64,
    /// Duration minus the durations of the host events directly inside it.
    pub self_cpu_ns: u64,
    /// Durations of the outermost instances only (an `aten::sum` inside an `aten::sum` is not
    /// counted twice).
    pub total_cpu_ns: u64,
    /// GPU work (kernels, memcpy, memset) charged directly to this op.
    pub self_cuda_ns: u64,
    /// Self CUDA of the op and of everything nested in it, outermost instances only.
    pub total_cuda_ns: u64,
    pub flops: u64,
}

/// One row of the kernel table: one kernel name within one stage, times in ns. kernels.json is a
/// list of these (stage 2 reads it back to pick its ncu targets).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct KernelRow {
    /// Enclosing user scope (stage); `None` when the kernel ran outside every scope.
    pub stage: Option<String>,
    pub name: String,
    pub calls: u64,
    pub total_ns: u64,
    pub mean_ns: f64,
    /// total_ns ÷ the summed duration of all GPU work in the profile (kernels, memcpy, memset).
    pub share_of_gpu: f64,
    /// The modules that ran it in this stage, most time first (module kinds summed over layers,
    /// from the Kineto pass's module attribution: docs/modules.md); empty where there is none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub modules: Vec<String>,
}

/// How a table names the modules of a kernel row: the one with the most time, and `+N` for the
/// others; `None` without any.
pub fn modules_label(modules: &[String]) -> Option<String> {
    match modules {
        [] => None,
        [one] => Some(one.clone()),
        [first, rest @ ..] => Some(format!("{first} +{}", rest.len())),
    }
}

/// Operator table (user scopes excluded: they are stages), sorted by self CUDA time, then
/// total CPU time, then name.
pub fn operator_table(events: &ProfileEvents, attribution: &Attribution) -> Vec<OperatorRow> {
    let ops = &events.ops;
    let n = ops.len();
    let mut self_cuda = vec![0u64; n];
    for (k, owner) in events.kernels.iter().zip(&attribution.kernel_owner) {
        if let Some(i) = owner {
            self_cuda[*i] += k.duration_ns;
        }
    }
    let mut child_cpu = vec![0u64; n];
    let mut depth = vec![0u32; n];
    for i in 0..n {
        let mut d = 0;
        let mut cur = attribution.op_parent[i];
        while let Some(p) = cur {
            d += 1;
            cur = attribution.op_parent[p];
        }
        depth[i] = d;
        if let Some(p) = attribution.op_parent[i] {
            child_cpu[p] += ops[i].duration_ns;
        }
    }
    // Subtree CUDA: add each node into its parent, deepest first.
    let mut total_cuda = self_cuda.clone();
    let mut by_depth: Vec<usize> = (0..n).collect();
    by_depth.sort_by_key(|&i| std::cmp::Reverse(depth[i]));
    for &i in &by_depth {
        if let Some(p) = attribution.op_parent[i] {
            total_cuda[p] += total_cuda[i];
        }
    }
    let has_same_name_ancestor = |i: usize| {
        let mut cur = attribution.op_parent[i];
        while let Some(p) = cur {
            if ops[p].name == ops[i].name && ops[p].kind == ops[i].kind {
                return true;
            }
            cur = attribution.op_parent[p];
        }
        false
    };

    let mut rows: Vec<OperatorRow> = Vec::new();
    let mut index: HashMap<(&str, HostKind), usize> = HashMap::new();
    for (i, op) in ops.iter().enumerate() {
        if op.kind == HostKind::UserScope {
            continue;
        }
        let r = *index.entry((&*op.name, op.kind)).or_insert_with(|| {
            rows.push(OperatorRow {
                name: op.name.to_string(),
                kind: op.kind,
                calls: 0,
                self_cpu_ns: 0,
                total_cpu_ns: 0,
                self_cuda_ns: 0,
                total_cuda_ns: 0,
                flops: 0,
            });
            rows.len() - 1
        });
        let row = &mut rows[r];
        row.calls += 1;
        row.self_cpu_ns += op.duration_ns.saturating_sub(child_cpu[i]);
        row.self_cuda_ns += self_cuda[i];
        row.flops += op.flops;
        if !has_same_name_ancestor(i) {
            row.total_cpu_ns += op.duration_ns;
            row.total_cuda_ns += total_cuda[i];
        }
    }
    rows.sort_by(|a, b| {
        b.self_cuda_ns
            .cmp(&a.self_cuda_ns)
            .then(b.total_cpu_ns.cmp(&a.total_cpu_ns))
            .then(a.name.cmp(&b.name))
    });
    rows
}

/// Kernel table (GPU work only, grouped by stage and name), sorted by total time, then name.
pub fn kernel_table(events: &ProfileEvents, attribution: &Attribution) -> Vec<KernelRow> {
    let gpu_total: u64 = events
        .kernels
        .iter()
        .filter(|k| k.is_gpu_work())
        .map(|k| k.duration_ns)
        .sum();
    let mut rows: Vec<KernelRow> = Vec::new();
    let mut index: HashMap<(Option<&str>, &str), usize> = HashMap::new();
    for (k, stage) in events.kernels.iter().zip(&attribution.kernel_stage) {
        if !k.is_gpu_work() {
            continue;
        }
        let r = *index
            .entry((stage.as_deref(), &*k.name))
            .or_insert_with(|| {
                rows.push(KernelRow {
                    stage: stage.as_deref().map(String::from),
                    name: k.name.to_string(),
                    calls: 0,
                    total_ns: 0,
                    mean_ns: 0.0,
                    share_of_gpu: 0.0,
                    modules: Vec::new(),
                });
                rows.len() - 1
            });
        rows[r].calls += 1;
        rows[r].total_ns += k.duration_ns;
    }
    for row in &mut rows {
        row.mean_ns = row.total_ns as f64 / row.calls as f64;
        row.share_of_gpu = if gpu_total == 0 {
            0.0
        } else {
            row.total_ns as f64 / gpu_total as f64
        };
    }
    rows.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(a.name.cmp(&b.name)));
    rows
}

#[cfg(test)]
pub(crate) mod tests;
