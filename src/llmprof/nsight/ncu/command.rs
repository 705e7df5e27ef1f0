//! Pure argv builders for `ncu` (profile to CSV or to a report, and `--import` a report to CSV).

use std::path::{Path, PathBuf};

/// What ncu collects per kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Collect {
    /// `--section <name>` for each.
    Sections(Vec<String>),
    /// `--set <name>` (`basic`, `detailed`, `full`, `roofline`).
    Set(String),
}

/// Where ncu writes its results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// `--csv --page raw --print-units base --log-file <path>`: CSV apart from program stdout.
    CsvLog(PathBuf),
    /// `-o <path>` (ncu appends `.ncu-rep`); read back with [`import_args`].
    Report(PathBuf),
}

/// `--clock-control`: ncu locks the GPU clocks to base during profiling by default (`base`),
/// which makes kernels run below their boost clock; `none` leaves the clocks to the driver. The
/// roofline uses the clock each kernel ran at either way (`sm__cycles_elapsed.avg.per_second`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockControl {
    Base,
    None,
}

impl ClockControl {
    pub fn arg(self) -> &'static str {
        match self {
            ClockControl::Base => "base",
            ClockControl::None => "none",
        }
    }
}

/// Plain options for one ncu run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// NVTX include expressions (`--nvtx-include`, OR-ed). ncu matches a push/pop expression
    /// against the whole range stack, innermost last: `decode/` does not match a kernel inside
    /// `decode/decode_step/`, so callers list every nested path they want.
    pub nvtx_includes: Vec<String>,
    /// `--kernel-name regex:<re>`.
    pub kernel_regex: Option<String>,
    pub launch_skip: Option<u64>,
    pub launch_count: Option<u64>,
    pub collect: Collect,
    /// Extra metrics (`--metrics a,b`), e.g. `sm__ops_path_tensor_src_bf16_dst_fp32.sum` for FLOPs.
    pub metrics: Vec<String>,
    /// Always passed, so that the command line (cmd.txt) records it.
    pub clock_control: ClockControl,
    pub output: Output,
}

/// The sections stage 2 collects for a roofline, with the tensor FLOP and DRAM byte counters that
/// those sections lack (see nsight::ncu::metrics), and the SM and DRAM clocks each kernel ran at
/// (the SpeedOfLight section has them too, but a user's `sections` may leave it out).
pub fn roofline_defaults() -> (Collect, Vec<String>) {
    let sections = [
        "SpeedOfLight",
        "MemoryWorkloadAnalysis",
        "Occupancy",
        "SpeedOfLight_RooflineChart",
    ];
    let metrics = [
        "dram__bytes_read.sum",
        "dram__bytes_write.sum",
        "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
        "sm__ops_path_tensor_src_fp16_dst_fp32.sum",
        "sm__ops_path_tensor_src_fp16_dst_fp16.sum",
        "sm__ops_path_tensor_src_tf32_dst_fp32.sum",
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
        "sm__cycles_elapsed.avg.per_second",
        "dram__cycles_elapsed.avg.per_second",
    ];
    (
        Collect::Sections(sections.map(String::from).into()),
        metrics.map(String::from).into(),
    )
}

/// `ncu` arguments (without `ncu`), followed by `program`.
pub fn profile_args(opts: &Options, program: &[String]) -> Vec<String> {
    let mut a: Vec<String> = vec!["--target-processes".into(), "all".into()];
    if !opts.nvtx_includes.is_empty() {
        a.push("--nvtx".into());
        for expr in &opts.nvtx_includes {
            a.extend(["--nvtx-include".into(), expr.clone()]);
        }
    }
    if let Some(re) = &opts.kernel_regex {
        a.extend(["--kernel-name".into(), format!("regex:{re}")]);
    }
    if let Some(n) = opts.launch_skip {
        a.extend(["--launch-skip".into(), n.to_string()]);
    }
    if let Some(n) = opts.launch_count {
        a.extend(["--launch-count".into(), n.to_string()]);
    }
    match &opts.collect {
        Collect::Sections(list) => {
            for s in list {
                a.extend(["--section".into(), s.clone()]);
            }
        }
        Collect::Set(name) => a.extend(["--set".into(), name.clone()]),
    }
    if !opts.metrics.is_empty() {
        a.extend(["--metrics".into(), opts.metrics.join(",")]);
    }
    a.extend([
        "--clock-control".into(),
        opts.clock_control.arg().to_string(),
    ]);
    match &opts.output {
        Output::CsvLog(path) => a.extend(
            [
                "--csv",
                "--page",
                "raw",
                "--print-units",
                "base",
                "--log-file",
            ]
            .map(String::from)
            .into_iter()
            .chain([path.display().to_string()]),
        ),
        Output::Report(path) => a.extend([
            "--force-overwrite".into(),
            "-o".into(),
            path.display().to_string(),
        ]),
    }
    a.extend(program.iter().cloned());
    a
}

