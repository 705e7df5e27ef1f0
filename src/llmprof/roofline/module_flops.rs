//! Which module launched each kernel stage 2 profiles, and the useful FLOPs that follow from it
//! (#41 item 4). Stage 1's module attribution (measurements.json `kineto.modules`: each module's
//! kernels per stage) names the modules behind each kernel base name; the model's analytic work
//! of one decode step (`kineto.decode_step_modules`) gives each module's FLOPs.
//!
//! A module's FLOPs are charged to its main kernel: the one that takes at least
//! [`MAIN_KERNEL_SHARE`] of the module's GPU time, launched once per instance (the GEMV of
//! lm_head beside a copy of the logits, a split-K GEMM beside its reduction, a grouped GEMM beside
//! its set-up kernel). A module whose time is spread over several kernels (split-KV attention's
//! split and combine at small batches) has FLOPs no one kernel owns. A launch then gets useful
//! FLOPs where:
//! - one module launched the kernel and it is that module's main kernel;
//! - several modules launched it (one GEMV kernel for q, o and down): among those of them that
//!   are linear (a weight of at least 1 MiB) and whose main kernel it is, the bytes the launch
//!   read pick the module.
//!
//! Everything else is named with its module and "no useful FLOPs", with the reason.
use std::collections::BTreeMap;

use super::useful::{KernelMatch, UsefulFlops};
use crate::measure::kernel_names::base_name;
use crate::measure::module_tables::{ModuleProfile, OUTSIDE_MODULES, UNMATCHED};
use crate::model::module_work::ModuleWork;
use crate::region::DECODE_STEP;

/// The least share of its module's GPU time a kernel must take to be charged the module's FLOPs.
pub const MAIN_KERNEL_SHARE: f64 = 0.75;

/// Weights below this size are not matched by bytes read: activations and caches then make up
/// a large share of a kernel's traffic.
const MIN_WEIGHT_BYTES: f64 = 1024.0 * 1024.0;

/// What stage 2 knows of the kernels it profiles, from stage 1.
#[derive(Debug, Clone, Default)]
pub struct KernelOps {
    /// Useful-FLOP rules (tried in order).
    pub rules: Vec<UsefulFlops>,
    /// (stage, kernel base name) → the module kinds that launched it, most time first.
    pub modules: BTreeMap<(String, String), Vec<String>>,
    /// (stage, kernel base name) → why its launches get no useful FLOPs.
    pub no_flops: BTreeMap<(String, String), String>,
}

impl KernelOps {
    /// Rules only, no module knowledge (a user's own kernel → op mapping).
    pub fn from_rules(rules: Vec<UsefulFlops>) -> Self {
        KernelOps {
            rules,
            ..Default::default()
        }
    }

    /// The modules of kernel `name` in `stage`, as stage 1 saw them.
    pub fn modules_of(&self, stage: Option<&str>, name: &str) -> Option<&[String]> {
        let key = (stage?.to_string(), base_name(name));
        self.modules.get(&key).map(Vec::as_slice)
    }

    pub fn no_flops_reason(&self, stage: Option<&str>, name: &str) -> Option<&str> {
        let key = (stage?.to_string(), base_name(name));
        self.no_flops.get(&key).map(String::as_str)
    }
}

/// One module kind in one stage: its instances, kernels and work per instance.
struct ModuleFacts {
    instances: usize,
    /// Its kernels by base name: GPU ns and launches per run of the stage.
    kernels: Vec<(String, u64, f64)>,
    /// Mean analytic FLOPs and weight bytes of one instance; `None` where instances differ.
    flops: Option<f64>,
    weight_bytes: f64,
}

/// The kernel → module map and useful-FLOP rules of `profile` in `stages`; `work` is one decode
/// step's analytic work per module (only the decode step gets FLOPs).
pub fn kernel_ops(profile: &ModuleProfile, work: &[ModuleWork], stages: &[&str]) -> KernelOps {
    let mut ops = KernelOps::default();
    for &stage in stages {
        let runs = profile.stage_runs.get(stage).copied().unwrap_or(0).max(1) as f64;
        let facts = module_facts(profile, work, stage, runs);
        // base name → (module, ns), heaviest first.
        let mut by_base: BTreeMap<String, Vec<(String, u64)>> = BTreeMap::new();
        for k in profile.kernels.iter().filter(|k| k.stage == stage) {
            let mods = by_base.entry(base_name(&k.name)).or_default();
            match mods.iter_mut().find(|(m, _)| *m == k.module) {
                Some((_, ns)) => *ns += k.total_ns,
                None => mods.push((k.module.clone(), k.total_ns)),
            }
        }
        for (base, mut mods) in by_base {
            mods.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            let names: Vec<String> = mods.into_iter().map(|(m, _)| m).collect();
            let key = (stage.to_string(), base.clone());
            match useful_rules(stage, &base, &names, &facts) {
                Ok(rules) => ops.rules.extend(rules),
                Err(why) => {
                    ops.no_flops.insert(key.clone(), why);
                }
            }
            ops.modules.insert(key, names);
        }
    }
    ops
}

