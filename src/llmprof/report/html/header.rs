//! The header of a run's page: what ran (model, GPU, dtype, mode, batch), its state, the
//! config's difference from the defaults (the task overrides), the environment, the run's notes
//! and any artifact that could not be read.
use super::load::RunArtifacts;
use super::page::{esc, Section};
use super::table::key_values;
use crate::report::SYNTHETIC_NOTE;

/// Title line of the page.
pub fn title(a: &RunArtifacts) -> String {
    let model = model(a).unwrap_or_else(|| "unknown model".into());
    format!("llmprof {}: {model}", a.command())
}

/// Banners shown above everything: synthetic weights, a run that did not succeed.
pub fn banners(a: &RunArtifacts) -> Vec<String> {
    let mut out = Vec::new();
    let synthetic = match (&a.metrics, &a.spec) {
        (Some(m), _) => m.synthetic_weights,
        (None, Some(s)) => matches!(s.model.weights, crate::spec::WeightsSource::Synthetic),
        _ => false,
    };
    if synthetic {
        out.push(SYNTHETIC_NOTE.to_string());
    }
    if let Some(s) = &a.status {
        let state = format!("{:?}", s.state).to_lowercase();
        if state != "succeeded" {
            let why = s.error.as_deref().unwrap_or("no error recorded");
            out.push(format!("Run {state}: {why}"));
        }
    }
    out
}

fn model(a: &RunArtifacts) -> Option<String> {
    a.metrics
        .as_ref()
        .map(|m| m.setup.model.clone())
        .or_else(|| a.spec.as_ref().map(|s| s.model.name.clone()))
}

fn gpu(a: &RunArtifacts) -> Option<String> {
    a.metrics
        .as_ref()
        .and_then(|m| m.setup.gpu.clone())
        .or_else(|| {
            a.ncu
                .as_ref()
                .and_then(|n| n.roofline.peaks.as_ref().map(|p| p.gpu_name.clone()))
        })
        .or_else(|| {
            a.env
                .as_ref()
                .and_then(|e| e.pointer("/gpu/name"))
                .and_then(|v| v.as_str().map(String::from))
        })
}

pub fn section(a: &RunArtifacts) -> Section {
    let mut rows: Vec<(String, String)> = Vec::new();
    let dash = || "—".to_string();
    rows.push(("command".into(), a.command()));
    rows.push(("model".into(), model(a).unwrap_or_else(dash)));
    rows.push((
        "GPU".into(),
        gpu(a).unwrap_or_else(|| "none detected".into()),
    ));
    if let Some(m) = &a.metrics {
        let s = &m.setup;
        rows.push(("device".into(), s.device.clone()));
        rows.push(("dtype".into(), s.dtype.clone()));
        if let Some(mode) = &s.mode {
            rows.push(("mode".into(), mode.clone()));
        }
        rows.push(("batch size".into(), s.batch_size_label()));
        rows.push((
            "warm-up / repeats".into(),
            format!("{} / {}", s.warmup, s.repeats),
        ));
        rows.push((
            "max new tokens".into(),
            format!(
                "{}{}",
                s.max_new_tokens,
                if s.ignore_eos { " (EOS ignored)" } else { "" }
            ),
        ));
        rows.push(("inputs".into(), s.inputs.to_string()));
        rows.push(("timer".into(), s.clock.clone()));
        rows.push(("model load".into(), format!("{:.0} ms", s.load_ms)));
    } else if let Some(spec) = &a.spec {
        rows.push(("device".into(), spec.device.clone()));
        rows.push((
            "dtype".into(),
            format!("{:?}", spec.model.dtype).to_lowercase(),
        ));
        if let Some(pre) = &spec.model.preprocess {
            rows.push(("mode".into(), pre.mode.name().into()));
        }
        rows.push(("batch size".into(), spec.runtime.batch_size.to_string()));
    }
    if let Some(s) = &a.status {
        rows.push(("state".into(), format!("{:?}", s.state).to_lowercase()));
        rows.push(("started".into(), s.started_at.clone()));
        rows.push((
            "finished".into(),
            s.finished_at.clone().unwrap_or_else(dash),
        ));
        rows.push(("llmprof".into(), s.llmprof_version.clone()));
    }
    rows.push(("directory".into(), a.dir.display().to_string()));
    let mut body = key_values(&rows);
    body.push_str("<h3>Config: difference from the defaults</h3>\n");
    if a.overrides.is_empty() {
        body.push_str("<p class=\"note\">No overrides recorded (.hydra/overrides.yaml): the defaults of conf/.</p>\n");
    } else {
        body.push_str("<pre>");
        body.push_str(&esc(&a.overrides.join("\n")));
        body.push_str("</pre>\n");
    }
    if let Some(c) = &a.config_yaml {
        body.push_str(&format!(
            "<details><summary>Resolved config (config.resolved.yaml)</summary><pre>{}</pre></details>\n",
            esc(c)
        ));
    }
    match &a.env {
        Some(env) => body.push_str(&format!(
            "<details><summary>Environment (env.json)</summary>{}</details>\n",
            key_values(&flatten(env))
        )),
        None => body.push_str("<p class=\"note\">No env.json in this directory.</p>\n"),
    }
    let notes = a
        .metrics
        .as_ref()
        .map(|m| m.notes.as_slice())
        .unwrap_or(&[]);
    if !notes.is_empty() {
        body.push_str("<h3>Notes</h3>\n<ul>\n");
        for n in notes {
            body.push_str(&format!("<li>{}</li>\n", esc(n)));
        }
        body.push_str("</ul>\n");
    }
    if !a.problems.is_empty() {
        body.push_str("<h3>Artifacts that could not be read</h3>\n<ul>\n");
        for p in &a.problems {
            body.push_str(&format!("<li>{}</li>\n", esc(p)));
        }
        body.push_str("</ul>\n");
    }
    Section::new("setup", "Setup", body)
}

/// `a.b.c → value` lines of a JSON object (arrays and scalars as JSON text).
fn flatten(v: &serde_json::Value) -> Vec<(String, String)> {
    fn walk(prefix: &str, v: &serde_json::Value, out: &mut Vec<(String, String)>) {
        match v {
            serde_json::Value::Object(m) if !m.is_empty() => {
                for (k, v) in m {
                    let key = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    walk(&key, v, out);
                }
            }
            serde_json::Value::String(s) => out.push((prefix.into(), s.clone())),
            other => out.push((prefix.into(), other.to_string())),
        }
    }
    let mut out = Vec::new();
    walk("", v, &mut out);
    out
}
