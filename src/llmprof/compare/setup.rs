//! What differs between the setups of two runs: the fields that make timings incomparable (GPU,
//! model, dtype, batch, mode, weights, llmprof version) and the workload's size (device, new
//! tokens, inputs, repeats). Printed first, loudly, by every renderer.
use crate::report::RunReport;
use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mismatch {
    pub field: String,
    pub a: String,
    pub b: String,
}

/// A setup field: its name and how to read it.
type Field = (&'static str, fn(&RunReport) -> String);

/// Every setup field whose value differs, in the order above.
pub fn mismatches(a: &RunReport, b: &RunReport) -> Vec<Mismatch> {
    let fields: [Field; 11] = [
        ("gpu", |r| {
            r.setup.gpu.clone().unwrap_or_else(|| "(none)".into())
        }),
        ("model", |r| r.setup.model.clone()),
        ("dtype", |r| r.setup.dtype.clone()),
        ("batch_size", |r| r.setup.batch_size.to_string()),
        ("mode", |r| {
            r.setup.mode.clone().unwrap_or_else(|| "(none)".into())
        }),
        ("weights", |r| {
            if r.synthetic_weights {
                "synthetic".into()
            } else {
                "real".into()
            }
        }),
        ("llmprof_version", |r| r.llmprof_version.clone()),
        ("device", |r| r.setup.device.clone()),
        ("max_new_tokens", |r| r.setup.max_new_tokens.to_string()),
        ("inputs", |r| r.setup.inputs.to_string()),
        ("repeats", |r| r.setup.repeats.to_string()),
    ];
    fields
        .iter()
        .filter_map(|(name, get)| {
            let (va, vb) = (get(a), get(b));
            (va != vb).then(|| Mismatch {
                field: name.to_string(),
                a: va,
                b: vb,
            })
        })
        .collect()
}

/// The fast-path switches (`runtime.optim.*`, `model.optim.*`) whose values differ, by key; a
/// switch only one run has reads as absent in the other. Often the change being measured, so
/// listed apart from the setup mismatches.
pub fn switch_differences(a: &RunReport, b: &RunReport) -> Vec<Mismatch> {
    let keyed = |r: &RunReport| -> std::collections::BTreeMap<String, String> {
        let o = &r.optim;
        [
            ("runtime.optim", &o.switches),
            ("model.optim", &o.model_switches),
        ]
        .into_iter()
        .flat_map(|(prefix, m)| {
            m.iter()
                .map(move |(k, v)| (format!("{prefix}.{k}"), v.to_string()))
        })
        .collect()
    };
    let (ka, kb) = (keyed(a), keyed(b));
    let keys: std::collections::BTreeSet<&String> = ka.keys().chain(kb.keys()).collect();
    let absent = "(absent)".to_string();
    keys.into_iter()
        .filter_map(|k| {
            let (va, vb) = (ka.get(k).unwrap_or(&absent), kb.get(k).unwrap_or(&absent));
            (va != vb).then(|| Mismatch {
                field: k.clone(),
                a: va.clone(),
                b: vb.clone(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differing_fields_are_listed_in_order() {
        let a: RunReport = serde_json::from_str(include_str!(
            "../../../tests/fixtures/runs/stage1_cpu/metrics.json"
        ))
        .unwrap();
        assert!(mismatches(&a, &a).is_empty());
        let mut b = a.clone();
        b.setup.gpu = Some("NVIDIA H200".into());
        b.setup.batch_size = 8;
        b.synthetic_weights = !a.synthetic_weights;
        let m = mismatches(&a, &b);
        let fields: Vec<&str> = m.iter().map(|x| x.field.as_str()).collect();
        assert_eq!(fields, vec!["gpu", "batch_size", "weights"]);
        assert_eq!(
            (m[0].a.as_str(), m[0].b.as_str()),
            ("(none)", "NVIDIA H200")
        );
    }

    #[test]
    fn differing_switches_are_named_with_their_keys() {
        let a: RunReport = serde_json::from_str(include_str!(
            "../../../tests/fixtures/runs/stage1_cpu/metrics.json"
        ))
        .unwrap();
        assert!(switch_differences(&a, &a).is_empty());
        let mut b = a.clone();
        b.optim.switches["cuda_graph"] = serde_json::Value::Bool(false);
        b.optim
            .model_switches
            .insert("sam_patch_gemm".into(), serde_json::Value::Bool(true));
        let d = switch_differences(&a, &b);
        let fields: Vec<&str> = d.iter().map(|x| x.field.as_str()).collect();
        assert_eq!(
            fields,
            ["model.optim.sam_patch_gemm", "runtime.optim.cuda_graph"]
        );
        assert_eq!((d[0].a.as_str(), d[0].b.as_str()), ("(absent)", "true"));
        assert_eq!((d[1].a.as_str(), d[1].b.as_str()), ("true", "false"));
    }
}
