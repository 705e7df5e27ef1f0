//! GPU work grouped by the annotations that enclose it: `record_function` ranges and other user
//! scopes on the host (for work whose launch was recorded), else `gpu_user_annotation` ranges on
//! the GPU timeline. Which annotations count as regions is chosen by glob patterns (`--regions
//! 'prefill,decode*'`); by default every annotation but the iteration markers (`ProfilerStep#N`)
//! and llmprof's module scopes (`module:*`, asked for by `--regions 'module:*'`) does, and a
//! kernel's region is its innermost one. Work replayed from a CUDA graph is
//! recognised by its launch (`cudaGraphLaunch`, `cuGraphLaunch`) and counted per launch. Pure.
use std::collections::HashMap;

use regex::Regex;

use super::timeline::us;
use crate::measure::kineto_events::{HostKind, Name, ProfileEvents};
use crate::measure::op_tables::{innermost_gpu_scopes, Attribution};

/// The region of work that no chosen annotation encloses.
pub const NO_REGION: &str = "(no region)";

/// Which annotation names are regions.
#[derive(Debug, Clone)]
pub struct RegionFilter {
    patterns: Vec<Regex>,
    /// The patterns as given (empty: the default).
    pub given: Vec<String>,
}

impl RegionFilter {
    /// `patterns`: globs where `*` matches any text; empty = every annotation but ProfilerStep#N
    /// and module scopes.
    pub fn new(patterns: &[String]) -> Result<Self, String> {
        let mut compiled = Vec::new();
        for p in patterns {
            let p = p.trim();
            if p.is_empty() {
                return Err("--regions holds an empty pattern (give names or globs separated by commas, e.g. 'prefill,decode*')".into());
            }
            let re = format!("^{}$", regex::escape(p).replace(r"\*", ".*"));
            compiled.push(Regex::new(&re).map_err(|e| format!("--regions pattern {p:?}: {e}"))?);
        }
        Ok(RegionFilter {
            patterns: compiled,
            given: patterns.to_vec(),
        })
    }

    pub fn accepts(&self, name: &str) -> bool {
        if self.patterns.is_empty() {
            !is_iteration_marker(name) && !crate::region::is_module_scope(name)
        } else {
            self.patterns.iter().any(|p| p.is_match(name))
        }
    }
}

/// `ProfilerStep#12` → Some(12).
pub fn iteration_number(name: &str) -> Option<u64> {
    name.strip_prefix("ProfilerStep#")?.parse().ok()
}

fn is_iteration_marker(name: &str) -> bool {
    iteration_number(name).is_some()
}

/// Whether a runtime/driver call replays a CUDA graph.
pub fn is_graph_launch(name: &str) -> bool {
    name.contains("GraphLaunch")
}

/// Every piece of GPU work's region, and which came from graph replays.
pub struct RegionOf {
    /// Per `events.kernels` index: the region (None for annotations, which are not work).
    pub region: Vec<Option<Name>>,
    /// Per `events.kernels` index: the graph launch (index into `events.ops`) that replayed it.
    pub graph_launch: Vec<Option<usize>>,
}

