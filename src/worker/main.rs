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
        "debug" => run_debug(&args),
        other => bail!("unknown worker command '{other}'"),
    }
}

/// `llmprof debug logits|sam ...`, forwarded by the front end with the same arguments.
fn run_debug(args: &[String]) -> Result<()> {
    use clap::Parser;
    use llmprof::cli::DebugCommand;
    use llmprof_worker::models::common::graph_decode::StepPath;
    #[derive(Parser)]
    #[command(name = "llmprof debug")]
    struct DebugArgs {
        #[command(subcommand)]
        what: DebugCommand,
    }
    let parsed = DebugArgs::try_parse_from(
        std::iter::once("llmprof debug".to_string()).chain(args[1..].iter().cloned()),
    )
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    // clap restricts --dtype to fp32 and bf16.
    let kind = |d: &str| {
        llmprof_worker::models::device::kind(
            llmprof::dtype::Dtype::from_name(d).unwrap_or(llmprof::dtype::Dtype::F32),
        )
    };
    // `--optim`: clap restricts it to eager and fast, the presets of conf/ (runtime=eager|fast).
    use llmprof_worker::models::{deepseek_ocr, dense};
    // fp32 checks compare true fp32 arithmetic: no TF32 in matmuls or convolutions.
    llmprof_worker::ffi::set_allow_tf32(false, false).context("turning TF32 off")?;
    match parsed.what {
        DebugCommand::Logits {
            weights,
            ids,
            dtype,
            greedy,
            out,
            optim,
            kv_bucket,
        } => {
            let path = match optim.as_str() {
                "eager" => StepPath::Eager,
                _ => StepPath::Graph { kv_bucket },
            };
            let text = llmprof::dataset::file_kind::read_to_string(&ids)
                .with_context(|| format!("reading {}", ids.display()))?;
            let ids: Vec<i64> = serde_json::from_str(&text)
                .with_context(|| format!("{} must be a JSON list of token ids", ids.display()))?;
            let (logits, greedy_ids) =
                if llmprof_worker::models::dense::debug::is_dense_checkpoint(&weights) {
                    llmprof_worker::models::dense::debug::debug_logits(
                        &weights,
                        &ids,
                        kind(&dtype),
                        greedy,
                        &dense::Switches::preset(&optim)?,
                        path,
                    )?
                } else {
                    llmprof_worker::models::deepseek_ocr::checks::debug::debug_logits(
                        &weights,
                        &ids,
                        kind(&dtype),
                        greedy,
                        &deepseek_ocr::Switches::preset(&optim)?,
                        path,
                    )?
                };
            let greedy_t = tch::Tensor::from_slice(&greedy_ids);
            let logits = logits
                .to_device(tch::Device::Cpu)
                .to_kind(tch::Kind::Float)
                .contiguous();
            tch::Tensor::write_safetensors(
                &[("prompt_last_logits", &logits), ("greedy_ids", &greedy_t)],
                &out,
            )
            .with_context(|| format!("writing {}", out.display()))?;
            tracing::info!(out = %out.display(), greedy = greedy_ids.len(), "logits written");
            Ok(())
        }
        DebugCommand::FastPath {
            arch,
            steps,
            prompt_lens,
            kv_bucket,
            seed,
            json,
        } => {
            let report = llmprof_worker::models::fast_path_cli::run(
                &arch,
                steps,
                &prompt_lens,
                kv_bucket,
                seed,
            )?;
            llmprof::stdout::print(&report.tables())?;
            if let Some(path) = json {
                std::fs::write(&path, serde_json::to_string_pretty(&report)?)
                    .with_context(|| format!("writing {}", path.display()))?;
            }
            report.verdict()
        }
        DebugCommand::Vision {
            weights,
            arch,
            pixels,
            image,
            dtype,
            optim,
            out,
        } => {
            let optim = deepseek_ocr::Switches::preset(&optim)?;
            let v = llmprof_worker::models::deepseek_ocr::checks::debug_vision::debug_vision(
                &arch,
                &weights,
                pixels.as_deref(),
                image.as_deref(),
                kind(&dtype),
                &optim,
            )?;
            let tokens = tch::Tensor::from_slice(&[v.image_tokens as i64]);
            let grid = tch::Tensor::from_slice(&[v.grid.cols as i64, v.grid.rows as i64]);
            let embeddings = v.embeddings.f_contiguous()?;
            let mut named: Vec<(&str, &tch::Tensor)> = vec![
                ("embeddings", &embeddings),
                ("image_tokens", &tokens),
                ("grid", &grid),
            ];
            let pixels: Vec<(String, tch::Tensor)> = v
                .pixels
                .iter()
                .map(|(n, t)| {
                    let t = t.f_to_device(tch::Device::Cpu)?;
                    Ok((n.clone(), t.f_to_kind(tch::Kind::Float)?.f_contiguous()?))
                })
                .collect::<Result<_>>()?;
            for (n, t) in &pixels {
                named.push((n.as_str(), t));
            }
            tch::Tensor::write_safetensors(&named, &out)
                .with_context(|| format!("writing {}", out.display()))?;
            tracing::info!(out = %out.display(), image_tokens = v.image_tokens, "vision embeddings written");
            Ok(())
        }
        DebugCommand::Sam {
            weights,
            pixels,
            out,
            dtype,
            optim,
        } => {
            let tensors = tch::Tensor::read_safetensors(&pixels)
                .with_context(|| format!("reading {}", pixels.display()))?;
            let px = tensors
                .into_iter()
                .find(|(n, _)| n == "pixels")
                .map(|(_, t)| t)
                .with_context(|| format!("{} has no tensor named `pixels`", pixels.display()))?;
            let px = px
                .to_device(tch::Device::cuda_if_available())
                .to_kind(kind(&dtype));
            let features = llmprof_worker::models::deepseek_ocr::checks::debug::debug_sam(
                &weights,
                &px,
                &deepseek_ocr::Switches::preset(&optim)?,
            )?;
            let features = features
                .to_device(tch::Device::Cpu)
                .to_kind(tch::Kind::Float)
                .contiguous();
            tch::Tensor::write_safetensors(&[("features", &features)], &out)
                .with_context(|| format!("writing {}", out.display()))?;
            tracing::info!(out = %out.display(), shape = ?features.size(), "SAM features written");
            Ok(())
        }
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
