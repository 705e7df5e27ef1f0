//! `llmprof`: parse the command line, set up logging, run, turn an error into an exit code.
//! This binary never links libtorch; model stages run in `llmprof-worker`.
use clap::Parser;

use std::io::Write;

fn main() {
    let cli = match llmprof::cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // `llmprof analyze ncu --help`: help, not "missing argument" (exit 0, as --help is).
            // args_os: an argument that is not UTF-8 gets clap's error below, never a panic.
            let args: Vec<String> = std::env::args_os()
                .skip(1)
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            if args.iter().any(|a| a == "--help" || a == "-h") {
                if let Some(help) = llmprof::cli::subcommand_help(&args) {
                    let _ = llmprof::stdout::print(&help);
                    std::process::exit(0);
                }
            }
            e.exit()
        }
    };
    llmprof::logging::init_stderr();
    match llmprof::app::run(cli) {
        Ok(code) => std::process::exit(code),
        Err(err) => {
            // stderr may be closed too: never panic on the way out.
            let _ = writeln!(std::io::stderr(), "Error: {err:#}");
            let bad_settings = err
                .downcast_ref::<llmprof::settings::SettingsError>()
                .is_some();
            std::process::exit(if bad_settings { 2 } else { 1 });
        }
    }
}