/// `ncu --import <report> --csv --page raw --print-units base` (stdout is the CSV).
pub fn import_args(report: &Path) -> Vec<String> {
    vec![
        "--import".into(),
        report.display().to_string(),
        "--csv".into(),
        "--page".into(),
        "raw".into(),
        "--print-units".into(),
        "base".into(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn csv_log_with_nvtx_and_sections() {
        let opts = Options {
            nvtx_includes: s(&["decode/", "decode/decode_step/"]),
            kernel_regex: Some("gemv|gemm".into()),
            launch_skip: Some(50),
            launch_count: Some(1),
            collect: Collect::Sections(s(&["SpeedOfLight", "Occupancy"])),
            metrics: s(&["dram__bytes_read.sum", "dram__bytes_write.sum"]),
            clock_control: ClockControl::Base,
            output: Output::CsvLog("run/ncu.csv".into()),
        };
        assert_eq!(
            profile_args(&opts, &s(&["llmprof-worker", "x"])),
            s(&[
                "--target-processes",
                "all",
                "--nvtx",
                "--nvtx-include",
                "decode/",
                "--nvtx-include",
                "decode/decode_step/",
                "--kernel-name",
                "regex:gemv|gemm",
                "--launch-skip",
                "50",
                "--launch-count",
                "1",
                "--section",
                "SpeedOfLight",
                "--section",
                "Occupancy",
                "--metrics",
                "dram__bytes_read.sum,dram__bytes_write.sum",
                "--clock-control",
                "base",
                "--csv",
                "--page",
                "raw",
                "--print-units",
                "base",
                "--log-file",
                "run/ncu.csv",
                "llmprof-worker",
                "x"
            ])
        );
    }

    #[test]
    fn report_with_set_then_import() {
        let opts = Options {
            nvtx_includes: vec![],
            kernel_regex: None,
            launch_skip: None,
            launch_count: Some(10),
            collect: Collect::Set("roofline".into()),
            metrics: vec![],
            clock_control: ClockControl::None,
            output: Output::Report("run/k".into()),
        };
        assert_eq!(
            profile_args(&opts, &s(&["w"])),
            s(&[
                "--target-processes",
                "all",
                "--launch-count",
                "10",
                "--set",
                "roofline",
                "--clock-control",
                "none",
                "--force-overwrite",
                "-o",
                "run/k",
                "w"
            ])
        );
        assert_eq!(
            import_args(Path::new("run/k.ncu-rep")),
            s(&[
                "--import",
                "run/k.ncu-rep",
                "--csv",
                "--page",
                "raw",
                "--print-units",
                "base"
            ])
        );
    }

    #[test]
    fn defaults_collect_tensor_counters() {
        let (collect, metrics) = roofline_defaults();
        assert!(
            matches!(collect, Collect::Sections(ref v) if v.contains(&"SpeedOfLight_RooflineChart".to_string()))
        );
        assert!(metrics.contains(&"sm__ops_path_tensor_src_bf16_dst_fp32.sum".to_string()));
        // The clocks the roofs use: recorded by every export in tests/fixtures/stage2/ncu-h100-llmprof
        // and ncu/h200/ncu_raw.csv, collected explicitly so that custom sections keep them.
        for clock in [
            "sm__cycles_elapsed.avg.per_second",
            "dram__cycles_elapsed.avg.per_second",
        ] {
            assert!(metrics.contains(&clock.to_string()), "{clock}");
        }
    }
}
