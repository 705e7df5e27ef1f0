//! Running Slurm's commands: `sbatch --parsable`, `squeue`, `scontrol -o show job`, `scancel`.
//! Each checks its exit status; a missing command is an error that names the launcher and the
//! ways out. Parsing is state.rs's.
use super::state::{parse_sbatch_id, parse_scontrol, parse_squeue, SlurmTask};
use anyhow::{bail, Context, Result};
use std::path::Path;
use std::process::{Command, Output};

fn run(tool: &str, args: &[&str]) -> Result<Output> {
    match Command::new(tool).args(args).output() {
        Ok(o) => Ok(o),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!(
            "hydra/launcher=slurm needs `{tool}`, which is not on PATH\n  fix: run on a Slurm submit host, or install the client (apt-get install slurm-client) and point it at your cluster; or choose hydra/launcher=basic (one job at a time) or hydra/launcher=local (parallel on this machine)"
        ),
        Err(e) => Err(e).with_context(|| format!("running {tool}")),
    }
}

fn failed(tool: &str, o: &Output) -> anyhow::Error {
    anyhow::anyhow!(
        "{tool} failed ({}): {}",
        o.status,
        String::from_utf8_lossy(&o.stderr).trim()
    )
}

/// Checks that the submit-side commands exist before anything is written.
pub fn check_tools() -> Result<()> {
    for tool in ["sbatch", "squeue", "scontrol", "scancel"] {
        run(tool, &["--version"])?;
    }
    Ok(())
}

/// Submits `script`; returns the array's job id.
pub fn sbatch(script: &Path) -> Result<String> {
    let path = script.display().to_string();
    let o = run("sbatch", &["--parsable", &path])?;
    if !o.status.success() {
        return Err(failed("sbatch", &o)).with_context(|| format!("submitting {path}"));
    }
    let out = String::from_utf8_lossy(&o.stdout);
    parse_sbatch_id(&out).with_context(|| format!("sbatch printed no job id: {out:?}"))
}

/// The array's tasks still queued or running.
pub fn squeue(array: &str) -> Result<Vec<SlurmTask>> {
    let o = run("squeue", &["-h", "-r", "-j", array, "-o", "%K|%T|%r"])?;
    // A job that has left the queue is "Invalid job id" for some versions: nothing queued.
    let err = String::from_utf8_lossy(&o.stderr);
    if !o.status.success() && !err.contains("Invalid job id") {
        return Err(failed("squeue", &o));
    }
    Ok(parse_squeue(&String::from_utf8_lossy(&o.stdout)))
}

/// Every task record the controller still holds (finished ones for MinJobAge, 300 s by
/// default); empty once it has forgotten the array.
pub fn scontrol(array: &str) -> Vec<SlurmTask> {
    match run("scontrol", &["-o", "show", "job", array]) {
        Ok(o) => parse_scontrol(&String::from_utf8_lossy(&o.stdout)),
        Err(_) => Vec::new(),
    }
}

pub fn scancel(array: &str) -> Result<()> {
    let o = run("scancel", &[array])?;
    if !o.status.success() {
        return Err(failed("scancel", &o));
    }
    Ok(())
}
