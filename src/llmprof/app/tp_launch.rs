//! The ranks of a tensor-parallel run (`runtime.tensor_parallel=N`, docs/design/tensor-parallel.md
//! §1): N worker processes of the same command, rank k told by its environment, writing into the
//! run directory (rank 0) or `<run>/rank<k>` (each rank its own measurements), one GPU each where
//! there are GPUs, with NVLink multicast off. The first rank that fails stops the others at once,
//! so no rank outlives the run; the error names the rank. A rank that hangs (its progress mark
//! unchanged for `runtime.tensor_parallel_timeout_s`, rank_watch.rs) stops the run the same way.
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::rank_procs::{own_group, stop_all, RankFailure};
use crate::run_files::{
    gpu_of_rank, NO_MULTICAST, RANK_DIR_PREFIX, TP_DIR, TP_DIR_ENV, TP_PROFILED_RANK_ENV,
    TP_PROFILER_ENV, TP_RANK_ENV, TP_WORLD_ENV,
};

/// For `runtime.tensor_parallel` > 1: whether the ranks take one GPU each (`Some(true)`) or run on
/// the CPU (`Some(false)`); `None` for one rank, and for stage 2 (its children start the ranks). More ranks than visible GPUs, or a stage the
/// ranks do not run, is refused before any run directory exists.
pub fn placement(spec: &crate::spec::RunSpec, command: &str) -> Result<Option<bool>> {
    let world = spec.runtime.tensor_parallel as usize;
    if world <= 1 {
        return Ok(None);
    }
    // Stage 2 runs no ranks itself: its child `llmprof stage1`s do, one of them under the
    // profiler (pipeline.ncu.rank).
    let stage2 = command == "stage2";
    let gpus = crate::launcher::gpus::visible();
    let on_gpus = spec.device != "cpu" && !gpus.is_empty();
    // Without GPUs the ranks run the preset's tiny CPU fallback: it must split too.
    if let (false, crate::model::Arch::DenseDecoder(a)) = (on_gpus, &spec.model.arch) {
        if spec.model.name != spec.model.cpu_fallback {
            crate::model::dense::tensor_parallel::check(&a.tiny(), world as i64).map_err(|e| {
                anyhow::anyhow!(
                    "the CPU fallback {} (which runs without a GPU): {e}",
                    spec.model.cpu_fallback
                )
            })?;
        }
    }
    if on_gpus && world > gpus.len() {
        bail!(
            "runtime.tensor_parallel={world} needs {world} GPUs; {} visible ({})\n  fix: runtime.tensor_parallel={} or fewer",
            gpus.len(),
            gpus.join(", "),
            gpus.len()
        );
    }
    Ok((!stage2).then_some(on_gpus))
}

/// The profiler command line that wraps one rank's worker (stage 2 of a tensor-parallel run):
/// (the rank, the profiler's argv before the worker's), from this process's environment.
fn profiler_of_rank() -> Result<Option<(usize, Vec<String>)>> {
    let (Ok(rank), Ok(argv)) = (
        std::env::var(TP_PROFILED_RANK_ENV),
        std::env::var(TP_PROFILER_ENV),
    ) else {
        return Ok(None);
    };
    let rank = rank
        .parse()
        .with_context(|| format!("{TP_PROFILED_RANK_ENV}={rank} is not a rank"))?;
    let argv: Vec<String> = serde_json::from_str(&argv)
        .with_context(|| format!("{TP_PROFILER_ENV} is not a JSON list of strings"))?;
    if argv.is_empty() {
        bail!("{TP_PROFILER_ENV} is empty: it names the profiler and its options");
    }
    Ok(Some((rank, argv)))
}

/// Where rank `k` writes: the run directory for rank 0, `<run>/rank<k>` otherwise (with the
/// run's resolved config).
pub fn rank_dir(run_dir: &Path, k: usize) -> Result<PathBuf> {
    if k == 0 {
        return Ok(run_dir.to_path_buf());
    }
    let dir = run_dir.join(format!("{RANK_DIR_PREFIX}{k}"));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let config = crate::run_dir::RESOLVED_CONFIG;
    std::fs::copy(run_dir.join(config), dir.join(config))
        .with_context(|| format!("copying {config} into {}", dir.display()))?;
    Ok(dir)
}

