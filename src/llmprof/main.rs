//! `llmprof`: parse the command line, set up logging, run, turn an error into an exit code.
//! This binary never links libtorch; model stages run in `llmprof-worker`.
use clap::Parser;

fn main() {
    let cli = llmprof::cli::Cli::parse();
    llmprof::logging::init_stderr();
    match llmprof::app::run(cli) {
        Ok(code) => std::process::exit(code),
        Err(err) => {
            eprintln!("Error: {err:#}");
            std::process::exit(1);
        }
    }
}
