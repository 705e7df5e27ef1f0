//! `llmprof debug logits --tensor-parallel N`: the parity check of a split model. This process
//! starts N copies of its own command, rank k told by its environment as a run's ranks are
//! (run_files: TP_RANK_ENV, TP_WORLD_ENV, TP_DIR_ENV; GPU k each where there are GPUs, NVLink
//! multicast off), waits for all, and stops the others when one fails. Rank 0 writes `--out`:
//! the logits and tokens of the split model, which must equal the unsplit model's.
use anyhow::{bail, Context, Result};
use llmprof::rank_procs::{stop_all, wait_all, RankFailure};
use llmprof::run_files::{gpu_of_rank, NO_MULTICAST, TP_DIR_ENV, TP_RANK_ENV, TP_WORLD_ENV};
use std::convert::Infallible;
use std::path::Path;
use std::process::{Child, Command};
use std::time::Duration;

/// How long a rank has after SIGTERM when another failed.
const RANK_GRACE: Duration = Duration::from_secs(10);

/// Runs this process's command as `world` ranks (next to `out`, a rendezvous folder removed
/// after) and waits for them.
pub fn run_ranks(world: usize, out: &Path) -> Result<()> {
    let gpus = tch::Cuda::device_count().max(0) as usize;
    if gpus > 0 && world > gpus {
        bail!("--tensor-parallel {world} needs {world} GPUs; {gpus} visible\n  fix: --tensor-parallel {gpus} or fewer");
    }
    let exe = std::env::current_exe().context("finding this program to start the ranks")?;
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let name = out
        .file_name()
        .map_or("out".into(), |n| n.to_string_lossy().to_string());
    let dir = out.with_file_name(format!(".{name}.tp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut ranks: Vec<Child> = Vec::new();
    for k in 0..world {
        let mut cmd = Command::new(&exe);
        cmd.args(&args)
            .env(TP_RANK_ENV, k.to_string())
            .env(TP_WORLD_ENV, world.to_string())
            .env(TP_DIR_ENV, &dir)
            .envs(NO_MULTICAST);
        if gpus > 0 {
            cmd.env("CUDA_VISIBLE_DEVICES", gpu_of_rank(k));
        }
        match cmd.spawn() {
            Ok(c) => ranks.push(c),
            Err(e) => {
                stop_all(&mut ranks);
                let _ = std::fs::remove_dir_all(&dir);
                bail!("starting rank {k} ({}): {e}", exe.display());
            }
        }
    }
    // No heartbeat here: a check's ranks run seconds; a hung one is the user's Ctrl-C.
    let failed = wait_all(
        &mut ranks,
        RANK_GRACE,
        |_| None::<(usize, Infallible)>,
        |_| {},
    );
    let _ = std::fs::remove_dir_all(&dir);
    match failed {
        None => Ok(()),
        Some((_, RankFailure::Stalled(never))) => match never {},
        Some((k, RankFailure::Unwaitable(e))) => {
            bail!("debug logits: rank {k} of {world} could not be waited for ({e}); the other ranks were stopped")
        }
        Some((k, RankFailure::Exited(status))) => bail!(
            "debug logits: rank {k} of {world} failed ({status}; its error is above); the other ranks were stopped"
        ),
    }
}
