//! Pure argv builders for `nsys profile` and `nsys stats`; running them is the caller's job.

use std::path::{Path, PathBuf};

use super::parse::ReportKind;

/// What to record with `nsys profile`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileOptions {
    /// Report path; nsys appends `.nsys-rep`.
    pub output: PathBuf,
    /// Record only inside this NVTX range (push/pop name); `None` records the whole run.
    pub capture_range: Option<String>,
    /// `--trace=` APIs (default cuda, nvtx, osrt).
    pub trace: Vec<String>,
    /// Passed through before the program (`pipeline.nsys.extra_args`).
    pub extra_args: Vec<String>,
}

/// `nsys profile` arguments (without the `nsys` itself), followed by `program`.
///
/// `--cuda-graph-trace=node` shows kernels inside CUDA graphs one by one; `--sample=none` turns
/// CPU sampling off (it costs time and we do not read it). With a capture range,
/// `NSYS_NVTX_PROFILER_REGISTER_ONLY=0` lets `--nvtx-capture` match unregistered range strings,
/// as the llm-perf-opt per-stage runs did (shared/fixtures/llm-perf-opt-rtx5090/nsys/per-stage/*/nsys/cmd.txt).
pub fn profile_args(opts: &ProfileOptions, program: &[String]) -> Vec<String> {
    let trace = if opts.trace.is_empty() {
        "cuda,nvtx,osrt".to_string()
    } else {
        opts.trace.join(",")
    };
    let mut args: Vec<String> = vec![
        "profile".into(),
        format!("--trace={trace}"),
        "--sample=none".into(),
        "--cuda-graph-trace=node".into(),
    ];
    if let Some(range) = &opts.capture_range {
        args.push("--capture-range=nvtx".into());
        args.push(format!("--nvtx-capture={range}"));
        args.push("--capture-range-end=stop".into());
        args.push("--env-var=NSYS_NVTX_PROFILER_REGISTER_ONLY=0".into());
    }
    args.push("--force-overwrite=true".into());
    args.push("--output".into());
    args.push(opts.output.display().to_string());
    args.extend(opts.extra_args.iter().cloned());
    args.extend(program.iter().cloned());
    args
}

/// `nsys stats` arguments that export every report in [`ReportKind::ALL`] as CSV files named
/// `<prefix>_<report>.csv` (see [`stats_output_path`]).
pub fn stats_args(report: &Path, prefix: &Path) -> Vec<String> {
    let reports: Vec<&str> = ReportKind::ALL.iter().map(|k| k.name()).collect();
    vec![
        "stats".into(),
        "--report".into(),
        reports.join(","),
        "--format".into(),
        "csv".into(),
        "--force-export=true".into(),
        "--output".into(),
        prefix.display().to_string(),
        report.display().to_string(),
    ]
}

/// Where `nsys stats --output <prefix>` writes `kind`.
pub fn stats_output_path(prefix: &Path, kind: ReportKind) -> PathBuf {
    PathBuf::from(format!("{}_{}.csv", prefix.display(), kind.name()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn profile_whole_run() {
        let opts = ProfileOptions {
            output: "runs/a/nsys/run".into(),
            capture_range: None,
            trace: vec![],
            extra_args: vec![],
        };
        assert_eq!(
            profile_args(&opts, &s(&["llmprof-worker", "--stage", "2"])),
            s(&[
                "profile",
                "--trace=cuda,nvtx,osrt",
                "--sample=none",
                "--cuda-graph-trace=node",
                "--force-overwrite=true",
                "--output",
                "runs/a/nsys/run",
                "llmprof-worker",
                "--stage",
                "2"
            ])
        );
    }

    #[test]
    fn profile_one_nvtx_range() {
        let opts = ProfileOptions {
            output: "o".into(),
            capture_range: Some("decode".into()),
            trace: vec!["cuda".into(), "nvtx".into()],
            extra_args: vec!["--stats=false".into()],
        };
        assert_eq!(
            profile_args(&opts, &s(&["w"])),
            s(&[
                "profile",
                "--trace=cuda,nvtx",
                "--sample=none",
                "--cuda-graph-trace=node",
                "--capture-range=nvtx",
                "--nvtx-capture=decode",
                "--capture-range-end=stop",
                "--env-var=NSYS_NVTX_PROFILER_REGISTER_ONLY=0",
                "--force-overwrite=true",
                "--output",
                "o",
                "--stats=false",
                "w"
            ])
        );
    }

    #[test]
    fn stats_exports_all_reports() {
        assert_eq!(
            stats_args(Path::new("r/run.nsys-rep"), Path::new("r/stats")),
            s(&[
                "stats",
                "--report",
                "cuda_gpu_kern_sum,nvtx_sum,nvtx_gpu_proj_sum,cuda_api_sum,cuda_gpu_mem_time_sum",
                "--format",
                "csv",
                "--force-export=true",
                "--output",
                "r/stats",
                "r/run.nsys-rep"
            ])
        );
        assert_eq!(
            stats_output_path(Path::new("r/stats"), ReportKind::NvtxSum),
            PathBuf::from("r/stats_nvtx_sum.csv")
        );
    }
}
