//! Where the decode step goes: an icicle chart of the step → module groups → modules → their
//! heaviest kernels (GPU time per step), and the modules' table with their floors
//! (metrics.json `modules`, docs/modules.md).
use super::load::RunArtifacts;
use super::page::{chart, no_data, Section};
use super::plots::base_layout;
use super::table::{num, text, Cell, Table};
use crate::region::DECODE_STEP;
use crate::report::metrics_modules::StageModules;
use plotly::Plot;
use serde::Serialize;
use std::collections::BTreeMap;

/// plotly.js's icicle trace (the `plotly` crate has no type for it): nodes by id with their
/// parent, and values that hold their children's (`branchvalues: total`).
#[derive(Debug, Clone, Serialize)]
struct Icicle {
    r#type: &'static str,
    ids: Vec<String>,
    labels: Vec<String>,
    parents: Vec<String>,
    values: Vec<f64>,
    branchvalues: &'static str,
    hovertemplate: &'static str,
}

impl plotly::Trace for Icicle {
    fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

const ROOT: &str = "decode step";

/// The chart's nodes: the step, each module path's prefixes (`layer`, `layer.attention`), the
/// modules and, under each, its heaviest kernels and the rest of its time.
fn icicle(st: &StageModules) -> Icicle {
    let mut values: BTreeMap<String, f64> = BTreeMap::new();
    let mut parent: BTreeMap<String, String> = BTreeMap::new();
    let mut leaves: Vec<(String, String, String, f64)> = Vec::new(); // id, label, parent, value
    for k in &st.kinds {
        let parts: Vec<&str> = k.module.split('.').collect();
        let mut up = ROOT.to_string();
        for i in 0..parts.len() {
            let id = parts[..=i].join(".");
            *values.entry(id.clone()).or_default() += k.ms_per_run;
            parent.entry(id.clone()).or_insert_with(|| up.clone());
            up = id;
        }
        let mut rest = k.ms_per_run;
        for t in &k.top_kernels {
            leaves.push((
                format!("{}/{}", k.module, t.name),
                t.name.clone(),
                k.module.clone(),
                t.ms_per_run,
            ));
            rest -= t.ms_per_run;
        }
        if !k.top_kernels.is_empty() && rest > 1e-9 {
            let id = format!("{}/(other kernels)", k.module);
            leaves.push((id, "(other kernels)".into(), k.module.clone(), rest));
        }
    }
    let total: f64 = st.kinds.iter().map(|k| k.ms_per_run).sum();
    let mut ice = Icicle {
        r#type: "icicle",
        ids: vec![ROOT.into()],
        labels: vec![ROOT.into()],
        parents: vec![String::new()],
        values: vec![total],
        branchvalues: "total",
        hovertemplate:
            "%{label}<br>%{value:.4f} ms per step<br>%{percentRoot:.1%} of the step<extra></extra>",
    };
    for (id, v) in &values {
        ice.labels
            .push(id.rsplit('.').next().unwrap_or(id).to_string());
        ice.parents.push(parent[id].clone());
        ice.ids.push(id.clone());
        ice.values.push(*v);
    }
    for (id, label, up, v) in leaves {
        ice.ids.push(id);
        ice.labels.push(label);
        ice.parents.push(up);
        ice.values.push(v);
    }
    ice
}

pub fn section(a: &RunArtifacts) -> Section {
    let title = "Where the decode step goes";
    let modules = a.metrics.as_ref().and_then(|m| m.modules.as_ref());
    let step = modules.and_then(|m| m.stages.get(DECODE_STEP.nvtx_name()));
    let (Some(m), Some(st)) = (modules, step) else {
        return Section::new(
            "modules",
            title,
            no_data(
                "no module breakdown in this run (runs from before it, or without a Kineto pass)",
            ),
        );
    };
    let mut plot = Plot::new();
    plot.add_trace(Box::new(icicle(st)));
    let what = m.time_words().0;
    let short = what.split(" (").next().unwrap_or(what);
    plot.set_layout(base_layout(&format!(
        "{short} per decode step: modules, then their kernels (click to zoom)"
    )));
    let mut body = chart("chart-modules", &plot);
    let mut t = Table::new(
        "table-modules",
        vec![
            text("module"),
            num("layers"),
            num("ms per step"),
            num("share %"),
            num("floor ms"),
            num("× floor"),
            num("above floor ms"),
        ],
    );
    for k in &st.kinds {
        t.push(vec![
            Cell::text(k.module.clone()),
            Cell::num(Some(k.instances as f64), 0),
            Cell::num(Some(k.ms_per_run), 4),
            Cell::num(Some(k.share * 100.0), 1),
            Cell::num(k.floor_ms, 4),
            Cell::num(k.times_floor, 1),
            Cell::num(k.above_floor_ms, 4),
        ]);
    }
    body.push_str(&t.html());
    body.push_str(&format!(
        "<p class=\"note\">{what} per decode step in the Kineto pass; on a GPU each kernel is charged to the module that launched it (replayed CUDA graphs through their capture records). Floor: the module's analytic bytes at peak bandwidth or FLOPs at peak compute, whichever is larger. modules.md has every stage, the step's accounting and the matching of replayed kernels (docs/modules.md).</p>\n"
    ));
    Section::new("modules", title, body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::metrics_modules::{KernelTime, ModuleKind};

    fn kind(module: &str, ms: f64, kernels: &[(&str, f64)]) -> ModuleKind {
        ModuleKind {
            share: 0.0,
            top_kernels: kernels
                .iter()
                .map(|(n, ms)| KernelTime {
                    name: n.to_string(),
                    ms_per_run: *ms,
                    calls_per_run: 2.0,
                })
                .collect(),
            ..crate::report::metrics_modules::test_fixtures::kind(module, ms)
        }
    }

    #[test]
    fn every_node_holds_its_children_and_kernels_hang_under_their_module() {
        let st = crate::report::metrics_modules::test_fixtures::stage(
            3.0,
            vec![
                kind("layer.attention.qkv", 1.0, &[("gemv", 0.75)]),
                kind("layer.mlp.down", 1.5, &[("gemm", 1.5)]),
                kind("lm_head", 0.5, &[]),
            ],
        );
        let ice = icicle(&st);
        let at = |id: &str| {
            ice.ids
                .iter()
                .position(|i| i == id)
                .unwrap_or_else(|| panic!("{id}"))
        };
        assert_eq!(ice.values[at(ROOT)], 3.0);
        assert_eq!(ice.values[at("layer")], 2.5);
        assert_eq!(ice.parents[at("layer.attention")], "layer");
        assert_eq!(ice.labels[at("layer.attention.qkv")], "qkv");
        assert_eq!(
            ice.parents[at("layer.attention.qkv/gemv")],
            "layer.attention.qkv"
        );
        assert_eq!(ice.values[at("layer.attention.qkv/(other kernels)")], 0.25);
        assert!(!ice
            .ids
            .iter()
            .any(|i| i == "layer.mlp.down/(other kernels)"));
        // branchvalues total: every parent's value is at least the sum of its children's.
        for (i, id) in ice.ids.iter().enumerate() {
            let children: f64 = (0..ice.ids.len())
                .filter(|&j| ice.parents[j] == *id)
                .map(|j| ice.values[j])
                .sum();
            assert!(
                children <= ice.values[i] + 1e-12,
                "{id}: {children} > {}",
                ice.values[i]
            );
        }
        let json = plotly::Trace::to_json(&ice);
        assert!(
            json.contains("\"type\":\"icicle\"") && json.contains("\"branchvalues\":\"total\"")
        );
    }
}
