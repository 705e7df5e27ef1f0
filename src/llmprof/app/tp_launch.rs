//! The ranks of a tensor-parallel run (`runtime.tensor_parallel=N`, docs/design/tensor-parallel.md
//! §1): N worker processes of the same command, rank k told by its environment, writing into the
//! run directory (rank 0) or `<run>/rank<k>` (each rank its own measurements), one GPU each where
//! there are GPUs, with NVLink multicast off. The first rank that fails stops the others at once,
//! so no rank outlives the run; the error names the rank. A rank that hangs is ended by its
//! peers' collective timeout on the CPU transport; NCCL collectives have no timeout yet
//! (docs/design/tensor-parallel.md).
use anyhow::{bail, Context, Result};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

/// The environment each rank gets (the worker's `engine::collectives` reads the first three).
const RANK_ENV: &str = "LLMPROF_TP_RANK";
const WORLD_ENV: &str = "LLMPROF_TP_WORLD";
const DIR_ENV: &str = "LLMPROF_TP_DIR";
/// NVLink multicast stays off in every rank (NCCL's NVLS and libtorch's symmetric memory).
const NO_MULTICAST: [(&str, &str); 3] = [
    ("NCCL_NVLS_ENABLE", "0"),
    ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
    ("NVSHMEM_DISABLE_NVLS", "1"),
];

/// For `runtime.tensor_parallel` > 1: whether the ranks take one GPU each (`Some(true)`) or run on
/// the CPU (`Some(false)`); `None` for one rank. More ranks than visible GPUs, or a stage the
/// ranks do not run, is refused before any run directory exists.
pub fn placement(spec: &crate::spec::RunSpec, command: &str) -> Result<Option<bool>> {
    let world = spec.runtime.tensor_parallel as usize;
    if world <= 1 {
        return Ok(None);
    }
    if command == "stage2" {
        bail!("stage2 profiles one worker process; runtime.tensor_parallel={world} runs {world}\n  fix: stage2 with runtime.tensor_parallel=1 (profiling one rank of a split run is planned: docs/design/tensor-parallel.md)");
    }
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
    Ok(Some(on_gpus))
}

/// Where rank `k` writes: the run directory for rank 0, `<run>/rank<k>` otherwise (with the
/// run's resolved config).
pub fn rank_dir(run_dir: &Path, k: usize) -> Result<PathBuf> {
    if k == 0 {
        return Ok(run_dir.to_path_buf());
    }
    let dir = run_dir.join(format!("rank{k}"));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let config = crate::run_dir::RESOLVED_CONFIG;
    std::fs::copy(run_dir.join(config), dir.join(config))
        .with_context(|| format!("copying {config} into {}", dir.display()))?;
    Ok(dir)
}

/// The GPU of rank `k`: the k-th of CUDA_VISIBLE_DEVICES when it lists them, else index k.
fn gpu_of(k: usize) -> String {
    std::env::var("CUDA_VISIBLE_DEVICES")
        .ok()
        .and_then(|v| v.split(',').nth(k).map(str::to_string))
        .unwrap_or_else(|| k.to_string())
}

