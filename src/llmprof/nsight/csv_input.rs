//! Pulls the CSV part out of Nsight output that may be mixed with other text: program stdout,
//! `==PROF==`/`==WARNING==` lines (ncu without `--log-file`), `NOTICE:`/`Generating ...` (nsys);
//! and finds the CSV files of an export folder. [`CsvBlock`] streams: it holds one line at a time,
//! so a parser reading through it needs memory for what it keeps, not for the file.

use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::dataset::file_kind::{self, NotRegular, Skipped};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// ncu: every record starts with `"`; other lines are dropped; quoted fields may span lines.
    Quoted,
    /// nsys: from the header up to the first blank line.
    Plain,
}

/// A [`Read`] over the CSV part of Nsight output, from the first line for which `is_header`
/// holds. Lines are read one at a time (bytes that are not UTF-8 become U+FFFD: kernel names are
/// ASCII, stray bytes must not fail) and end in `\n`.
pub struct CsvBlock<R, F> {
    inner: R,
    is_header: F,
    mode: Mode,
    started: bool,
    inside_quotes: bool,
    done: bool,
    line: Vec<u8>,
    out: Vec<u8>,
    pos: usize,
}

impl<R: BufRead, F: Fn(&str) -> bool> CsvBlock<R, F> {
    /// Keeps the records of a fully quoted CSV (ncu quotes every field), dropping every line that
    /// does not start a quoted record. A record whose quoted field spans lines (odd number of
    /// quotes so far) keeps its continuation lines.
    pub fn quoted(inner: R, is_header: F) -> Self {
        Self::new(inner, is_header, Mode::Quoted)
    }

    /// Keeps an unquoted-by-default CSV (nsys) up to the first blank line after the header.
    pub fn plain(inner: R, is_header: F) -> Self {
        Self::new(inner, is_header, Mode::Plain)
    }

    fn new(inner: R, is_header: F, mode: Mode) -> Self {
        CsvBlock {
            inner,
            is_header,
            mode,
            started: false,
            inside_quotes: false,
            done: false,
            line: Vec::new(),
            out: Vec::new(),
            pos: 0,
        }
    }

    /// True once the header line was seen.
    pub fn found_header(&self) -> bool {
        self.started
    }

    /// Puts the next kept line into `out`; false at the end of the block.
    fn fill(&mut self) -> std::io::Result<bool> {
        while !self.done {
            self.line.clear();
            if self.inner.read_until(b'\n', &mut self.line)? == 0 {
                self.done = true;
                break;
            }
            let text = String::from_utf8_lossy(&self.line);
            let text = text.strip_suffix('\n').unwrap_or(&text);
            let text = text.strip_suffix('\r').unwrap_or(text);
            if !self.started {
                if !(self.is_header)(text) {
                    continue;
                }
                self.started = true;
            } else if self.mode == Mode::Plain && text.trim().is_empty() {
                self.done = true;
                break;
            }
            if self.mode == Mode::Quoted {
                if !self.inside_quotes && !text.starts_with('"') {
                    continue;
                }
                if text.bytes().filter(|b| *b == b'"').count() % 2 == 1 {
                    self.inside_quotes = !self.inside_quotes;
                }
            }
            self.out.extend_from_slice(text.as_bytes());
            self.out.push(b'\n');
            return Ok(true);
        }
        Ok(false)
    }
}

