//! Running a child process (the worker, a stage-2 child) so that signals reach it and its last
//! words are not lost: its pid is registered with [`super::shutdown`], and its stderr is passed
//! through line by line while the last lines are kept, so an error the child could not write to
//! disk (a full disk, an abort) still reaches status.json.
use anyhow::{Context, Result};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, ExitStatus, Stdio};

/// Lines of the child's stderr kept for error messages.
const TAIL_LINES: usize = 20;

pub struct Finished {
    pub status: ExitStatus,
    /// The last lines the child wrote to stderr.
    pub stderr_tail: Vec<String>,
}

impl Finished {
    /// The child's last error line (an `ERROR` log line or an abort message), if any.
    pub fn last_error(&self) -> Option<String> {
        last_error_of(&self.stderr_tail)
    }
}

/// The last error line (an `ERROR` log line or an abort message) among a child's stderr lines.
pub fn last_error_of(tail: &[String]) -> Option<String> {
    tail.iter()
        .rev()
        .find(|l| l.contains("ERROR") || l.contains("error") || l.contains("panicked"))
        .map(|l| strip_ansi(l).trim().to_string())
}

/// Passes a child's stderr through to ours line by line (each after `prefix`) until it closes,
/// and returns its last [`TAIL_LINES`] lines. Read as bytes (a line that is not UTF-8 is passed
/// on lossily): a child whose stderr stopped being read would block on a full pipe.
pub fn relay_stderr(stderr: impl std::io::Read, prefix: &str) -> Vec<String> {
    let mut tail: VecDeque<String> = VecDeque::with_capacity(TAIL_LINES);
    let mut out = std::io::stderr();
    let mut reader = BufReader::new(stderr);
    let mut buf = Vec::new();
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
        // Our own stderr may be closed (a pager quit): keep reading so the child never blocks.
        let _ = writeln!(out, "{prefix}{line}");
        if tail.len() == TAIL_LINES {
            tail.pop_front();
        }
        tail.push_back(line);
    }
    tail.into_iter().collect()
}

/// Removes terminal colour codes from a log line.
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Runs `cmd` to completion with stderr passed through.
pub fn run(mut cmd: Command, what: &str) -> Result<Finished> {
    let mut child = cmd
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {what}"))?;
    super::shutdown::set_child(Some(child.id()));
    let stderr = child.stderr.take().expect("stderr was piped");
    let relay = std::thread::spawn(move || relay_stderr(stderr, ""));
    let status = child.wait().with_context(|| format!("waiting for {what}"));
    super::shutdown::set_child(None);
    let stderr_tail = relay.join().unwrap_or_default();
    Ok(Finished {
        status: status?,
        stderr_tail,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stderr_tail_and_last_error_survive() {
        let mut cmd = Command::new("sh");
        cmd.args([
            "-c",
            "echo fine >&2; printf '\\033[31mERROR\\033[0m disk full: /x/metrics.json\\n' >&2; exit 3",
        ]);
        let f = run(cmd, "a shell").unwrap();
        assert_eq!(f.status.code(), Some(3));
        assert_eq!(f.stderr_tail.len(), 2);
        assert_eq!(f.last_error().unwrap(), "ERROR disk full: /x/metrics.json");
    }

    #[test]
    fn a_line_that_is_not_utf8_does_not_stop_the_relay() {
        let mut cmd = Command::new("sh");
        cmd.args([
            "-c",
            "printf 'bad \\377 byte\\n' >&2; echo 'ERROR after it' >&2; exit 4",
        ]);
        let f = run(cmd, "a shell").unwrap();
        assert_eq!(f.stderr_tail.len(), 2);
        assert_eq!(f.stderr_tail[0], "bad \u{fffd} byte");
        assert_eq!(f.last_error().unwrap(), "ERROR after it");
    }
}
