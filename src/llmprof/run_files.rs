//! The names of the files and folders of a run directory and a multirun root, each defined once:
//! the run's own (status, resolved config, log), what the worker records (measurements, traces,
//! samples, inputs), the reports built from it, stage 2's Nsight outputs and a sweep's files. The
//! writers and readers (report/artifacts.rs, report/html, compare, app/nsight_stage.rs, the
//! worker) name files only through these.

// The run (run_dir.rs).
pub const STATUS_FILE: &str = "status.json";
pub const RESOLVED_CONFIG: &str = "config.resolved.yaml";
pub const LOG_FILE: &str = "llmprof.log";
/// Written by the worker when it fails: its error message, for status.json.
pub const WORKER_ERROR: &str = "worker_error.txt";
/// Hydra's record of the run: the job's config, Hydra's own, and the task overrides (the
/// difference from the defaults).
pub const HYDRA_DIR: &str = ".hydra";
pub const HYDRA_CONFIG_YAML: &str = ".hydra/config.yaml";
pub const HYDRA_YAML: &str = ".hydra/hydra.yaml";
pub const OVERRIDES_YAML: &str = ".hydra/overrides.yaml";

// What the worker records and the reports built from it (report/artifacts.rs).
pub const METRICS_JSON: &str = "metrics.json";
/// What stage 1 measured (report/measurements.rs): the input every stage-1 report is built from.
pub const MEASUREMENTS_JSON: &str = "measurements.json";
pub const REPORT_MD: &str = "report.md";
/// The self-contained HTML report (report/html/), beside report.md.
pub const REPORT_HTML: &str = "report.html";
pub const SUMMARY_MD: &str = "stakeholder_summary.md";
/// A multirun root's table of its jobs (report/sweep.rs).
pub const SWEEP_SUMMARY_MD: &str = "summary.md";
pub const ENV_JSON: &str = "env.json";
pub const ASSUMPTIONS_MD: &str = "assumptions.md";
pub const INPUTS_YAML: &str = "inputs.yaml";
pub const NVML_CSV: &str = "nvml.csv";
pub const STATIC_JSON: &str = "static_compute.json";
pub const STATIC_MD: &str = "static_compute.md";
pub const OPERATORS_MD: &str = "operators.md";
pub const KERNELS_MD: &str = "kernels.md";
/// The kernel table as JSON (a list of `measure::op_tables::KernelRow`); stage 2 reads it.
pub const KERNELS_JSON: &str = "kernels.json";
pub const TRACE_JSON: &str = "trace.json";
/// GPU time by stage and module (built from measurements.json by the front end).
pub const MODULES_MD: &str = "modules.md";
/// The capture records of the CUDA graphs the Kineto pass replayed (a list of
/// `measure::capture_record::CaptureRecord`): which module added each node.
pub const GRAPH_RECORDS_JSON: &str = "graph_records.json";
pub const PREDICTIONS_JSONL: &str = "predictions.jsonl";
/// README.md of an infer run directory.
pub const INFER_README: &str = "README.md";
/// Crops of image elements, linked from the markdown as `images/<name>_<k>.png`.
pub const IMAGES_DIR: &str = "images";
pub const OVERHEAD_JSON: &str = "overhead.json";
/// The n-gram rule's cost on decode over one token stream (`llmprof-worker bench-ngram`).
pub const NGRAM_JSON: &str = "ngram.json";
/// A multirun root's sweep config (what marks a folder as one).
pub const MULTIRUN_YAML: &str = "multirun.yaml";

