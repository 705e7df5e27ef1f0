//! Replayed kernels matched to the nodes of their graph's capture record, so that each gets the
//! module that launched it at capture (#41, docs/design/module-attribution.md §2.4–2.5). A
//! replay is the GPU work of one graph launch (the events carrying the launch's correlation),
//! found under its replay op (`llmprof::graph_replay#<serial>`). Its events, in start order, are
//! walked against the record's kernels in dependency order: each kernel takes the ready node
//! whose kernel name equals its own (a node without a name matches any and is counted
//! unchecked). Copies and memsets carry no name and look alike, so each takes the first node of
//! its kind not taken yet; those the trace does not show are counted. At the first event no node
//! explains, the walk stops for that replay: a mismatch is reported with its position, never
//! guessed past, and the replay's remaining events stay unmatched (their time still counts).
//! Pure.
use super::capture_record::{replay_serial, CaptureRecord, NodeKind, NodeOwner};
use super::kineto_events::{DeviceKind, ProfileEvents};
use super::op_tables::Attribution;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// Mismatches kept with their details; the rest are only counted.
const KEPT_MISMATCHES: usize = 20;

/// Where a replay stopped matching.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mismatch {
    pub serial: u64,
    pub label: String,
    /// The replay's position among all replays of this graph in the trace (0-based).
    pub replay: u64,
    /// The event's position in its replay (0-based).
    pub position: usize,
    /// Names of the nodes ready there (at most 3).
    pub expected: Vec<String>,
    pub found: String,
}

/// How the replays of a trace matched their records.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GraphMapping {
    /// Distinct graphs replayed.
    pub graphs: u32,
    /// ... of which had no record (captured before recording began, or past the kept ones).
    pub graphs_without_record: u32,
    pub replays: u64,
    /// Replays whose every event matched a node.
    pub replays_matched: u64,
    pub kernels_matched: u64,
    pub kernels_unmatched: u64,
    pub unmatched_ns: u64,
    /// Copy and memset nodes with no event in the trace.
    pub copies_not_traced: u64,
    /// Kernels matched to a node the driver gave no name for.
    pub names_unchecked: u64,
    /// Kernel nodes left over after a replay's events ran out.
    pub nodes_missing: u64,
    pub mismatches: Vec<Mismatch>,
    pub mismatches_total: u64,
}

/// For each device event of the trace: the owner its capture recorded (replayed work that
/// matched), else `None`; plus how the matching went.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReplayOwners {
    pub owners: Vec<Option<NodeOwner>>,
    /// For each device event: whether it was replayed from a graph (matched or not).
    pub replayed: Vec<bool>,
    pub mapping: GraphMapping,
}

fn node_kind_of(kind: DeviceKind) -> Option<NodeKind> {
    match kind {
        DeviceKind::Kernel => Some(NodeKind::Kernel),
        DeviceKind::Memcpy => Some(NodeKind::Memcpy),
        DeviceKind::Memset => Some(NodeKind::Memset),
        DeviceKind::UserScope => None,
    }
}

/// A name without whitespace (CUPTI and the driver's demangler may space templates apart).
fn normalised(name: &str) -> String {
    name.chars().filter(|c| !c.is_whitespace()).collect()
}

/// The graph serial of a device event's replay op, if it was replayed: its owner is the replay
/// op itself (Kineto links the launched work to the op around the launch) or the graph launch
/// inside it.
fn replay_of(events: &ProfileEvents, attribution: &Attribution, i: usize) -> Option<u64> {
    let mut cur = attribution.kernel_owner[i];
    while let Some(op) = cur {
        if let Some(serial) = replay_serial(&events.ops[op].name) {
            return Some(serial);
        }
        cur = attribution.op_parent[op];
    }
    None
}

/// The record's kernels with their dependencies on other kernels (through any other nodes
/// between them), and its copies and memsets. Copies carry no name to check and do not gate
/// the kernels: many look alike (a vision graph has tens of memsets), so which one an event is
/// cannot be told, and a trace may leave some out.
struct WorkGraph<'a> {
    record: &'a CaptureRecord,
    kernels: Vec<usize>,
    /// Per kernel: indices (into `kernels`) of the kernels it waits for.
    deps: Vec<Vec<usize>>,
    names: Vec<String>,
    mangled: Vec<String>,
    /// Memcpy and memset nodes, by node index.
    copies: Vec<usize>,
}