fn module_facts(
    profile: &ModuleProfile,
    work: &[ModuleWork],
    stage: &str,
    runs: f64,
) -> BTreeMap<String, ModuleFacts> {
    let mut out: BTreeMap<String, ModuleFacts> = BTreeMap::new();
    for k in profile.kernels.iter().filter(|k| k.stage == stage) {
        let f = out.entry(k.module.clone()).or_insert_with(|| {
            let instances = profile
                .rows
                .iter()
                .filter(|r| r.stage == stage && r.module == k.module)
                .count();
            let of: Vec<&ModuleWork> = work.iter().filter(|w| w.module == k.module).collect();
            let mean = |v: &dyn Fn(&ModuleWork) -> f64| {
                of.iter().map(|w| v(w)).sum::<f64>() / of.len().max(1) as f64
            };
            let uniform = of
                .iter()
                .all(|w| (w.flops - of[0].flops).abs() <= 1e-3 * of[0].flops.abs());
            ModuleFacts {
                instances,
                kernels: Vec::new(),
                flops: (stage == DECODE_STEP.nvtx_name() && !of.is_empty() && uniform)
                    .then(|| mean(&|w| w.flops)),
                weight_bytes: mean(&|w| w.weight_bytes),
            }
        });
        let base = base_name(&k.name);
        let launches = k.calls as f64 / runs;
        match f.kernels.iter_mut().find(|(b, _, _)| *b == base) {
            Some((_, ns, l)) => {
                *ns += k.total_ns;
                *l += launches;
            }
            None => f.kernels.push((base, k.total_ns, launches)),
        }
    }
    out
}

/// The rules giving launches of `base` in `stage` their useful FLOPs, or why there are none.
fn useful_rules(
    stage: &str,
    base: &str,
    modules: &[String],
    facts: &BTreeMap<String, ModuleFacts>,
) -> Result<Vec<UsefulFlops>, String> {
    let real: Vec<&String> = modules
        .iter()
        .filter(|m| *m != OUTSIDE_MODULES && *m != UNMATCHED)
        .collect();
    if real.is_empty() {
        return Err("launched outside every module".into());
    }
    // A module's FLOPs belong to its main kernel, launched once per instance.
    let single = |m: &str| -> Result<f64, String> {
        let f = &facts[m];
        let total: u64 = f.kernels.iter().map(|(_, ns, _)| ns).sum();
        let (ns, launches) = f
            .kernels
            .iter()
            .find(|(b, _, _)| b == base)
            .map_or((0, 0.0), |(_, ns, l)| (*ns, *l));
        let share = ns as f64 / total.max(1) as f64;
        let per_instance = launches / f.instances.max(1) as f64;
        match f.flops {
            None if stage != DECODE_STEP.nvtx_name() => Err(format!(
                "analytic work is known for the {} stage only",
                DECODE_STEP.nvtx_name()
            )),
            None => Err(format!("{m}: its instances differ in work, or it has none")),
            Some(fl) if fl <= 0.0 => Err(format!("{m} has no analytic FLOPs")),
            Some(_) if share < MAIN_KERNEL_SHARE => Err(format!(
                "{:.0} % of {m}'s GPU time, which {} kernels share: its FLOPs are charged to a \
                 kernel taking at least {:.0} %",
                100.0 * share,
                f.kernels.len(),
                100.0 * MAIN_KERNEL_SHARE
            )),
            Some(_) if (per_instance - 1.0).abs() > 1e-6 => Err(format!(
                "launched {per_instance:.3} times per instance of {m}: one launch's FLOPs are not \
                 known"
            )),
            Some(fl) => Ok(fl),
        }
    };
    let rule = |op: String, weight_bytes: Option<f64>, flops: f64| UsefulFlops {
        op,
        kernel: KernelMatch::Base {
            base: base.to_string(),
            weight_bytes,
        },
        nvtx_range: Some(stage.to_string()),
        flops_per_launch: flops,
    };
    if let [one] = real.as_slice() {
        return single(one).map(|fl| vec![rule(one.to_string(), None, fl)]);
    }
    // Several modules: only linear ones, told apart by the weight a launch read. Equal weights
    // (q and o) mean equal FLOPs; such modules share a rule named by all of them.
    let mut by_weight: Vec<(f64, f64, Vec<String>)> = Vec::new();
    for m in &real {
        let Ok(fl) = single(m) else { continue };
        let w = facts[m.as_str()].weight_bytes;
        if w < MIN_WEIGHT_BYTES {
            continue;
        }
        match by_weight.iter_mut().find(|(bw, _, _)| *bw == w) {
            Some((_, _, names)) => names.push(m.to_string()),
            None => by_weight.push((w, fl, vec![m.to_string()])),
        }
    }
    if by_weight.is_empty() {
        return Err(format!(
            "launched by {} modules, none a linear layer whose main kernel it is",
            real.len()
        ));
    }
    Ok(by_weight
        .into_iter()
        .map(|(w, fl, names)| rule(names.join("|"), Some(w), fl))
        .collect())
}

#[cfg(test)]
mod tests;
