//! Which run of A is compared with which run of B: two single runs pair up; the jobs of two
//! multirun roots pair up by the values of their sweep axes (the override keys whose value
//! differs between the jobs of a sweep), so a sweep on an H100 matches the same sweep on an H200
//! even though a fixed override (`hardware=…`) differs. Jobs without a partner are listed.
use super::load::{Input, Run};
use super::BadInput;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// One pair to compare; `label` is the job's axes (`runtime.batch_size=8`), empty for two
/// single runs.
#[derive(Debug)]
pub struct Pair<'a> {
    pub label: String,
    pub a: &'a Run,
    pub b: &'a Run,
}

pub fn pairs<'a>(
    left: &'a Input,
    right: &'a Input,
    a: &Path,
    b: &Path,
) -> Result<(Vec<Pair<'a>>, Vec<String>), BadInput> {
    match (left, right) {
        (Input::Single(x), Input::Single(y)) => Ok((
            vec![Pair {
                label: String::new(),
                a: x,
                b: y,
            }],
            Vec::new(),
        )),
        (Input::Sweep { jobs: ja, .. }, Input::Sweep { jobs: jb, .. }) => {
            let (pairs, unmatched) = match_jobs(ja, jb);
            if pairs.is_empty() {
                return Err(BadInput::new(
                    b,
                    format!(
                        "no job of this sweep matches a job of {} by its sweep overrides",
                        a.display()
                    ),
                    "compare two sweeps over the same axes (the same -m overrides)",
                ));
            }
            Ok((pairs, unmatched))
        }
        (Input::Sweep { .. }, Input::Single(_)) | (Input::Single(_), Input::Sweep { .. }) => {
            let (sweep, single) = if matches!(left, Input::Sweep { .. }) {
                (a, b)
            } else {
                (b, a)
            };
            Err(BadInput::new(
                sweep,
                format!("a multirun root, but {} is a single run", single.display()),
                "compare two run directories, or two multirun roots (or name one job folder of the sweep)",
            ))
        }
    }
}

/// `key=value` of an override (`+key=v`, `++key=v` count as `key`); `None` for deletions.
fn split(o: &str) -> Option<(String, String)> {
    let o = o.trim_start_matches('+');
    if o.starts_with('~') {
        return None;
    }
    let (k, v) = o.split_once('=')?;
    Some((k.trim().to_string(), v.trim().to_string()))
}

fn as_map(run: &Run) -> BTreeMap<String, String> {
    run.overrides.iter().filter_map(|o| split(o)).collect()
}

/// The keys whose value is not the same in every job of `jobs`.
fn axes(jobs: &[BTreeMap<String, String>]) -> BTreeSet<String> {
    let all: BTreeSet<&String> = jobs.iter().flat_map(|m| m.keys()).collect();
    all.into_iter()
        .filter(|k| {
            let values: BTreeSet<Option<&String>> = jobs.iter().map(|m| m.get(*k)).collect();
            values.len() > 1
        })
        .cloned()
        .collect()
}

fn key_of(m: &BTreeMap<String, String>, axes: &BTreeSet<String>) -> String {
    axes.iter()
        .map(|k| format!("{k}={}", m.get(k).map(String::as_str).unwrap_or("(unset)")))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Pairs the jobs whose values on the union of both sweeps' axes agree (the first of duplicates
/// wins); returns the pairs in A's job order and a line per unmatched job.
pub fn match_jobs<'a>(a: &'a [Run], b: &'a [Run]) -> (Vec<Pair<'a>>, Vec<String>) {
    let ma: Vec<_> = a.iter().map(as_map).collect();
    let mb: Vec<_> = b.iter().map(as_map).collect();
    let mut ax = axes(&ma);
    ax.extend(axes(&mb));
    let keys_b: Vec<String> = mb.iter().map(|m| key_of(m, &ax)).collect();
    let mut taken = vec![false; b.len()];
    let mut pairs = Vec::new();
    let mut unmatched = Vec::new();
    for (i, m) in ma.iter().enumerate() {
        let key = key_of(m, &ax);
        match (0..b.len()).find(|&j| !taken[j] && keys_b[j] == key) {
            Some(j) => {
                taken[j] = true;
                pairs.push(Pair {
                    label: key,
                    a: &a[i],
                    b: &b[j],
                });
            }
            None => unmatched.push(format!("only in A: {} ({})", key, a[i].dir.display())),
        }
    }
    for (j, t) in taken.iter().enumerate() {
        if !t {
            unmatched.push(format!("only in B: {} ({})", keys_b[j], b[j].dir.display()));
        }
    }
    (pairs, unmatched)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(dir: &str, overrides: &[&str]) -> Run {
        let text = include_str!("../../../tests/fixtures/runs/stage1_cpu/metrics.json");
        Run {
            dir: dir.into(),
            report: serde_json::from_str(text).expect("fixture parses"),
            kernels: None,
            overrides: overrides.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn jobs_match_on_the_sweep_axes_not_on_fixed_overrides() {
        let a = [
            run("a/0", &["hardware=h100", "runtime.batch_size=1"]),
            run("a/1", &["hardware=h100", "runtime.batch_size=8"]),
            run("a/2", &["hardware=h100", "runtime.batch_size=32"]),
        ];
        let b = [
            run("b/0", &["hardware=h200", "runtime.batch_size=8"]),
            run("b/1", &["hardware=h200", "runtime.batch_size=1"]),
        ];
        let (pairs, unmatched) = match_jobs(&a, &b);
        let got: Vec<(&str, &str, &str)> = pairs
            .iter()
            .map(|p| {
                (
                    p.label.as_str(),
                    p.a.dir.to_str().unwrap(),
                    p.b.dir.to_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("runtime.batch_size=1", "a/0", "b/1"),
                ("runtime.batch_size=8", "a/1", "b/0"),
            ]
        );
        assert_eq!(unmatched.len(), 1);
        assert!(
            unmatched[0].contains("only in A: runtime.batch_size=32"),
            "{unmatched:?}"
        );
    }

    #[test]
    fn two_axes_and_plus_prefixes() {
        let a = [
            run("a/0", &["+x=1", "y=a"]),
            run("a/1", &["+x=1", "y=b"]),
            run("a/2", &["+x=2", "y=a"]),
        ];
        let b = [run("b/0", &["x=2", "y=a"]), run("b/1", &["x=1", "y=b"])];
        let (pairs, unmatched) = match_jobs(&a, &b);
        let labels: Vec<&str> = pairs.iter().map(|p| p.label.as_str()).collect();
        assert_eq!(labels, vec!["x=1 y=b", "x=2 y=a"]);
        assert_eq!(unmatched, vec!["only in A: x=1 y=a (a/0)".to_string()]);
    }
}