impl<'a> WorkGraph<'a> {
    fn new(record: &'a CaptureRecord) -> Self {
        let nodes = &record.nodes;
        let kernels: Vec<usize> = (0..nodes.len())
            .filter(|&i| nodes[i].kind == NodeKind::Kernel)
            .collect();
        let copies = (0..nodes.len())
            .filter(|&i| matches!(nodes[i].kind, NodeKind::Memcpy | NodeKind::Memset))
            .collect();
        let position: HashMap<usize, usize> =
            kernels.iter().enumerate().map(|(p, &n)| (n, p)).collect();
        let deps = kernels
            .iter()
            .map(|&n| {
                let mut found = Vec::new();
                let mut stack: Vec<usize> = nodes[n].deps.iter().map(|&d| d as usize).collect();
                let mut seen = std::collections::HashSet::new();
                while let Some(d) = stack.pop() {
                    if d >= nodes.len() || !seen.insert(d) {
                        continue;
                    }
                    match position.get(&d) {
                        Some(&p) => found.push(p),
                        None => stack.extend(nodes[d].deps.iter().map(|&x| x as usize)),
                    }
                }
                found
            })
            .collect();
        let names = kernels
            .iter()
            .map(|&n| normalised(&nodes[n].name))
            .collect();
        let mangled = kernels
            .iter()
            .map(|&n| normalised(&nodes[n].mangled))
            .collect();
        WorkGraph {
            record,
            kernels,
            deps,
            names,
            mangled,
            copies,
        }
    }

    fn kernel(&self, p: usize) -> &super::capture_record::GraphNode {
        &self.record.nodes[self.kernels[p]]
    }
}

/// One replay's walk: the owner of each event (in `events` order) until the first mismatch.
struct Walk {
    owners: Vec<Option<NodeOwner>>,
    mismatch: Option<(usize, Vec<String>, String)>,
    unchecked: u64,
    copies_left: u64,
    kernels_left: u64,
}

/// One replayed event: its kind, name and stream.
type Event = (NodeKind, String, i64);

fn walk(g: &WorkGraph, events: &[Event]) -> Walk {
    let n = g.kernels.len();
    let mut waiting: Vec<usize> = g.deps.iter().map(Vec::len).collect();
    let mut dependents = vec![Vec::new(); n];
    for (p, ds) in g.deps.iter().enumerate() {
        for &d in ds {
            dependents[d].push(p);
        }
    }
    let mut ready: std::collections::BTreeSet<usize> =
        (0..n).filter(|&p| waiting[p] == 0).collect();
    let mut kernels_done = 0usize;
    let mut copies_used = vec![false; g.copies.len()];
    let mut out = Walk {
        owners: Vec::with_capacity(events.len()),
        mismatch: None,
        unchecked: 0,
        copies_left: 0,
        kernels_left: 0,
    };
    // The kernel last matched on each stream: a graph's branches run on streams of their own,
    // and where two branches launch kernels of one name, the node that follows the stream's
    // last one is the branch's.
    let mut last_on_stream: HashMap<i64, usize> = HashMap::new();
    // The next kernel's name on each event's stream, to tell apart two ready nodes of one name
    // where a stream has no kernel matched yet: the node whose dependent has that name.
    let mut next_on_stream: Vec<Option<String>> = vec![None; events.len()];
    let mut seen: HashMap<i64, String> = HashMap::new();
    for (pos, (kind, name, stream)) in events.iter().enumerate().rev() {
        if *kind == NodeKind::Kernel {
            next_on_stream[pos] = seen.insert(*stream, normalised(name));
        }
    }
    for (pos, (kind, name, stream)) in events.iter().enumerate() {
        let name = normalised(name);
        if *kind != NodeKind::Kernel {
            // The first copy node of its kind not taken yet.
            let c = (0..g.copies.len())
                .find(|&c| !copies_used[c] && g.record.nodes[g.copies[c]].kind == *kind);
            match c {
                Some(c) => {
                    copies_used[c] = true;
                    out.owners
                        .push(Some(g.record.nodes[g.copies[c]].owner.clone()));
                }
                None => {
                    out.mismatch = Some((pos, vec![format!("no {kind:?} node left")], name));
                    return out;
                }
            }
            continue;
        }
        let fits = |p: usize| g.names[p] == name || g.mangled[p] == name || g.names[p].is_empty();
        let follows = |p: usize| {
            last_on_stream
                .get(stream)
                .is_some_and(|last| g.deps[p].contains(last))
        };
        let leads_on = |p: usize| {
            next_on_stream[pos].as_ref().is_some_and(|next| {
                dependents[p]
                    .iter()
                    .any(|&q| g.names[q] == *next || g.mangled[q] == *next)
            })
        };
        let candidates: Vec<usize> = ready.iter().copied().filter(|&p| fits(p)).collect();
        let hit = match candidates.len() {
            0 | 1 => candidates.first().copied(),
            _ => candidates
                .iter()
                .copied()
                .find(|&p| follows(p))
                .or_else(|| candidates.iter().copied().find(|&p| leads_on(p)))
                .or(candidates.first().copied()),
        };
        let Some(p) = hit else {
            let expected = ready
                .iter()
                .take(3)
                .map(|&p| g.kernel(p).name.clone())
                .collect();
            out.mismatch = Some((pos, expected, name));
            return out;
        };
        if g.names[p].is_empty() {
            out.unchecked += 1;
        }
        out.owners.push(Some(g.kernel(p).owner.clone()));
        last_on_stream.insert(*stream, p);
        ready.remove(&p);
        kernels_done += 1;
        for &q in &dependents[p] {
            waiting[q] -= 1;
            if waiting[q] == 0 {
                ready.insert(q);
            }
        }
    }
    out.kernels_left = (n - kernels_done) as u64;
    out.copies_left = copies_used.iter().filter(|u| !**u).count() as u64;
    out
}

