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
    /// Output format for --cfg (yaml|json), analyze (md|json) and compare (md|json|html).
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
    /// Analyse Nsight outputs a user already has (no GPU needed).
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
    /// Numerical debugging entry points of the workload (compare against a reference).
    Debug {
        #[command(subcommand)]
        what: DebugCommand,
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
        /// The presets of `runtime=eager` (every switch off, op-by-op decode steps) or
        /// `runtime=fast` (the defaults, fixed-shape decode steps captured as CUDA graphs on a
        /// GPU), engine and model switches alike (docs/fast-path.md): what the parity checks
        /// against HF transformers compare.
        #[arg(long, value_parser = ["eager", "fast"], default_value = "eager")]
        optim: String,
        /// With `--optim fast`: KV slots per captured decode window (small values make the
        /// steps cross windows).
        #[arg(long, default_value_t = 64)]
        kv_bucket: i64,
    },
    /// Fast path against eager on seeded synthetic weights: each switch (runtime.optim and the
    /// family's model.optim) alone on the eager presets and the fast presets with CUDA graphs; fp32 greedy tokens must match fp32 eager, and a bf16
    /// variant may not be less accurate than eager bf16. DeepSeek-OCR also checks its vision
    /// switches (SAM attention, batched vision) on synthetic pages: fp32 embeddings within 1e-5
    /// relative of eager. Exits non-zero on a failure; --json writes {"decoder", "vision"}.
    FastPath {
        /// Architecture: the released DeepSeek-OCR (`full`) or the tiny test one, DeepSeek-OCR-2
        /// (`deepseek_ocr2`, `deepseek_ocr2_tiny`), or a dense decoder preset (qwen2_5_0_5b,
        /// qwen2_5_7b, llama3_1_8b, each also as `<name>_tiny`).
        #[arg(long, value_parser = ["full", "tiny", "deepseek_ocr2", "deepseek_ocr2_tiny", "qwen2_5_0_5b", "qwen2_5_7b", "llama3_1_8b", "qwen2_5_0_5b_tiny", "qwen2_5_7b_tiny", "llama3_1_8b_tiny"], default_value = "full")]
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
    /// The whole vision path of DeepSeek-OCR or DeepSeek-OCR-2 (SAM, the encoder after it,
    /// projector, arrangement) from a weights file: writes `embeddings` [image tokens, hidden]
    /// (f32), `image_tokens`, `grid` [cols, rows] and the encoded pixels to --out.
    Vision {
        #[arg(long)]
        weights: PathBuf,
        #[arg(long, value_parser = ["deepseek_ocr", "deepseek_ocr2", "tiny", "tiny_ocr2"], default_value = "deepseek_ocr2")]
        arch: String,
        /// Safetensors with `global` [1,3,S,S], optional `tiles` [n,3,s,s] and `grid` [cols, rows].
        #[arg(long, conflicts_with = "image")]
        pixels: Option<PathBuf>,
        /// A page image, through llmprof's preprocessing (the released crop mode of --arch).
        #[arg(long)]
        image: Option<PathBuf>,
        #[arg(long, value_parser = ["fp32", "bf16"], default_value = "fp32")]
        dtype: String,
        /// The presets of `runtime=fast` (the defaults: fused SAM attention, llmprof's kernels,
        /// fused projections, SDPA) or `runtime=eager` (reference formulations).
        #[arg(long, value_parser = ["fast", "eager"], default_value = "fast")]
        optim: String,
        #[arg(long)]
        out: PathBuf,
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
        /// The presets of `runtime=eager` (the reference formulation) or `runtime=fast` (SAM's
        /// fused relative-position attention, llmprof's CUDA and Hopper kernels where they run).
        #[arg(long, value_parser = ["eager", "fast"], default_value = "eager")]
        optim: String,
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
