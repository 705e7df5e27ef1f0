//! An infer run's predictions: one row per input with its token counts, whether it stopped at
//! EOS, its elements, the start of its text (all of it on hover) and links to its per-page files.
use super::load::RunArtifacts;
use super::page::{no_data, Section};
use super::table::{num, text, Cell, Table};
use serde_json::Value;

pub fn section(a: &RunArtifacts) -> Section {
    let title = "Predictions";
    if a.predictions.is_empty() {
        return Section::new(
            "predictions",
            title,
            no_data("no predictions.jsonl in this run directory"),
        );
    }
    let mut t = Table::new(
        "table-predictions",
        vec![
            text("input"),
            num("prompt tokens"),
            num("output tokens"),
            text("stopped at EOS"),
            num("elements"),
            text("text"),
            text("files"),
        ],
    );
    for p in &a.predictions {
        let s = |k: &str| {
            p.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let n = |k: &str| p.get(k).and_then(Value::as_f64);
        let name = s("name");
        let body = s("text");
        let start: String = body.chars().take(100).collect();
        let mut files = Vec::new();
        for (suffix, label) in [(".mmd", "markdown"), (".boxes.png", "boxes")] {
            let f = format!("{name}{suffix}");
            if !name.is_empty() && a.has(&f) {
                files.push(Cell::link(&f, label).text);
            }
        }
        t.push(vec![
            Cell::named(name.clone(), s("image")),
            Cell::num(n("prompt_tokens"), 0),
            Cell::num(n("output_tokens"), 0),
            Cell::text(match p.get("hit_eos").and_then(Value::as_bool) {
                Some(true) => "yes",
                Some(false) => "no",
                None => "—",
            }),
            Cell::num(
                p.get("elements")
                    .and_then(Value::as_array)
                    .map(|e| e.len() as f64),
                0,
            ),
            Cell::named(start, body).wrapped(),
            Cell {
                text: files.join(" "),
                html: true,
                ..Cell::default()
            },
        ]);
    }
    Section::new("predictions", title, t.html())
}