/// Runs `worker command <rank dir>` for every rank and waits for all; an error names the first
/// rank that failed (its exit status and last stderr line).
pub fn run_ranks(
    worker: &Path,
    command: &str,
    run_dir: &Path,
    (world, timeout): (usize, Duration),
    gpus: bool,
) -> Result<()> {
    let tp_dir = run_dir.join(TP_DIR);
    // Every rank's folder first: nothing is started when one cannot be made.
    let dirs = (0..world)
        .map(|k| rank_dir(run_dir, k))
        .collect::<Result<Vec<_>>>()?;
    let mut watch = super::rank_watch::RankWatch::new(dirs.clone(), timeout);
    let profiled = profiler_of_rank()?;
    let mut ranks: Vec<Child> = Vec::new();
    let mut relays: Vec<std::thread::JoinHandle<Vec<String>>> = Vec::new();
    for (k, dir) in dirs.iter().enumerate() {
        let mut cmd = match &profiled {
            // Stage 2: this rank's worker under the profiler.
            Some((rank, argv)) if *rank == k => {
                let mut c = Command::new(&argv[0]);
                c.args(&argv[1..]).arg(worker);
                // The profiler's target, the worker, is stopped with it (rank_procs::signal).
                own_group(&mut c);
                c
            }
            _ => Command::new(worker),
        };
        cmd.arg(command)
            .arg(dir)
            .env(TP_RANK_ENV, k.to_string())
            .env(TP_WORLD_ENV, world.to_string())
            .env(TP_DIR_ENV, &tp_dir)
            .envs(NO_MULTICAST)
            .stderr(Stdio::piped());
        if gpus {
            cmd.env("CUDA_VISIBLE_DEVICES", gpu_of_rank(k));
        }
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                stop_all(&mut ranks);
                bail!("starting rank {k} ({}): {e}", worker.display());
            }
        };
        watch.started(k, std::time::Instant::now());
        let stderr = child.stderr.take().expect("stderr was piped");
        let prefix = if k == 0 {
            String::new()
        } else {
            format!("[rank {k}] ")
        };
        let relay = std::thread::spawn(move || super::child::relay_stderr(stderr, &prefix));
        ranks.push(child);
        relays.push(relay);
        super::shutdown::set_children(ranks.iter().map(Child::id).collect());
    }
    let failed = wait_all(&mut ranks, &mut watch);
    super::shutdown::set_children(Vec::new());
    let _ = std::fs::remove_dir_all(&tp_dir);
    for dir in &dirs {
        let _ = std::fs::remove_file(dir.join(crate::run_files::HEARTBEAT_FILE));
    }
    let tails: Vec<Vec<String>> = relays
        .into_iter()
        .map(|r| r.join().unwrap_or_default())
        .collect();
    match failed {
        None => {
            link_rank_traces(run_dir, &dirs);
            Ok(())
        }
        Some((k, RankFailure::Exited(status))) => {
            let how = match status.code() {
                Some(c) => format!("exited with status {c}"),
                None => "was killed by a signal".into(),
            };
            let last =
                super::child::last_error_of(&tails[k]).unwrap_or_else(|| "no error message".into());
            bail!("tensor-parallel rank {k} of {world} {how}: {last}; the other ranks were stopped")
        }
        Some((_, RankFailure::Stalled(s))) => bail!("{}", s.describe(world, timeout)),
        Some((k, RankFailure::Unwaitable(e))) => {
            bail!("tensor-parallel rank {k} of {world} could not be waited for ({e}); the other ranks were stopped")
        }
    }
}

/// Each rank's Kineto trace (`<rank dir>/trace.json`, its distributedInfo written by the
/// worker) also as `traces/trace.rank<k>.json` in the run directory, a folder of rank traces only
/// (HTA's and `llmprof analyze trace`'s input): a hard link (no second copy of a large file), a
/// copy where the file system has none. A rank without a trace (the Kineto pass or
/// `output.trace_json` off) has none. A trace that cannot be linked or copied is a warning: the
/// ranks' measurements are whole without it.
pub fn link_rank_traces(run_dir: &Path, rank_dirs: &[PathBuf]) {
    use crate::measure::rank_trace::rank_trace_path;
    for (k, dir) in rank_dirs.iter().enumerate() {
        let from = dir.join(crate::run_files::TRACE_JSON);
        if !from.is_file() {
            continue;
        }
        let to = run_dir.join(rank_trace_path(k));
        if let Err(e) = link_or_copy(&from, &to) {
            tracing::warn!("rank {k}'s trace is not in {}: {e:#}", to.display());
        }
    }
}

/// `to` as a hard link of `from`, else a copy written beside it and renamed (never a copy into a
/// file that may be a link of `from`).
fn link_or_copy(from: &Path, to: &Path) -> Result<()> {
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    match std::fs::remove_file(to) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(e).with_context(|| format!("removing {}", to.display()))
        }
        _ => {}
    }
    if std::fs::hard_link(from, to).is_ok() {
        return Ok(());
    }
    let tmp = to.with_extension("json.tmp");
    std::fs::copy(from, &tmp)
        .and_then(|_| std::fs::rename(&tmp, to))
        .with_context(|| format!("copying {} to {}", from.display(), to.display()))
        .inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
        .map(|_| ())
}

/// Waits for every rank (crate::rank_procs::wait_all) with `watch` as its stall check, the
/// shutdown handler told which ranks still run.
fn wait_all(
    ranks: &mut [Child],
    watch: &mut super::rank_watch::RankWatch,
) -> Option<(usize, RankFailure<super::rank_watch::Stalled>)> {
    crate::rank_procs::wait_all(
        ranks,
        super::shutdown::CHILD_GRACE,
        |running| {
            watch
                .stalled(running, std::time::Instant::now())
                .map(|s| (s.rank, s))
        },
        super::shutdown::set_children,
    )
}
