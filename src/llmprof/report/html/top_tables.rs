//! Top operators and kernels: sortable, filterable tables with short names (the full name on
//! hover) and the stage each ran in.
use super::load::RunArtifacts;
use super::page::{no_data, Section};
use super::table::{num, text, Cell, Table};
use crate::measure::kernel_names::{distinct_short_names, short_name};
use crate::measure::op_tables::modules_label;

pub fn section(a: &RunArtifacts) -> Section {
    let title = "Top operators and kernels";
    let mut body = String::new();
    let kineto = a.metrics.as_ref().and_then(|m| m.kineto.as_ref());
    body.push_str("<h3>Operators</h3>\n");
    match kineto {
        Some(k) if !k.top_operators.is_empty() => {
            let mut t = Table::new(
                "table-operators",
                vec![
                    text("operator"),
                    text("stage"),
                    num("calls"),
                    num("time ms"),
                    num("share %"),
                    num("self CUDA ms"),
                    num("self CPU ms"),
                ],
            );
            for r in &k.top_operators {
                t.push(vec![
                    Cell::named(short_name(&r.name), r.name.clone()),
                    Cell::text(r.stage.clone().unwrap_or_default()),
                    Cell::num(Some(r.calls as f64), 0),
                    Cell::num(Some(r.total_ms), 3),
                    Cell::num(r.share_pct, 1),
                    Cell::num(r.self_cuda_ms, 3),
                    Cell::num(r.self_cpu_ms, 3),
                ]);
            }
            body.push_str(&t.html());
            body.push_str(&format!(
                "<p class=\"note\">The {} operators with the most time in the Kineto pass (metrics.json); the full table is operators.md.</p>\n",
                k.top_operators.len()
            ));
        }
        _ => body.push_str(&no_data("no Kineto pass in this run (pipeline.torch_profiler.enable=false, or not a stage-1 run)")),
    }
    body.push_str("<h3>Kernels</h3>\n");
    match (&a.kernels, kineto) {
        (Some(rows), _) if !rows.is_empty() => {
            let mut t = Table::new(
                "table-kernels",
                vec![
                    text("kernel"),
                    text("stage"),
                    text("module"),
                    num("calls"),
                    num("total ms"),
                    num("mean µs"),
                    num("share of GPU %"),
                ],
            );
            let names = distinct_short_names(rows.iter().map(|r| r.name.as_str()));
            for (r, name) in rows.iter().zip(names) {
                let module = modules_label(&r.modules).unwrap_or_default();
                t.push(vec![
                    Cell::named(name, r.name.clone()),
                    Cell::text(r.stage.clone().unwrap_or_default()),
                    Cell::named(module, r.modules.join(", ")),
                    Cell::num(Some(r.calls as f64), 0),
                    Cell::num(Some(r.total_ns as f64 / 1e6), 3),
                    Cell::num(Some(r.mean_ns / 1e3), 2),
                    Cell::num(Some(r.share_of_gpu * 100.0), 2),
                ]);
            }
            body.push_str(&t.html());
            body.push_str(&format!(
                "<p class=\"note\">Every kernel of the Kineto pass ({} rows, kernels.json), per stage.</p>\n",
                rows.len()
            ));
        }
        (_, Some(k)) if !k.top_kernels.is_empty() => {
            let mut t = Table::new(
                "table-kernels",
                vec![
                    text("kernel"),
                    text("stage"),
                    num("calls"),
                    num("total ms"),
                    num("share %"),
                ],
            );
            let names = distinct_short_names(k.top_kernels.iter().map(|r| r.name.as_str()));
            for (r, name) in k.top_kernels.iter().zip(names) {
                t.push(vec![
                    Cell::named(name, r.name.clone()),
                    Cell::text(r.stage.clone().unwrap_or_default()),
                    Cell::num(Some(r.calls as f64), 0),
                    Cell::num(Some(r.total_ms), 3),
                    Cell::num(r.share_pct, 1),
                ]);
            }
            body.push_str(&t.html());
        }
        (Some(_), _) => body.push_str(&no_data(
            "kernels.json lists no kernel (a CPU run launches none)",
        )),
        _ => body.push_str(&no_data(&format!(
            "no kernel table ({} absent{})",
            crate::report::artifacts::KERNELS_JSON,
            if kineto.is_some() {
                ""
            } else {
                ", no Kineto pass"
            }
        ))),
    }
    Section::new("tables", title, body)
}