/// Matches every replayed device event of `events` against `records` (by graph serial).
pub fn match_replays(
    events: &ProfileEvents,
    attribution: &Attribution,
    records: &BTreeMap<u64, CaptureRecord>,
) -> ReplayOwners {
    let k = &events.kernels;
    // Charged as the module rows charge them (the unmatched share is of their replayed time).
    let charged = &attribution.kernel_charged_ns;
    let mut out = ReplayOwners {
        owners: vec![None; k.len()],
        replayed: vec![false; k.len()],
        mapping: GraphMapping::default(),
    };
    // Replays: the work of one launch carries the launch's CUPTI correlation id.
    let mut by_launch: HashMap<(u64, u64), Vec<usize>> = HashMap::new();
    for (i, e) in k.iter().enumerate() {
        if !e.is_gpu_work() {
            continue;
        }
        if let Some(serial) = replay_of(events, attribution, i) {
            out.replayed[i] = true;
            by_launch
                .entry((serial, e.correlation_id))
                .or_default()
                .push(i);
        }
    }
    // In the order the replays ran: (serial, first start) → events.
    let replays: BTreeMap<(u64, u64, u64), Vec<usize>> = by_launch
        .into_iter()
        .map(|((serial, corr), idx)| {
            let first = idx.iter().map(|&i| k[i].start_ns).min().unwrap_or(0);
            ((serial, first, corr), idx)
        })
        .collect();
    let mut graphs: BTreeMap<u64, Option<WorkGraph>> = BTreeMap::new();
    let mut replay_no: HashMap<u64, u64> = HashMap::new();
    let m = &mut out.mapping;
    for ((serial, _, _), mut idx) in replays {
        idx.sort_by_key(|&i| (k[i].start_ns, k[i].end_ns()));
        let g = graphs.entry(serial).or_insert_with(|| {
            records
                .get(&serial)
                .filter(|r| r.error.is_none())
                .map(WorkGraph::new)
        });
        let nth = replay_no.entry(serial).or_insert(0);
        let this_replay = *nth;
        *nth += 1;
        m.replays += 1;
        let unmatched = |m: &mut GraphMapping, from: usize| {
            m.kernels_unmatched += (idx.len() - from) as u64;
            m.unmatched_ns += idx[from..].iter().map(|&i| charged[i]).sum::<u64>();
        };
        let Some(g) = g else {
            unmatched(m, 0);
            continue;
        };
        let seq: Vec<Event> = idx
            .iter()
            .map(|&i| {
                let kind = node_kind_of(k[i].kind).expect("GPU work");
                (kind, k[i].name.to_string(), k[i].stream)
            })
            .collect();
        let w = walk(g, &seq);
        for (j, owner) in w.owners.iter().enumerate() {
            out.owners[idx[j]] = owner.clone();
        }
        m.kernels_matched += w.owners.len() as u64;
        m.names_unchecked += w.unchecked;
        m.copies_not_traced += w.copies_left;
        match w.mismatch {
            Some((position, expected, found)) => {
                unmatched(m, position);
                m.mismatches_total += 1;
                if m.mismatches.len() < KEPT_MISMATCHES {
                    m.mismatches.push(Mismatch {
                        serial,
                        label: g.record.label.clone(),
                        replay: this_replay,
                        position,
                        expected,
                        found,
                    });
                }
            }
            None => {
                m.nodes_missing += w.kernels_left;
                if w.kernels_left == 0 {
                    m.replays_matched += 1;
                }
            }
        }
    }
    m.graphs = graphs.len() as u32;
    m.graphs_without_record = graphs.values().filter(|g| g.is_none()).count() as u32;
    out
}

#[cfg(test)]
mod tests;
