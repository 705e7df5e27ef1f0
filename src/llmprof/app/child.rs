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
        self.stderr_tail
            .iter()
            .rev()
            .find(|l| l.contains("ERROR") || l.contains("error") || l.contains("panicked"))
            .map(|l| strip_ansi(l).trim().to_string())
    }
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
    let relay = std::thread::spawn(move || {
        let mut tail: VecDeque<String> = VecDeque::with_capacity(TAIL_LINES);
        let mut out = std::io::stderr();
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            // Our own stderr may be closed (a pager quit): keep reading so the child never blocks.
            let _ = writeln!(out, "{line}");
            if tail.len() == TAIL_LINES {
                tail.pop_front();
            }
            tail.push_back(line);
        }
        tail.into_iter().collect::<Vec<_>>()
    });
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
}
