//! `llmprof-worker`: the half of llmprof that links libtorch. `llmprof` launches it as
//! `llmprof-worker <stage1|stage2|infer> <run_dir>` (the run directory holds
//! config.resolved.yaml) or forwards `debug ...` to it.
#[path = "../workload/mod.rs"]
mod workload;

use anyhow::{bail, Context, Result};
use std::path::PathBuf;

fn main() {
    llmprof::logging::init_stderr();
    if let Err(e) = run() {
        let msg = format!("{e:#}");
        tracing::error!("{msg}");
        // The front end puts this text into status.json.
        if let Some(dir) = std::env::args().nth(2) {
            let _ = std::fs::write(PathBuf::from(dir).join(llmprof::run_dir::WORKER_ERROR), &msg);
        }
        std::process::exit(1);
    }
}

fn run() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(command) = args.first() else {
        bail!("usage: llmprof-worker <stage1|stage2|infer> <run_dir> (normally started by llmprof)");
    };
    match command.as_str() {
        "stage1" | "stage2" | "infer" => {
            let dir = PathBuf::from(args.get(1).context("missing run directory argument")?);
            llmprof::logging::log_to_file(&dir.join(llmprof::run_dir::LOG_FILE))?;
            let text = std::fs::read_to_string(dir.join(llmprof::run_dir::RESOLVED_CONFIG))
                .with_context(|| format!("reading the resolved config in {}", dir.display()))?;
            let tree = llmprof::config::yaml::parse(&text).map_err(|e| anyhow::anyhow!("{e}"))?;
            let spec = llmprof::spec::RunSpec::from_tree(&tree)?;
            tracing::info!(cuda = tch::Cuda::is_available(), device = %spec.device, "worker started");
            match command.as_str() {
                "stage1" => workload::stage1::run(&spec, &dir),
                other => bail!("the {other} workload is not implemented in this build yet"),
            }
        }
        other => bail!("unknown worker command '{other}'"),
    }
}
