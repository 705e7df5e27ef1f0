//! The metrics `compare` looks at, read from one `RunReport`: each with a key (what --metrics
//! selects), a label, a unit, which direction is better, and either the per-request samples
//! (timed requests without cold first repeats, as the statistics of metrics.json) or, where the
//! run has only an aggregate, one value. Model-agnostic: the stages are whatever regions the
//! run has.
use crate::report::{RequestRecord, RunReport};

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    Lower,
    Higher,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Values {
    /// Per-request (ITL, decode_step: per-step) samples; compared on their medians.
    Samples(Vec<f64>),
    /// One number for the whole run (an aggregate); the string says why it is not a sample.
    Single(f64, &'static str),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Metric {
    pub key: String,
    pub label: String,
    pub unit: &'static str,
    pub better: Better,
    pub values: Values,
}

/// The region names of the generation loop, listed after the model's own regions.
const LOOP_STAGES: [&str; 4] = ["prefill", "decode", "decode_step", "e2e"];

const AGGREGATE: &str = "one value per run";

/// Every metric the run has, headline serving metrics first.
pub fn metrics(r: &RunReport) -> Vec<Metric> {
    let timed: Vec<&RequestRecord> = r.requests.iter().filter(|q| !q.cold).collect();
    let col = |f: fn(&RequestRecord) -> Option<f64>| -> Vec<f64> {
        timed.iter().filter_map(|q| f(q)).collect()
    };
    let mut out = Vec::new();
    let mut sampled = |key: &str, label: &str, unit, better, v: Vec<f64>| {
        if !v.is_empty() {
            out.push(metric(key, label, unit, better, Values::Samples(v)));
        }
    };
    sampled("ttft", "TTFT", "ms", Better::Lower, col(|q| q.ttft_ms));
    sampled("tpot", "TPOT", "ms", Better::Lower, col(|q| q.tpot_ms));
    let itl: Vec<f64> = timed
        .iter()
        .flat_map(|q| q.itl_ms.iter().copied())
        .collect();
    sampled("itl", "ITL", "ms", Better::Lower, itl);
    sampled("e2e", "e2e latency", "ms", Better::Lower, col(|q| q.e2e_ms));
    sampled(
        "tokens_per_s",
        "output tokens/s per request",
        "tok/s",
        Better::Higher,
        col(|q| q.output_tokens_per_s),
    );
    out.extend(stages(r, &timed));
    single(
        &mut out,
        "tokens_per_s_aggregate",
        "output tokens/s aggregate",
        "tok/s",
        Better::Higher,
        r.throughput.tokens_per_s_aggregate,
    );
    single(
        &mut out,
        "decode_tokens_per_s",
        "decode tokens/s per row",
        "tok/s",
        Better::Higher,
        r.throughput.decode_tokens_per_s,
    );
    for (stage, v) in &r.utilisation.mfu {
        single(
            &mut out,
            &format!("mfu.{stage}"),
            &format!("MFU {stage}"),
            "%",
            Better::Higher,
            Some(v * 100.0),
        );
    }
    single(
        &mut out,
        "mbu_decode",
        "MBU decode",
        "%",
        Better::Higher,
        r.utilisation.mbu_decode.map(|v| v * 100.0),
    );
    if let Some(m) = &r.memory {
        single(
            &mut out,
            "peak_allocated",
            "peak memory allocated",
            "GiB",
            Better::Lower,
            Some(m.peak_allocated_gib),
        );
        single(
            &mut out,
            "peak_reserved",
            "peak memory reserved",
            "GiB",
            Better::Lower,
            Some(m.peak_reserved_gib),
        );
    }
    single(
        &mut out,
        "energy_per_token",
        "energy per output token",
        "J",
        Better::Lower,
        r.nvml.energy_j_per_output_token,
    );
    single(
        &mut out,
        "energy_per_decode_token",
        "energy per decode token",
        "J",
        Better::Lower,
        r.nvml.energy_j_per_decode_token,
    );
    // Module deltas: the decode step's GPU time per module kind (the profiled pass).
    let step = r.modules.as_ref().and_then(|m| m.stages.get("decode_step"));
    for k in step.map(|s| s.kinds.as_slice()).unwrap_or_default() {
        out.push(metric(
            &format!("module.{}", k.module),
            &format!("decode step: {}", k.module),
            "ms",
            Better::Lower,
            Values::Single(k.ms_per_run, PROFILED),
        ));
    }
    out
}

const PROFILED: &str = "one value per run (the profiled Kineto pass's mean per step)";

/// Every region of `stages`: the model's own (alphabetically), then the generation loop's.
fn stages(r: &RunReport, timed: &[&RequestRecord]) -> Vec<Metric> {
    let mut names: Vec<&String> = r
        .stages
        .keys()
        .filter(|k| !LOOP_STAGES.contains(&k.as_str()))
        .collect();
    names.extend(
        LOOP_STAGES
            .iter()
            .filter_map(|s| r.stages.get_key_value(*s).map(|(k, _)| k)),
    );
    names
        .into_iter()
        .map(|name| {
            let samples: Vec<f64> = if name == "decode_step" {
                timed
                    .iter()
                    .flat_map(|q| q.decode_step_ms.iter().copied())
                    .collect()
            } else {
                timed
                    .iter()
                    .filter_map(|q| q.stage_ms.get(name).copied())
                    .collect()
            };
            let values = if samples.is_empty() {
                Values::Single(
                    r.stages[name].p50_ms,
                    "p50 only: no per-request samples in metrics.json",
                )
            } else {
                Values::Samples(samples)
            };
            metric(
                &format!("stage.{name}"),
                &format!("stage {name}"),
                "ms",
                Better::Lower,
                values,
            )
        })
        .collect()
}

pub fn metric(
    key: &str,
    label: &str,
    unit: &'static str,
    better: Better,
    values: Values,
) -> Metric {
    Metric {
        key: key.to_string(),
        label: label.to_string(),
        unit,
        better,
        values,
    }
}

fn single(
    out: &mut Vec<Metric>,
    key: &str,
    label: &str,
    unit: &'static str,
    better: Better,
    v: Option<f64>,
) {
    if let Some(v) = v.filter(|v| v.is_finite()) {
        out.push(metric(
            key,
            label,
            unit,
            better,
            Values::Single(v, AGGREGATE),
        ));
    }
}

/// Whether a --metrics list selects `key`: an entry equal to the key, to its group (`stage`
/// selects every `stage.*`, `mfu` every `mfu.*`), or to its last part (`prefill` selects
/// `stage.prefill` and `mfu.prefill`).
pub fn selects(list: &[String], key: &str) -> bool {
    list.iter().any(|n| {
        let n = n.trim();
        key == n
            || key
                .strip_prefix(n)
                .is_some_and(|rest| rest.starts_with('.'))
            || key.rsplit_once('.').is_some_and(|(_, last)| last == n)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_decode_steps_modules_are_metrics_selected_by_module_or_name() {
        let mut r = fixture();
        assert!(!metrics(&r).iter().any(|m| m.key.starts_with("module.")));
        use crate::report::metrics_modules::test_fixtures::{kind, stage};
        let stage = stage(
            3.0,
            vec![kind("layer.attention.qkv", 1.0), kind("lm_head", 2.0)],
        );
        r.modules = Some(crate::report::metrics_modules::ModulesInfo {
            source: Default::default(),
            mapping: Default::default(),
            unmatched_share: 0.0,
            stages: [("decode_step".to_string(), stage)].into(),
        });
        let m = metrics(&r);
        let qkv = m
            .iter()
            .find(|x| x.key == "module.layer.attention.qkv")
            .unwrap();
        assert_eq!(qkv.values, Values::Single(1.0, PROFILED));
        assert_eq!((qkv.unit, qkv.better), ("ms", Better::Lower));
        assert!(selects(&["module".into()], "module.lm_head"));
        assert!(selects(&["qkv".into()], &qkv.key));
    }

    fn fixture() -> RunReport {
        serde_json::from_str(include_str!(
            "../../../tests/fixtures/runs/stage1_cpu/metrics.json"
        ))
        .unwrap()
    }

    #[test]
    fn samples_come_from_the_timed_requests_without_cold_ones() {
        let r = fixture();
        let m = metrics(&r);
        let find = |k: &str| {
            m.iter()
                .find(|x| x.key == k)
                .unwrap_or_else(|| panic!("{k} missing"))
        };
        let serving = |s: &Option<crate::report::StageStats>| s.clone().unwrap();
        for (key, stats) in [
            ("stage.prefill", r.stages["prefill"].clone()),
            ("stage.e2e", r.stages["e2e"].clone()),
            ("ttft", serving(&r.serving.ttft_ms)),
            ("itl", serving(&r.serving.itl_ms)),
            ("tpot", serving(&r.serving.tpot_ms)),
        ] {
            let Values::Samples(v) = &find(key).values else {
                panic!("{key} has no samples")
            };
            assert_eq!(v.len(), stats.n, "{key}");
            let mut v = v.clone();
            let med = crate::compare::stats::median(&mut v);
            assert!(
                (med - stats.p50_ms).abs() < 1e-6,
                "{key}: {med} vs {}",
                stats.p50_ms
            );
        }
        let Values::Samples(steps) = &find("stage.decode_step").values else {
            panic!()
        };
        assert_eq!(steps.len(), r.stages["decode_step"].n);
        assert_eq!(find("tokens_per_s").better, Better::Higher);
        // A CPU run: no MFU, no memory, no energy.
        assert!(m
            .iter()
            .all(|x| !x.key.starts_with("mfu") && !x.key.starts_with("energy")));
    }

    #[test]
    fn selection_by_key_group_and_last_part() {
        let l = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(selects(&l(&["ttft"]), "ttft"));
        assert!(selects(&l(&["stage"]), "stage.prefill"));
        assert!(selects(&l(&["prefill"]), "stage.prefill"));
        assert!(selects(&l(&["prefill"]), "mfu.prefill"));
        assert!(!selects(&l(&["prefill"]), "ttft"));
        assert!(!selects(&l(&["stag"]), "stage.prefill"));
        assert!(!selects(&l(&["e2e"]), "stage.decode"));
    }
}