// Stage 2 (app/nsight_stage.rs): the profilers' command lines and problems, Nsight Systems'
// report and summary, Nsight Compute's CSVs and the roofline built from them.
pub const CMD_TXT: &str = "cmd.txt";
pub const STAGE2_PROBLEMS_MD: &str = "stage2_problems.md";
/// Nsight Systems' folder: the report (`NSYS_REP`) and `nsys stats` CSVs.
pub const NSYS_DIR: &str = "nsys";
pub const NSYS_REP: &str = "profile.nsys-rep";
/// `NSYS_REP` inside `NSYS_DIR`, as the run directory's links name it.
pub const NSYS_REP_PATH: &str = "nsys/profile.nsys-rep";
pub const NSYS_SUMMARY_JSON: &str = "nsys_summary.json";
/// Nsight Compute's folder: one CSV per profiled kernel set.
pub const NCU_DIR: &str = "ncu";
/// Stage 2's child run with the Kineto pass: kernel selection and each kernel's module.
pub const STAGE2_KINETO_DIR: &str = "kineto";
pub const NCU_MD: &str = "ncu.md";
pub const NCU_KERNELS_JSON: &str = "ncu_kernels.json";
pub const ROOFLINE_MD: &str = "roofline.md";
/// The roofline plot of every stage (`roofline/plot.rs` adds one per stage beside it).
pub const ROOFLINE_SVG: &str = "roofline.svg";

// Tensor-parallel ranks (app/tp_launch.rs starts them, the worker's engine/collectives.rs reads
// these): rank k > 0 writes into `<run>/<RANK_DIR_PREFIX>k`; the ranks' rendezvous folder.
pub const RANK_DIR_PREFIX: &str = "rank";
pub const TP_DIR: &str = "tp";
/// Rank 0's NCCL unique id, in TP_DIR.
pub const NCCL_ID: &str = "nccl.id";
/// The environment each rank is started with: its rank, the world size, the TP_DIR path.
pub const TP_RANK_ENV: &str = "LLMPROF_TP_RANK";
pub const TP_WORLD_ENV: &str = "LLMPROF_TP_WORLD";
pub const TP_DIR_ENV: &str = "LLMPROF_TP_DIR";
/// Stage 2 of a tensor-parallel run: the rank whose worker a profiler wraps, and the profiler's
/// command line before the worker's (a JSON list of strings), given to the child `llmprof
/// stage1` that starts the ranks.
pub const TP_PROFILED_RANK_ENV: &str = "LLMPROF_TP_PROFILED_RANK";
pub const TP_PROFILER_ENV: &str = "LLMPROF_TP_PROFILER";

/// NVLink multicast stays off in every rank (NCCL's NVLS and libtorch's symmetric memory).
pub const NO_MULTICAST: [(&str, &str); 3] = [
    ("NCCL_NVLS_ENABLE", "0"),
    ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
    ("NVSHMEM_DISABLE_NVLS", "1"),
];

/// The GPU of rank `k` (its CUDA_VISIBLE_DEVICES): the k-th of this process's
/// CUDA_VISIBLE_DEVICES when it lists them, else index k.
pub fn gpu_of_rank(k: usize) -> String {
    std::env::var("CUDA_VISIBLE_DEVICES")
        .ok()
        .and_then(|v| v.split(',').nth(k).map(str::to_string))
        .unwrap_or_else(|| k.to_string())
}

/// Each rank's progress mark in its folder (what it last finished), rewritten as it starts, loads
/// and finishes each request: a rank whose mark is older than runtime.tensor_parallel_timeout_s
/// is taken as hung and the run is stopped.
pub const HEARTBEAT_FILE: &str = "heartbeat";

#[cfg(test)]
mod tests {
    #[test]
    fn nested_files_are_inside_their_folders() {
        for f in [
            super::HYDRA_CONFIG_YAML,
            super::HYDRA_YAML,
            super::OVERRIDES_YAML,
        ] {
            assert_eq!(
                std::path::Path::new(f).parent(),
                Some(std::path::Path::new(super::HYDRA_DIR))
            );
        }
        assert_eq!(
            std::path::Path::new(super::NSYS_REP_PATH),
            std::path::Path::new(super::NSYS_DIR).join(super::NSYS_REP)
        );
    }
}
