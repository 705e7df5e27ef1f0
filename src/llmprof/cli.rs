//! Command line: `llmprof [stage1|stage2|infer] [OVERRIDES...]` with Hydra's flags, plus
//! `analyze` and `debug`. Only parsing lives here; meaning is given in `app`.
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "llmprof",
    version = crate::VERSION,
    about = "Profile LLM inference (DeepSeek-OCR) on NVIDIA GPUs",
    long_about = None,
    disable_help_flag = true,
    args_conflicts_with_subcommands = false,
    subcommand_precedence_over_arg = false,
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub hydra: HydraFlags,
    /// Config overrides (`key=value`, `group=option`, `+key=v`, `++key=v`, `~key`).
    #[arg(value_name = "OVERRIDES", global = false)]
    pub overrides: Vec<String>,
}

/// Hydra's flags, accepted before or after the subcommand.
#[derive(Debug, Args, Clone, Default)]
pub struct HydraFlags {
    /// Config directory (default: ./conf, else the conf/ next to the binary's repository).
    #[arg(long, global = true, value_name = "DIR")]
    pub config_dir: Option<PathBuf>,
    /// Config path relative to the current directory (Hydra's --config-path; same as --config-dir).
    #[arg(long, global = true, value_name = "DIR")]
    pub config_path: Option<PathBuf>,
    /// Primary config name (default: config).
    #[arg(long, global = true, value_name = "NAME")]
    pub config_name: Option<String>,
    /// Print the composed config (job, hydra or all) and exit without running.
    #[arg(long, global = true, value_enum, value_name = "PART")]
    pub cfg: Option<CfgPart>,
    /// With --cfg: resolve interpolations before printing.
    #[arg(long, global = true)]
    pub resolve: bool,
    /// Output format for --cfg (yaml|json) and analyze (md|json).
    #[arg(long, global = true, value_enum, value_name = "FORMAT")]
    pub format: Option<Format>,
    /// Run once per combination of the sweep overrides (a=1,2 b=range(3)).
    #[arg(short = 'm', long, global = true)]
    pub multirun: bool,
    /// Print help, with the config groups and their options.
    #[arg(short = 'h', long, global = true)]
    pub help: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CfgPart {
    Job,
    Hydra,
    All,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Yaml,
    Json,
    Md,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Timings, Kineto operator/kernel tables, NVML telemetry, MFU/MBU, reports.
    Stage1 {
        #[arg(value_name = "OVERRIDES")]
        overrides: Vec<String>,
    },
    /// Re-run the workload under Nsight Systems / Nsight Compute; kernel tables and roofline.
    Stage2 {
        #[arg(value_name = "OVERRIDES")]
        overrides: Vec<String>,
    },
    /// Run the model over the dataset and write predictions (no profilers).
    Infer {
        #[arg(value_name = "OVERRIDES")]
        overrides: Vec<String>,
    },
    /// Analyse Nsight outputs a user already has (no GPU needed).
    Analyze {
        #[command(subcommand)]
        tool: AnalyzeTool,
    },
    /// Rebuild report.html (one self-contained page) from a run directory's artifacts.
    Report {
        /// A run directory (stage1, stage2, infer) or a multirun root.
        #[arg(value_name = "RUN_DIR")]
        dir: PathBuf,
        /// Open the page in the desktop's browser afterwards.
        #[arg(long)]
        open: bool,
    },
    /// Numerical debugging entry points of the workload (compare against a reference).
    Debug {
        #[command(subcommand)]
        what: DebugCommand,
    },
}

#[derive(Debug, Subcommand)]
pub enum AnalyzeTool {
    /// `nsys stats` CSV exports (a folder or one CSV) or a `.nsys-rep`.
    Nsys { path: PathBuf },
    /// Nsight Compute CSVs (`--page raw` or details/metrics layouts): a folder or one CSV.
    Ncu {
        path: PathBuf,
        /// GPU name for peaks when the CSV has no device attributes (e.g. "H100 SXM").
        #[arg(long)]
        gpu: Option<String>,
    },
}

#[derive(Debug, Subcommand, Clone)]
pub enum DebugCommand {
    /// Decoder logits for a prompt and N greedy tokens, from a safetensors file.
    Logits {
        #[arg(long)]
        weights: PathBuf,
        /// JSON list of token ids.
        #[arg(long)]
        ids: PathBuf,
        #[arg(long, value_parser = ["fp32", "bf16"], default_value = "fp32")]
        dtype: String,
        #[arg(long, default_value_t = 0)]
        greedy: usize,
        #[arg(long)]
        out: PathBuf,
    },
    /// Fast path against eager on seeded synthetic decoder weights: each runtime.optim switch
    /// alone and all together with CUDA graphs; fp32 greedy tokens must match fp32 eager, and a
    /// bf16 variant may not be less accurate than eager bf16. Exits non-zero on a failure.
    FastPath {
        /// Architecture: the released DeepSeek-OCR decoder or the tiny test one.
        #[arg(long, value_parser = ["full", "tiny"], default_value = "full")]
        arch: String,
        #[arg(long, default_value_t = 64)]
        steps: usize,
        /// Prompt lengths of the (left-padded) batch rows.
        #[arg(long, value_delimiter = ',', default_value = "913,600")]
        prompt_lens: Vec<usize>,
        /// KV slots per captured window (small values make the check cross windows).
        #[arg(long, default_value_t = 64)]
        kv_bucket: i64,
        #[arg(long, default_value_t = 0)]
        seed: i64,
        /// Also write the results as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// SAM encoder features for normalised pixels, from a safetensors file.
    Sam {
        #[arg(long)]
        weights: PathBuf,
        #[arg(long)]
        pixels: PathBuf,
        #[arg(long)]
        out: PathBuf,
        /// Compute dtype (the pixels are converted; features are written as f32).
        #[arg(long, value_parser = ["fp32", "bf16"], default_value = "fp32")]
        dtype: String,
    },
}

impl Command {
    pub fn name(&self) -> &'static str {
        match self {
            Command::Stage1 { .. } => "stage1",
            Command::Stage2 { .. } => "stage2",
            Command::Infer { .. } => "infer",
            Command::Analyze { .. } => "analyze",
            Command::Report { .. } => "report",
            Command::Debug { .. } => "debug",
        }
    }
}

/// The help of the deepest subcommand `args` name (`analyze`, `analyze ncu`, `debug logits`, ...),
/// for `--help` on a subcommand whose required arguments are missing.
pub fn subcommand_help(args: &[String]) -> Option<String> {
    use clap::CommandFactory;
    let mut cmd = Cli::command();
    let mut found = false;
    for a in args {
        match cmd.find_subcommand(a) {
            Some(sub) => {
                cmd = sub.clone();
                found = true;
            }
            None => continue,
        }
    }
    found.then(|| cmd.render_help().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subcommand_help_follows_the_path() {
        let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let ncu = subcommand_help(&args(&["analyze", "ncu", "--help"])).unwrap();
        assert!(ncu.contains("--gpu"), "{ncu}");
        let analyze = subcommand_help(&args(&["analyze", "--help"])).unwrap();
        assert!(
            analyze.contains("nsys") && analyze.contains("ncu"),
            "{analyze}"
        );
        assert!(subcommand_help(&args(&["--help"])).is_none());
    }
}
