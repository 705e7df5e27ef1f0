//! Which module launched each kernel stage 2 profiles, and the useful FLOPs that follow from it
//! (#41 item 4). Stage 1's module attribution (measurements.json `kineto.modules`: each module's
//! kernels per stage) names the modules behind each kernel base name; the model's analytic work
//! of one decode step (`kineto.decode_step_modules`) gives each module's FLOPs. A launch gets
//! useful FLOPs only where that is exact:
//! - one module launched the kernel, and the kernel is that module's only launch per instance
//!   (a module of several kernels, such as split-KV attention, has FLOPs no one kernel owns);
//! - several modules launched it (one GEMV kernel for q, o and down): among those of them that
//!   are linear (a weight of at least 1 MiB) and single-kernel, the bytes the launch read pick
//!   the module.
//!
//! Everything else is named with its module and "no useful FLOPs", with the reason.
use std::collections::BTreeMap;

use super::useful::{KernelMatch, UsefulFlops};
use crate::measure::kernel_names::base_name;
use crate::measure::module_tables::{ModuleProfile, OUTSIDE_MODULES, UNMATCHED};
use crate::model::module_work::ModuleWork;
use crate::region::DECODE_STEP;

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

/// One module kind in one stage: its instances, launches and work per instance.
struct ModuleFacts {
    instances: usize,
    /// Distinct kernels and launches per run of the stage.
    kernels: Vec<String>,
    launches_per_run: f64,
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
                launches_per_run: 0.0,
                flops: (stage == DECODE_STEP.nvtx_name() && !of.is_empty() && uniform)
                    .then(|| mean(&|w| w.flops)),
                weight_bytes: mean(&|w| w.weight_bytes),
            }
        });
        if !f.kernels.contains(&k.name) {
            f.kernels.push(k.name.clone());
        }
        f.launches_per_run += k.calls as f64 / runs;
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
    // A module's FLOPs belong to a kernel only when it is the module's one launch per instance.
    let single = |m: &str| -> Result<f64, String> {
        let f = &facts[m];
        let per_instance = f.launches_per_run / f.instances.max(1) as f64;
        match f.flops {
            None if stage != DECODE_STEP.nvtx_name() => Err(format!(
                "analytic work is known for the {} stage only",
                DECODE_STEP.nvtx_name()
            )),
            None => Err(format!("{m}: its instances differ in work, or it has none")),
            Some(fl) if fl <= 0.0 => Err(format!("{m} has no analytic FLOPs")),
            Some(_) if f.kernels.len() > 1 || (per_instance - 1.0).abs() > 1e-6 => Err(format!(
                "{m} launches {per_instance:.3} kernels per instance ({} kinds): its FLOPs are not \
                 split among them",
                f.kernels.len()
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
            "launched by {} modules, none a single-kernel linear layer",
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