/// Runs `worker command <rank dir>` for every rank and waits for all; an error names the first
/// rank that failed (its exit status and last stderr line).
pub fn run_ranks(
    worker: &Path,
    command: &str,
    run_dir: &Path,
    world: usize,
    gpus: bool,
) -> Result<()> {
    let tp_dir = run_dir.join("tp");
    // Every rank's folder first: nothing is started when one cannot be made.
    let dirs = (0..world)
        .map(|k| rank_dir(run_dir, k))
        .collect::<Result<Vec<_>>>()?;
    let mut ranks: Vec<(Child, std::thread::JoinHandle<Option<String>>)> = Vec::new();
    for (k, dir) in dirs.iter().enumerate() {
        let mut cmd = Command::new(worker);
        cmd.arg(command)
            .arg(dir)
            .env(RANK_ENV, k.to_string())
            .env(WORLD_ENV, world.to_string())
            .env(DIR_ENV, &tp_dir)
            .envs(NO_MULTICAST)
            .stderr(Stdio::piped());
        if gpus {
            cmd.env("CUDA_VISIBLE_DEVICES", gpu_of(k));
        }
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                stop(&mut ranks);
                bail!("starting rank {k} ({}): {e}", worker.display());
            }
        };
        let stderr = child.stderr.take().expect("stderr was piped");
        let relay = std::thread::spawn(move || relay_stderr(stderr, k));
        ranks.push((child, relay));
        super::shutdown::set_children(ranks.iter().map(|r| r.0.id()).collect());
    }
    let failed = wait_all(&mut ranks);
    super::shutdown::set_children(Vec::new());
    let _ = std::fs::remove_dir_all(&tp_dir);
    let tails: Vec<Option<String>> = ranks
        .into_iter()
        .map(|r| r.1.join().ok().flatten())
        .collect();
    match failed {
        None => Ok(()),
        Some((k, status)) => {
            let how = match status.code() {
                Some(c) => format!("exited with status {c}"),
                None => "was killed by a signal".into(),
            };
            let last = tails[k]
                .clone()
                .unwrap_or_else(|| "no error message".into());
            bail!("tensor-parallel rank {k} of {world} {how}: {last}; the other ranks were stopped")
        }
    }
}

/// Passes a rank's stderr through (prefixed for ranks > 0) and returns its last error line.
fn relay_stderr(stderr: std::process::ChildStderr, k: usize) -> Option<String> {
    let mut out = std::io::stderr();
    let mut last = None;
    let mut reader = BufReader::new(stderr);
    let mut buf = Vec::new();
    // Bytes, not UTF-8 lines: a rank whose stderr stopped being read would block on a full pipe.
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
        let line = String::from_utf8_lossy(&buf)
            .trim_end_matches('\n')
            .to_string();
        let _ = match k {
            0 => writeln!(out, "{line}"),
            _ => writeln!(out, "[rank {k}] {line}"),
        };
        if line.contains("ERROR") || line.contains("error") || line.contains("panicked") {
            last = Some(line);
        }
    }
    last
}

/// Waits until every rank exited; at the first failure the others get SIGTERM, and SIGKILL
/// if they are still there after the shutdown grace. Returns the first failed rank and its
/// status.
fn wait_all(
    ranks: &mut [(Child, std::thread::JoinHandle<Option<String>>)],
) -> Option<(usize, ExitStatus)> {
    let mut done: Vec<Option<ExitStatus>> = vec![None; ranks.len()];
    let mut pids: Vec<Option<u32>> = ranks.iter().map(|r| Some(r.0.id())).collect();
    let mut failed: Option<(usize, ExitStatus, std::time::Instant)> = None;
    let (mut termed, mut killed) = (false, false);
    while done.iter().any(Option::is_none) {
        for (k, (child, _)) in ranks.iter_mut().enumerate() {
            if done[k].is_some() {
                continue;
            }
            if let Ok(Some(status)) = child.try_wait() {
                done[k] = Some(status);
                // A reaped rank's pid may be reused: signals go to the others only.
                pids[k] = None;
                super::shutdown::set_children(pids.iter().flatten().copied().collect());
                if !status.success() && failed.is_none() {
                    failed = Some((k, status, std::time::Instant::now()));
                }
            }
        }
        if let Some((_, _, at)) = &failed {
            let overdue = at.elapsed() > super::shutdown::CHILD_GRACE;
            for (k, (child, _)) in ranks.iter_mut().enumerate() {
                if done[k].is_some() {
                    continue;
                }
                if !termed {
                    // SAFETY: kill(2) on a child not yet reaped (its pid is still ours).
                    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
                } else if overdue && !killed {
                    let _ = child.kill();
                }
            }
            killed |= termed && overdue;
            termed = true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    failed.map(|(k, s, _)| (k, s))
}

/// Stops ranks already started when a later one could not start.
fn stop(ranks: &mut [(Child, std::thread::JoinHandle<Option<String>>)]) {
    for (child, _) in ranks.iter_mut() {
        let _ = child.kill();
        let _ = child.wait();
    }
}
