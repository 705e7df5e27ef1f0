//! Tracing setup: human-readable logs on stderr (`RUST_LOG`, default `info`), and optionally a
//! copy in the run directory's log file, as the run's `hydra.job_logging` asks.
use crate::config::Node;
use std::path::Path;
use std::sync::OnceLock;
use tracing_subscriber::{fmt, prelude::*, EnvFilter};

static FILE_GUARD: OnceLock<std::sync::Mutex<Option<std::fs::File>>> = OnceLock::new();

struct RunLogWriter;

impl std::io::Write for RunLogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Some(m) = FILE_GUARD.get() {
            if let Ok(mut g) = m.lock() {
                if let Some(f) = g.as_mut() {
                    return f.write(buf);
                }
            }
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Logs to stderr, and to the run log once `log_to_file` is called.
pub fn init_stderr() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let stderr = fmt::layer().with_writer(std::io::stderr).with_target(false);
    let file = fmt::layer()
        .with_writer(|| RunLogWriter)
        .with_ansi(false)
        .with_target(false);
    let _ = tracing_subscriber::registry()
        .with(filter)
        .with(stderr)
        .with(file)
        .try_init();
}

/// Also write every log line to `path` (the run directory's log file) from now on.
pub fn log_to_file(path: &Path) -> std::io::Result<()> {
    let f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    let m = FILE_GUARD.get_or_init(|| std::sync::Mutex::new(None));
    if let Ok(mut g) = m.lock() {
        *g = Some(f);
    }
    Ok(())
}

/// Whether Hydra's `hydra.job_logging` asks for a log file, the one part of it llmprof has an
/// equivalent for: yes when a handler of the root logger is a file handler (Hydra's `default`),
/// no otherwise (`stdout`, `disabled`, `none`, or the group removed: `???`). The console is
/// llmprof's own stderr log (`RUST_LOG`) whatever the option. Absent (a run directory written
/// before Hydra's groups existed) keeps the file.
pub fn wants_log_file(job_logging: Option<&Node>) -> bool {
    let Some(cfg) = job_logging else { return true };
    let Some(Node::List(names)) = cfg.get_path("root.handlers") else {
        return false;
    };
    names.iter().any(|name| {
        let Node::Str(name) = name else { return false };
        matches!(
            cfg.child("handlers").and_then(|h| h.child(name)).and_then(|h| h.child("class")),
            Some(Node::Str(class)) if class.ends_with("FileHandler")
        )
    })
}

/// [`wants_log_file`] for a run directory, from its `.hydra/hydra.yaml` (the worker's view);
/// a missing or unreadable file keeps the log file.
pub fn run_wants_log_file(run_dir: &Path) -> bool {
    let Ok(text) =
        crate::dataset::file_kind::read_to_string(run_dir.join(crate::run_files::HYDRA_YAML))
    else {
        return true;
    };
    match crate::config::yaml::parse(&text) {
        Ok(tree) => wants_log_file(tree.get_path("hydra.job_logging")),
        Err(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::yaml::parse;

    fn wants(yaml: &str) -> bool {
        wants_log_file(Some(&parse(yaml).unwrap()))
    }

    #[test]
    fn a_root_file_handler_is_what_asks_for_a_log_file() {
        let builtin = crate::config::builtin::HYDRA_CONF;
        let option = |name: &str| wants(builtin.get(&format!("hydra/job_logging/{name}")).unwrap());
        assert!(option("default"));
        assert!(!option("stdout"));
        assert!(!option("disabled"));
        assert!(!option("none"));
        assert!(!wants("???"));
        assert!(wants_log_file(None));
        // A file handler that the root logger does not use writes nothing.
        assert!(!wants(
            "handlers: {f: {class: logging.FileHandler}}\nroot: {handlers: [console]}"
        ));
        assert!(wants(
            "handlers: {f: {class: logging.handlers.RotatingFileHandler}}\nroot: {handlers: [f]}"
        ));
    }

    #[test]
    fn a_run_directory_without_hydra_yaml_keeps_its_log() {
        let dir = std::env::temp_dir().join(format!("llmprof-log-{}", std::process::id()));
        std::fs::create_dir_all(dir.join(".hydra")).unwrap();
        assert!(run_wants_log_file(&dir));
        std::fs::write(
            dir.join(".hydra/hydra.yaml"),
            "hydra:\n  job_logging:\n    version: 1\n    root: null\n",
        )
        .unwrap();
        assert!(!run_wants_log_file(&dir));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
