//! Links to the raw artifacts of the run directory that exist (trace.json for Perfetto,
//! metrics.json, nvml.csv, the markdown reports, the Nsight outputs).
use super::load::RunArtifacts;
use super::page::{esc, Section};

/// (file, what it is), in the order shown.
const ARTIFACTS: &[(&str, &str)] = &[
    ("report.md", "the Markdown report"),
    (
        "metrics.json",
        "every number of this page (schema: docs/metrics-schema.md)",
    ),
    (
        "trace.json",
        "Kineto trace: open in https://ui.perfetto.dev or chrome://tracing",
    ),
    ("nvml.csv", "NVML samples"),
    ("kernels.json", "kernel table of the Kineto pass"),
    (
        "kernels.md",
        "kernel table (Kineto, or Nsight Systems in stage 2)",
    ),
    ("operators.md", "operator table"),
    ("stakeholder_summary.md", "one-page summary"),
    ("static_compute.md", "analytic FLOPs and bytes"),
    ("assumptions.md", "how the numbers are derived"),
    ("env.json", "software and hardware environment"),
    ("inputs.yaml", "the inputs"),
    ("config.resolved.yaml", "the resolved config"),
    ("status.json", "run state"),
    ("llmprof.log", "log"),
    ("roofline.md", "roofline tables"),
    ("roofline.svg", "roofline plot"),
    ("ncu.md", "Nsight Compute analysis"),
    ("ncu_kernels.json", "Nsight Compute analysis as JSON"),
    ("nsys_summary.json", "Nsight Systems summary"),
    (
        "nsys/profile.nsys-rep",
        "Nsight Systems report (open in nsys-ui)",
    ),
    ("stage2_problems.md", "what went wrong in stage 2"),
    ("cmd.txt", "profiler command lines"),
    ("predictions.jsonl", "predictions"),
    ("README.md", "what the files are"),
    ("summary.md", "sweep summary"),
    ("multirun.yaml", "sweep config"),
];

pub fn section(a: &RunArtifacts) -> Section {
    Section::new("artifacts", "Raw artifacts", list(|f| a.has(f)))
}

/// The list of the artifacts `exists` says are there.
pub fn list(exists: impl Fn(&str) -> bool) -> String {
    let mut s = String::from("<ul>\n");
    let mut any = false;
    for (file, what) in ARTIFACTS {
        if exists(file) {
            any = true;
            s.push_str(&format!(
                "<li><a href=\"{}\">{}</a>: {}</li>\n",
                super::table::href(file),
                esc(file),
                esc(what)
            ));
        }
    }
    if !any {
        s.push_str("<li>none</li>\n");
    }
    s.push_str("</ul>\n");
    s
}
