//! Tracing setup: human-readable logs on stderr (`RUST_LOG`, default `info`), and optionally a
//! copy in the run directory's log file.
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