/// Assigns regions: the innermost accepted host scope around the op or call that launched the
/// work, else the innermost accepted GPU annotation around the work, else [`NO_REGION`].
pub fn assign(
    events: &ProfileEvents,
    attribution: &Attribution,
    filter: &RegionFilter,
) -> RegionOf {
    let ops = &events.ops;
    let none: Name = Name::from(NO_REGION);
    // Per host event: its innermost accepted enclosing scope, memoised along parent chains
    // (u32: a trace holds millions of host events; UNKNOWN = not looked up, NONE = no scope).
    const UNKNOWN: u32 = u32::MAX;
    const NONE: u32 = u32::MAX - 1;
    let mut scope_memo: Vec<u32> = vec![UNKNOWN; ops.len()];
    let mut accepted_scope = |start: usize| -> Option<usize> {
        let mut chain = Vec::new();
        let mut cur = Some(start);
        let found = loop {
            let Some(i) = cur else { break None };
            match scope_memo[i] {
                UNKNOWN => {}
                NONE => break None,
                known => break Some(known as usize),
            }
            chain.push(i);
            if ops[i].kind == HostKind::UserScope && filter.accepts(&ops[i].name) {
                break Some(i);
            }
            cur = attribution.op_parent[i];
        };
        let memo = found
            .and_then(|f| u32::try_from(f).ok())
            .filter(|&f| f < NONE)
            .unwrap_or(NONE);
        if found.is_none() || memo != NONE {
            for i in chain {
                scope_memo[i] = memo;
            }
        }
        found
    };
    let gpu_scope = innermost_gpu_scopes(events, |k| filter.accepts(&k.name));
    let mut region = Vec::with_capacity(events.kernels.len());
    let mut graph_launch = Vec::with_capacity(events.kernels.len());
    for (k, kernel) in events.kernels.iter().enumerate() {
        if !kernel.is_gpu_work() {
            region.push(None);
            graph_launch.push(None);
            continue;
        }
        let launch = attribution.launches.of(kernel);
        graph_launch.push(launch.filter(|&l| is_graph_launch(&ops[l].name)));
        let host = attribution.kernel_owner[k].or(launch);
        let from_host = host
            .and_then(&mut accepted_scope)
            .map(|s| ops[s].name.clone());
        let from_gpu = || gpu_scope[k].map(|s| events.kernels[s].name.clone());
        region.push(Some(
            from_host.or_else(from_gpu).unwrap_or_else(|| none.clone()),
        ));
    }
    RegionOf {
        region,
        graph_launch,
    }
}

/// One region's GPU work, in microseconds.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RegionStat {
    pub region: String,
    /// Pieces of GPU work.
    pub calls: u64,
    /// Summed durations.
    pub total_us: f64,
    /// total ÷ all GPU work's summed durations.
    pub share_of_gpu: f64,
    /// Graph launches whose work lies in this region, and the work they replayed.
    pub graph_launches: u64,
    pub graph_calls: u64,
}

/// One kernel name within one region.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RegionKernel {
    pub region: String,
    pub name: String,
    pub calls: u64,
    pub total_us: f64,
}

/// The region table (by total time) and the kernels of each region (by total time);
/// `gpu_total`: all GPU work's summed durations, ns (the shares' denominator).
pub fn tables(
    events: &ProfileEvents,
    of: &RegionOf,
    gpu_total: u64,
) -> (Vec<RegionStat>, Vec<RegionKernel>) {
    let mut regions: HashMap<&str, (u64, u64, Vec<usize>, u64)> = HashMap::new();
    let mut pairs: HashMap<(&str, &str), (u64, u64)> = HashMap::new();
    for (k, kernel) in events.kernels.iter().enumerate() {
        let Some(region) = of.region[k].as_deref() else {
            continue;
        };
        let r = regions.entry(region).or_default();
        r.0 += 1;
        r.1 += kernel.duration_ns;
        if let Some(l) = of.graph_launch[k] {
            r.2.push(l);
            r.3 += 1;
        }
        let p = pairs.entry((region, &*kernel.name)).or_default();
        p.0 += 1;
        p.1 += kernel.duration_ns;
    }
    let mut stats: Vec<RegionStat> = regions
        .into_iter()
        .map(|(region, (calls, total, mut launches, graph_calls))| {
            launches.sort_unstable();
            launches.dedup();
            RegionStat {
                region: region.to_string(),
                calls,
                total_us: us(total),
                share_of_gpu: if gpu_total == 0 {
                    0.0
                } else {
                    total as f64 / gpu_total as f64
                },
                graph_launches: launches.len() as u64,
                graph_calls,
            }
        })
        .collect();
    stats.sort_by(|a, b| {
        b.total_us
            .total_cmp(&a.total_us)
            .then(a.region.cmp(&b.region))
    });
    let mut kernels: Vec<RegionKernel> = pairs
        .into_iter()
        .map(|((region, name), (calls, total))| RegionKernel {
            region: region.to_string(),
            name: name.to_string(),
            calls,
            total_us: us(total),
        })
        .collect();
    kernels.sort_by(|a, b| {
        a.region
            .cmp(&b.region)
            .then(b.total_us.total_cmp(&a.total_us))
            .then(a.name.cmp(&b.name))
    });
    (stats, kernels)
}
