//! Links to the raw artifacts of the run directory that exist (trace.json for Perfetto,
//! metrics.json, nvml.csv, the markdown reports, the Nsight outputs).
use super::load::RunArtifacts;
use super::page::{esc, Section};
use crate::report::artifacts as a;
use crate::run_dir::{LOG_FILE, RESOLVED_CONFIG, STATUS_FILE};

/// (file, what it is), in the order shown.
const ARTIFACTS: &[(&str, &str)] = &[
    (a::REPORT_MD, "the Markdown report"),
    (
        a::METRICS_JSON,
        "every number of this page (schema: docs/metrics-schema.md)",
    ),
    (
        a::MEASUREMENTS_JSON,
        "what the run measured (every report is built from it: llmprof report DIR)",
    ),
    (
        a::TRACE_JSON,
        "Kineto trace: open in https://ui.perfetto.dev or chrome://tracing",
    ),
    (a::NVML_CSV, "NVML samples"),
    (a::KERNELS_JSON, "kernel table of the Kineto pass"),
    (
        a::MODULES_MD,
        "GPU time by module, with each module's analytic floor",
    ),
    (
        a::GRAPH_RECORDS_JSON,
        "which module added each node of the replayed CUDA graphs",
    ),
    (
        a::KERNELS_MD,
        "kernel table (Kineto, or Nsight Systems in stage 2)",
    ),
    (a::OPERATORS_MD, "operator table"),
    (a::SUMMARY_MD, "one-page summary"),
    (a::STATIC_MD, "analytic FLOPs and bytes"),
    (a::ASSUMPTIONS_MD, "how the numbers are derived"),
    (a::ENV_JSON, "software and hardware environment"),
    (a::INPUTS_YAML, "the inputs"),
    (RESOLVED_CONFIG, "the resolved config"),
    (STATUS_FILE, "run state"),
    (LOG_FILE, "log"),
    (a::ROOFLINE_MD, "roofline tables"),
    (a::ROOFLINE_SVG, "roofline plot"),
    (a::NCU_MD, "Nsight Compute analysis"),
    (a::NCU_KERNELS_JSON, "Nsight Compute analysis as JSON"),
    (a::NSYS_SUMMARY_JSON, "Nsight Systems summary"),
    (a::NSYS_REP_PATH, "Nsight Systems report (open in nsys-ui)"),
    (a::STAGE2_PROBLEMS_MD, "what went wrong in stage 2"),
    (a::CMD_TXT, "profiler command lines"),
    (a::PREDICTIONS_JSONL, "predictions"),
    (a::INFER_README, "what the files are"),
    (a::SWEEP_SUMMARY_MD, "sweep summary"),
    (a::MULTIRUN_YAML, "sweep config"),
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
    // A tensor-parallel run's rank traces (app/tp_launch.rs links them in).
    for (k, file) in crate::measure::rank_trace::rank_trace_paths(&exists)
        .into_iter()
        .enumerate()
    {
        any = true;
        s.push_str(&format!(
            "<li><a href=\"{}\">{}</a>: Kineto trace of rank {k}, with its rank and world size (llmprof analyze trace, HTA)</li>\n",
            super::table::href(&file),
            esc(&file),
        ));
    }
    if !any {
        s.push_str("<li>none</li>\n");
    }
    s.push_str("</ul>\n");
    s
}
