//! Multirun expansion (Hydra's BasicSweeper): the cartesian product of every sweep override,
//! in command-line order, each job getting plain `key=value` overrides. Expands only; running
//! the jobs is the caller's business.
use crate::defaults::ConfigRepo;
use crate::error::{composition, ConfigError};
use crate::overrides::{Element, Override, Sweep, Value};
use crate::tree::limits::MAX_SWEEP_JOBS;
use std::path::Path;

/// The override lists of every job, in launch order.
pub fn expand(config_dir: &Path, parsed: &[Override]) -> Result<Vec<Vec<String>>, ConfigError> {
    let repo = ConfigRepo::new(config_dir);
    // Later overrides of the same key replace earlier ones (OrderedDict in Hydra).
    let mut keyed: indexmap::IndexMap<String, Vec<String>> = indexmap::IndexMap::new();
    for o in parsed {
        let key = o.key_element();
        let values: Vec<String> = match &o.value {
            Some(Value::Sweep(sweep)) => sweep_items(&repo, o, sweep)?
                .into_iter()
                .map(|e| format!("{key}={e}"))
                .collect(),
            _ => vec![o.input.clone()],
        };
        keyed.insert(key, values);
    }
    let total = keyed
        .values()
        .try_fold(1usize, |n, v| n.checked_mul(v.len()))
        .filter(|n| *n <= MAX_SWEEP_JOBS);
    if total.is_none() {
        return Err(composition(format!(
            "the sweep expands to more than {MAX_SWEEP_JOBS} jobs\n  fix: sweep over fewer values, or split the multirun"
        )));
    }
    let mut jobs: Vec<Vec<String>> = vec![Vec::new()];
    for values in keyed.values() {
        let mut next = Vec::with_capacity(jobs.len() * values.len());
        for job in &jobs {
            for v in values {
                let mut j = job.clone();
                j.push(v.clone());
                next.push(j);
            }
        }
        jobs = next;
    }
    Ok(jobs)
}

fn sweep_items(
    repo: &ConfigRepo,
    o: &Override,
    sweep: &Sweep,
) -> Result<Vec<Element>, ConfigError> {
    match sweep {
        Sweep::Choice { items, .. } | Sweep::Range { items } => Ok(items.clone()),
        Sweep::Glob { include, exclude } => {
            let options = repo.group_options(&o.key_or_group);
            let matches = |pats: &[String], name: &str| {
                pats.iter().any(|p| {
                    glob::Pattern::new(p)
                        .map(|g| g.matches(name))
                        .unwrap_or(false)
                })
            };
            let chosen: Vec<Element> = options
                .iter()
                .filter(|n| matches(include, n) && !matches(exclude, n))
                .map(|n| Element::Str {
                    text: n.clone(),
                    quote: None,
                })
                .collect();
            if chosen.is_empty() {
                return Err(composition(format!(
                    "glob in '{}' matched no option of group '{}' (options: {})",
                    o.input,
                    o.key_or_group,
                    options.join(", ")
                )));
            }
            Ok(chosen)
        }
        Sweep::Interval { .. } => Err(composition(format!(
            "BasicSweeper does not support sweep type : INTERVAL_SWEEP ('{}')",
            o.input
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loader::parse_overrides;

    #[test]
    fn cartesian_product_in_order() {
        let p = parse_overrides(&["a=1,2".into(), "b=x".into(), "c=range(0,2)".into()]).unwrap();
        let jobs = expand(Path::new("/nonexistent"), &p).unwrap();
        assert_eq!(
            jobs,
            vec![
                vec!["a=1", "b=x", "c=0"],
                vec!["a=1", "b=x", "c=1"],
                vec!["a=2", "b=x", "c=0"],
                vec!["a=2", "b=x", "c=1"],
            ]
        );
    }
}
