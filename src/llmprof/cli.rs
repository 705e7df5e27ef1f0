//! Command line: `llmprof [stage1|stage2|infer] [OVERRIDES...]` with Hydra's flags, plus
//! `analyze`, `debug` and `compare`. Only parsing lives here; meaning is given in `app`.
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
    /// Output format for --cfg (yaml|json), analyze (md|json; trace also html) and compare
    /// (md|json|html).
    #[arg(long, global = true, value_enum, value_name = "FORMAT")]
    pub format: Option<Format>,
    /// Run once per combination of the sweep overrides (a=1,2 b=range(3)).
    #[arg(short = 'm', long, global = true)]
    pub multirun: bool,
    /// With -m: run again, in the sweep directory SWEEP_DIR, only the jobs that did not succeed
    /// (the launcher may be changed with hydra/launcher=…; docs/launchers.md).
    #[arg(long, global = true, value_name = "SWEEP_DIR")]
    pub resume: Option<PathBuf>,
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
    Html,
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
    /// Analyse what a user already has (no GPU needed): PyTorch profiler traces, Nsight outputs.
    Analyze {
        #[command(subcommand)]
        tool: AnalyzeTool,
    },
    /// One job of a sweep, as the local and Slurm launchers start it (internal).
    #[command(name = "__job", hide = true)]
    Job { sweep_dir: PathBuf, num: usize },
    /// Compare two stage1 runs (or two multirun roots): deltas, significance tests, verdicts.
    /// Exit 0: no significant regression; 1: a regression beyond the threshold; 2: bad input.
    Compare {
        /// The baseline: a run directory or a multirun root.
        a: PathBuf,
        /// The candidate, of the same kind as A.
        b: PathBuf,
        /// Smallest change in % that counts as a regression or improvement.
        #[arg(long, value_name = "PCT", default_value_t = 5.0)]
        threshold: f64,
        /// Comma-separated metrics to compare (keys, groups such as `stage`, or stage names).
        #[arg(long, value_name = "LIST", value_delimiter = ',')]
        metrics: Vec<String>,
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
    /// Numerical debugging entry points of the workload (compare against a reference): logits,
    /// fast-path, vision, sam. Run by llmprof-worker, which owns their arguments: `llmprof debug
    /// --help` lists them.
    #[command(disable_help_flag = true)]
    Debug {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0.., value_parser = clap::value_parser!(std::ffi::OsString))]
        args: Vec<std::ffi::OsString>,
    },
    /// Site settings (docs/settings.md): the merged settings and where each value comes from.
    Settings,
    /// Dataset variants and dataset downloads (docs/datasets.md).
    Dataset {
        #[command(subcommand)]
        what: DatasetCommand,
    },
    /// Checkpoints from the Hugging Face Hub into the shared HF cache (docs/weights.md).
    Models {
        #[command(subcommand)]
        what: ModelsCommand,
    },
}

#[derive(Debug, Subcommand)]
pub enum DatasetCommand {
    /// Make datasets/<dataset>/<variant>/: a seeded subset of the source data with its
    /// provenance in metadata.yaml (the source is not modified; existing variants are kept).
    MakeVariant {
        /// The dataset option (conf/dataset/<dataset>.yaml), e.g. samples or omnidocbench.
        dataset: String,
        /// The variant's name (its folder), e.g. subset-20.
        #[arg(long)]
        variant: String,
        /// How many items (pages or JSONL lines) to keep.
        #[arg(long)]
        num_samples: u64,
        /// Seed of the selection: the same seed picks the same items everywhere.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Pick only among the pages this file lists (one per line, relative to the images).
        #[arg(long, value_name = "FILE")]
        subset_file: Option<PathBuf>,
        /// Pick only among pages of this kind (samples: table, formula, ...; omnidocbench: its
        /// page_attribute.data_source, e.g. academic_literature).
        #[arg(long)]
        kind: Option<String>,
        /// Config overrides for the dataset (e.g. dataset.root=<folder> for dataset=folder).
        #[arg(value_name = "OVERRIDES")]
        overrides: Vec<String>,
    },
    /// Download a dataset repository of the Hub into the HF cache; prints the snapshot folder.
    Download {
        /// Repository id, e.g. opendatalab/OmniDocBench.
        repo: String,
        #[arg(long)]
        revision: Option<String>,
        /// Only files matching these globs (`*` does not cross `/`); default: all.
        #[arg(long, value_name = "GLOB")]
        include: Vec<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum ModelsCommand {
    /// Fetch the safetensors, index, config and tokenizer files of a model; prints the snapshot
    /// folder. Resumes interrupted downloads; HF_HUB_OFFLINE=1 only checks the cache.
    Download {
        /// A model preset (conf/model/<preset>.yaml, its model.repo_id) or a repository id
        /// (org/name).
        model: String,
        /// Branch, tag or commit (default: the preset's model.revision, else main).
        #[arg(long)]
        revision: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum AnalyzeTool {
    /// PyTorch profiler (Kineto) traces from any program (torch.profiler, vLLM, SGLang, llmprof):
    /// operators, kernels by annotation, the GPU's time (computation, communication, copies,
    /// idle), CUDA-graph replays, ranks side by side. docs/analyze-trace.md.
    Trace {
        /// Trace files (.json or .json.gz) or folders of them (one file per rank).
        #[arg(required = true, value_name = "PATH")]
        paths: Vec<PathBuf>,
        /// Write a folder (report.md, report.html, analysis.json, kernels.md, operators.md,
        /// regions.md) instead of printing.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Annotations that are regions: names or globs, comma-separated (e.g.
        /// 'prefill,decode*'). Default: every annotation but ProfilerStep#N.
        #[arg(long, value_name = "LIST", value_delimiter = ',')]
        regions: Vec<String>,
        /// Rows per table in printed markdown and report.md.
        #[arg(long, value_name = "N", default_value_t = 25)]
        top: usize,
    },
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

impl Command {
    pub fn name(&self) -> &'static str {
        match self {
            Command::Stage1 { .. } => "stage1",
            Command::Stage2 { .. } => "stage2",
            Command::Infer { .. } => "infer",
            Command::Analyze { .. } => "analyze",
            Command::Report { .. } => "report",
            Command::Debug { .. } => "debug",
            Command::Job { .. } => "__job",
            Command::Compare { .. } => "compare",
            Command::Settings => "settings",
            Command::Dataset { .. } => "dataset",
            Command::Models { .. } => "models",
        }
    }
}

/// The help of the deepest subcommand `args` name (`analyze`, `analyze ncu`, ...),
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
