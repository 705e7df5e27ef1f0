//! `llmprof-worker`: the half of llmprof that links libtorch. `llmprof` launches it as
//! `llmprof-worker <stage1|infer|bench-overhead|bench-ngram> <run_dir>` (the run directory holds
//! config.resolved.yaml) or forwards `debug ...` to it.
use anyhow::{bail, Context, Result};
use llmprof_worker::ffi::versions::RuntimeVersions;
use std::path::PathBuf;

fn main() {
    stop_with_parent();
    let versions = RuntimeVersions::read();
    llmprof::logging::init_stderr();
    if let Err(e) = run(&versions) {
        let msg = format!("{e:#}");
        // Logged to stderr, which the front end reads (the cause reaches status.json even when
        // the disk is full), and to worker_error.txt.
        tracing::error!("{msg}");
        if let Some(dir) = std::env::args_os().nth(2) {
            let _ = std::fs::write(
                PathBuf::from(dir).join(llmprof::run_dir::WORKER_ERROR),
                &msg,
            );
        }
        std::process::exit(1);
    }
}

/// The worker stops when the front end dies (killed, crashed): a run never goes on unattended.
/// Linux's parent-death signal; if the parent is already gone, stop now.
fn stop_with_parent() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: prctl(PR_SET_PDEATHSIG) takes a signal number; getppid cannot fail.
        unsafe {
            let parent = libc::getppid();
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            if libc::getppid() != parent {
                std::process::exit(143);
            }
        }
    }
}

fn run(versions: &RuntimeVersions) -> Result<()> {
    let args = utf8_args()?;
    let Some(command) = args.first() else {
        bail!(
            "usage: llmprof-worker <stage1|infer|bench-overhead|bench-ngram> <run_dir> (normally started by llmprof)"
        );
    };
    match command.as_str() {
        "stage1" | "infer" | "bench-overhead" | "bench-ngram" => {
            let dir = PathBuf::from(args.get(1).context("missing run directory argument")?);
            llmprof_worker::heartbeat::start(&dir);
            if llmprof::logging::run_wants_log_file(&dir) {
                llmprof::logging::log_to_file(&dir.join(llmprof::run_dir::LOG_FILE))?;
            }
            let text = llmprof::dataset::file_kind::read_to_string(
                dir.join(llmprof::run_dir::RESOLVED_CONFIG),
            )
            .with_context(|| format!("reading the resolved config in {}", dir.display()))?;
            let tree = llmprof::config::yaml::parse(&text).map_err(|e| anyhow::anyhow!("{e}"))?;
            let spec = llmprof::spec::RunSpec::from_tree(&tree)?;
            tracing::info!(cuda = tch::Cuda::is_available(), device = %spec.device, "worker started");
            if versions.cuda_device_count == 0 {
                // One clear line; libkineto's own `gpuGetDeviceCount failed` is silenced by the
                // shim (KINETO_LOG_LEVEL=5 unless the user set a level).
                tracing::info!(
                    "no CUDA device: {}. Kineto records CPU activity only",
                    versions
                        .no_cuda_device_reason
                        .as_deref()
                        .unwrap_or("cudaGetDeviceCount found none"),
                );
            }
            if let Some(why) = llmprof_worker::ffi::kernels::device_mismatch() {
                tracing::warn!("{why}");
            }
            match command.as_str() {
                "stage1" => llmprof_worker::workload::stage1::run(&spec, &dir),
                "infer" => llmprof_worker::workload::infer::run(&spec, &dir),
                "bench-ngram" => llmprof_worker::workload::bench_ngram::run(&spec, &dir),
                _ => llmprof_worker::workload::bench_overhead::run(&spec, &dir),
            }
        }
        "debug" => llmprof_worker::checks::debug::run(&args),
        other => bail!("unknown worker command '{other}'"),
    }
}

/// The arguments after the program name; one that is not UTF-8 is an error naming its position
/// (std::env::args would panic).
fn utf8_args() -> Result<Vec<String>> {
    std::env::args_os()
        .skip(1)
        .enumerate()
        .map(|(i, a)| {
            a.into_string().map_err(|a| {
                anyhow::anyhow!(
                    "argument {} ({}) is not valid UTF-8: llmprof-worker takes UTF-8 arguments only",
                    i + 1,
                    a.to_string_lossy()
                )
            })
        })
        .collect()
}
