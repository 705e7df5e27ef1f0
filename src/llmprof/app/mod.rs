//! Dispatch: compose the config, then print it (`--cfg`), run a stage, or analyse files.
//! The only place that decides what a command means.
mod analyze_trace;
pub mod child;
mod compare_cmd;
mod data_commands;
pub mod data_prep;
mod job_entry;
pub mod launch;
mod multirun;
pub mod nsight_stage;
mod print_cfg;
mod rank_watch;
mod report_cmd;
pub mod shutdown;
mod tp_launch;

use crate::cli::{AnalyzeTool, Cli, Command};
use crate::config::{self, ComposeRequest};
use anyhow::{Context, Result};
use std::path::PathBuf;

pub fn run(cli: Cli) -> Result<i32> {
    // The worker owns `debug`'s arguments, `--help` included (clap reads it as the global flag).
    if let Some(Command::Debug { .. }) = &cli.command {
        return forward_to_worker();
    }
    let flags = cli.hydra.clone();
    let (command_name, overrides) = match &cli.command {
        None => ("llmprof", cli.overrides.clone()),
        Some(Command::Stage1 { overrides })
        | Some(Command::Stage2 { overrides })
        | Some(Command::Infer { overrides }) => {
            let mut o = cli.overrides.clone();
            o.extend(overrides.iter().cloned());
            (cli.command.as_ref().expect("matched Some").name(), o)
        }
        Some(_) => (
            cli.command.as_ref().expect("matched Some").name(),
            cli.overrides.clone(),
        ),
    };
    if let Some(Command::Settings) = &cli.command {
        let origins = crate::settings::Origins::from_env();
        crate::stdout::print(&crate::settings::render(&origins)?)?;
        return Ok(0);
    }
    let config_dir = find_config_dir(&flags)?;
    if flags.help {
        print_cfg::help(&config_dir)?;
        return Ok(0);
    }
    let request = ComposeRequest {
        config_dir: config_dir.clone(),
        config_name: flags.config_name.clone().unwrap_or_else(|| "config".into()),
        overrides,
        multirun: flags.multirun,
        job_name: command_name.to_string(),
    };
    if let Some(part) = flags.cfg {
        let composed = config::compose(&request)?;
        crate::stdout::print(&print_cfg::render(
            &composed,
            part,
            flags.resolve,
            flags.format,
        )?)?;
        return Ok(0);
    }
    match cli.command {
        None => {
            print_cfg::help(&config_dir)?;
            Ok(2)
        }
        Some(Command::Stage1 { .. })
        | Some(Command::Stage2 { .. })
        | Some(Command::Infer { .. }) => {
            shutdown::install()?;
            if request.multirun || flags.resume.is_some() {
                multirun::run(command_name, request, flags.resume.as_deref())
            } else {
                launch::run(command_name, request)
            }
        }
        Some(Command::Debug { .. }) => forward_to_worker(),
        Some(Command::Job { sweep_dir, num }) => job_entry::run(&sweep_dir, num),
        Some(Command::Compare {
            a,
            b,
            threshold,
            metrics,
        }) => compare_cmd::run(compare_cmd::Args {
            a: &a,
            b: &b,
            threshold,
            metrics: &metrics,
            format: flags.format,
        }),
        // Printed before looking for a config directory (settings need none).
        Some(Command::Settings) => Ok(0),
        Some(Command::Dataset { what }) => data_commands::dataset(what, &request),
        Some(Command::Models { what }) => data_commands::models(what, &request),
        Some(Command::Report { dir, open }) => report_cmd::run(&dir, open),
        Some(Command::Analyze { tool }) => {
            let json = matches!(flags.format, Some(crate::cli::Format::Json));
            let text = match tool {
                AnalyzeTool::Trace {
                    paths,
                    out,
                    regions,
                    top,
                } => analyze_trace::run(&paths, out.as_deref(), &regions, top, flags.format)?,
                AnalyzeTool::Nsys { path } => crate::nsight::analyze::analyze_nsys(&path, json)?,
                AnalyzeTool::Ncu { path, gpu } => {
                    crate::nsight::analyze::analyze_ncu(&path, json, gpu.as_deref())?
                }
            };
            crate::stdout::println(&text)?;
            Ok(0)
        }
    }
}

/// `debug ...` runs inside the workload binary: hand it the same arguments.
fn forward_to_worker() -> Result<i32> {
    let worker = launch::worker_path()?;
    // Passed on as they came (OsString): the worker reports an argument that is not UTF-8.
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let status = std::process::Command::new(&worker)
        .args(&args)
        .status()
        .with_context(|| {
            format!(
                "starting {} (build it with ./bootstrap.sh --yes)",
                worker.display()
            )
        })?;
    Ok(status.code().unwrap_or(1))
}

/// `--config-dir`/`--config-path`, else `./conf`, else the `conf/` of the repository that holds
/// this binary (so `target/release/llmprof` works from anywhere).
fn find_config_dir(flags: &crate::cli::HydraFlags) -> Result<PathBuf> {
    if let Some(d) = flags.config_dir.as_ref().or(flags.config_path.as_ref()) {
        return Ok(d.clone());
    }
    let cwd = std::env::current_dir().context("reading the current directory")?;
    if cwd.join("conf/config.yaml").is_file() {
        return Ok(cwd.join("conf"));
    }
    if let Ok(exe) = std::env::current_exe() {
        for dir in exe.ancestors().skip(1) {
            if dir.join("conf/config.yaml").is_file() {
                return Ok(dir.join("conf"));
            }
        }
    }
    Ok(cwd.join("conf"))
}