impl<R: BufRead, F: Fn(&str) -> bool> Read for CsvBlock<R, F> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.pos == self.out.len() {
            self.out.clear();
            self.pos = 0;
            if !self.fill()? {
                return Ok(0);
            }
        }
        let n = buf.len().min(self.out.len() - self.pos);
        buf[..n].copy_from_slice(&self.out[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// [`CsvBlock::quoted`] over a string, collected; `None` without a header.
pub fn quoted_csv_block(text: &str, is_header: impl Fn(&str) -> bool) -> Option<String> {
    let mut block = CsvBlock::quoted(text.as_bytes(), is_header);
    let mut out = String::new();
    block.read_to_string(&mut out).ok()?;
    block.found_header().then_some(out)
}

/// [`CsvBlock::plain`] over a string, collected; `None` without a header.
pub fn plain_csv_block(text: &str, is_header: impl Fn(&str) -> bool) -> Option<String> {
    let mut block = CsvBlock::plain(text.as_bytes(), is_header);
    let mut out = String::new();
    block.read_to_string(&mut out).ok()?;
    block.found_header().then_some(out)
}

/// The CSV files under a path, and the `.csv` entries skipped as not regular files.
#[derive(Debug, Default)]
pub struct CsvFiles {
    pub files: Vec<PathBuf>,
    pub skipped: Vec<Skipped>,
}

/// CSV files under `path` (recursively, sorted), or `path` itself when it is a file.
pub fn csv_files(path: &Path) -> Result<Vec<PathBuf>> {
    Ok(list_csv_files(path)?.files)
}

/// [`csv_files`], also returning the `*.csv` entries that are not regular files (FIFOs,
/// sockets, devices, symlink loops): they are skipped with a warning each, never opened (opening
/// a FIFO would block). Symlinked folders are followed once each, so a link loop ends.
pub fn list_csv_files(path: &Path) -> Result<CsvFiles> {
    match file_kind::regular_file(path) {
        Ok(_) => {
            return Ok(CsvFiles {
                files: vec![path.to_path_buf()],
                skipped: Vec::new(),
            })
        }
        Err(s) if s.kind == NotRegular::Directory => {}
        Err(s) if s.kind == NotRegular::Missing => bail!("{} does not exist", path.display()),
        Err(s) => bail!("{s}: pass a CSV file or a folder of them"),
    }
    let mut out = CsvFiles::default();
    let mut seen = std::collections::HashSet::new();
    walk(path, &mut seen, &mut out)?;
    out.files.sort();
    out.skipped.sort_by(|a, b| a.path.cmp(&b.path));
    file_kind::warn_skipped("CSV file", &out.skipped);
    if out.files.is_empty() {
        let note = file_kind::skipped_note(&out.skipped)
            .map(|n| format!(" ({n})"))
            .unwrap_or_default();
        bail!("no .csv files under {}{note}", path.display());
    }
    Ok(out)
}

/// Identity of a folder, so that a symlink back up the tree is walked once.
#[cfg(unix)]
fn dir_id(md: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (md.dev(), md.ino())
}

#[cfg(not(unix))]
fn dir_id(_md: &std::fs::Metadata) -> (u64, u64) {
    (0, 0) // no inode numbers: symlinked folders are walked without loop detection
}

fn walk(
    dir: &Path,
    seen: &mut std::collections::HashSet<(u64, u64)>,
    out: &mut CsvFiles,
) -> Result<()> {
    let md = std::fs::metadata(dir).with_context(|| format!("reading {}", dir.display()))?;
    if cfg!(unix) && !seen.insert(dir_id(&md)) {
        out.skipped.push(Skipped {
            path: dir.to_path_buf(),
            kind: NotRegular::SymlinkLoop,
            detail: Some("a folder already searched".into()),
        });
        return Ok(());
    }
    let entries = std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
    let mut paths: Vec<PathBuf> = Vec::new();
    for entry in entries {
        paths.push(
            entry
                .with_context(|| format!("reading {}", dir.display()))?
                .path(),
        );
    }
    paths.sort();
    for p in paths {
        let is_csv = p.extension().is_some_and(|e| e == "csv");
        match file_kind::regular_file(&p) {
            Ok(_) if is_csv => out.files.push(p),
            Ok(_) => {}
            Err(s) if s.kind == NotRegular::Directory => walk(&p, seen, out)?,
            Err(s) if is_csv => out.skipped.push(s),
            Err(_) => {}
        }
    }
    Ok(())
}

/// `file` relative to `base`; its own name when `base` is the file.
pub fn rel(base: &Path, file: &Path) -> String {
    match file.strip_prefix(base) {
        Ok(r) if !r.as_os_str().is_empty() => r.display().to_string(),
        _ => file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| file.display().to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skips_prof_lines_and_program_output() {
        let text = "==PROF== Connected\nhello from program\n\"ID\",\"Name\"\n\"0\",\"a\"\n==PROF== Disconnected\n\"1\",\"b\"\n";
        let block = quoted_csv_block(text, |l| l.starts_with("\"ID\"")).expect("header present");
        assert_eq!(block, "\"ID\",\"Name\"\n\"0\",\"a\"\n\"1\",\"b\"\n");
    }

    #[test]
    fn keeps_multiline_quoted_fields() {
        let text = "\"ID\",\"Desc\"\n\"0\",\"line one\nline two\"\n\"1\",\"x\"\n";
        let block = quoted_csv_block(text, |l| l.starts_with("\"ID\"")).expect("header present");
        assert_eq!(block, text);
    }

    /// Reads through a 1-byte buffer: records spanning reads and CRLF line ends survive.
    #[test]
    fn streams_in_small_reads() {
        let text: &[u8] =
            b"==PROF== x\r\n\"ID\",\"Name\"\r\n\"0\",\"a\nb\"\r\nprogram\n\"1\",\"\xc3\"\n";
        let mut block = CsvBlock::quoted(text, |l: &str| l.starts_with("\"ID\""));
        let mut out = Vec::new();
        let mut byte = [0u8; 1];
        while block.read(&mut byte).unwrap() == 1 {
            out.push(byte[0]);
        }
        assert!(block.found_header());
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "\"ID\",\"Name\"\n\"0\",\"a\nb\"\n\"1\",\"\u{fffd}\"\n"
        );
        let mut plain = CsvBlock::plain(&b"x\nA,B\n\xff,1\n\nC,D\n"[..], |l: &str| {
            l.starts_with("A,")
        });
        let mut out = String::new();
        plain.read_to_string(&mut out).unwrap();
        assert_eq!(out, "A,B\n\u{fffd},1\n");
    }

    #[test]
    fn plain_block_stops_at_blank_line() {
        let text = "NOTICE: Existing SQLite export found.\nA,B\n1,2\n\nC,D\n";
        assert_eq!(
            plain_csv_block(text, |l| l.starts_with("A,")).as_deref(),
            Some("A,B\n1,2\n")
        );
        assert_eq!(plain_csv_block(text, |l| l.starts_with("Z,")), None);
    }
}
