//! Pulls the CSV part out of Nsight output that may be mixed with other text: program stdout,
//! `==PROF==`/`==WARNING==` lines (ncu without `--log-file`), `NOTICE:`/`Generating ...` (nsys);
//! and finds the CSV files of an export folder.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// Reads all of `reader` as UTF-8 (lossy: kernel names are ASCII, stray bytes must not fail).
pub fn read_text(mut reader: impl Read) -> std::io::Result<String> {
    let mut bytes = Vec::new();
    reader.read_to_end(&mut bytes)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Keeps the records of a fully quoted CSV (ncu quotes every field) from the first line for which
/// `is_header` holds, dropping every line that does not start a quoted record. A record whose
/// quoted field spans lines (odd number of quotes so far) keeps its continuation lines.
pub fn quoted_csv_block(text: &str, is_header: impl Fn(&str) -> bool) -> Option<String> {
    let mut out = String::new();
    let mut started = false;
    let mut inside_quotes = false;
    for line in text.lines() {
        if !started {
            if is_header(line) {
                started = true;
            } else {
                continue;
            }
        }
        if !inside_quotes && !line.starts_with('"') {
            continue;
        }
        out.push_str(line);
        out.push('\n');
        if line.matches('"').count() % 2 == 1 {
            inside_quotes = !inside_quotes;
        }
    }
    started.then_some(out)
}

/// Keeps an unquoted-by-default CSV (nsys) from the first line for which `is_header` holds up to
/// the first blank line after it.
pub fn plain_csv_block(text: &str, is_header: impl Fn(&str) -> bool) -> Option<String> {
    let mut lines = text.lines().skip_while(|l| !is_header(l));
    let header = lines.next()?;
    let mut out = format!("{header}\n");
    for line in lines.take_while(|l| !l.trim().is_empty()) {
        out.push_str(line);
        out.push('\n');
    }
    Some(out)
}

/// CSV files under `path` (recursively, sorted), or `path` itself when it is a file.
pub fn csv_files(path: &Path) -> Result<Vec<PathBuf>> {
    if path.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    if !path.is_dir() {
        bail!("{} does not exist", path.display());
    }
    let pattern = format!(
        "{}/**/*.csv",
        glob::Pattern::escape(&path.display().to_string())
    );
    let mut files: Vec<PathBuf> = glob::glob(&pattern)
        .context("building the CSV search pattern")?
        .flatten()
        .collect();
    files.sort();
    if files.is_empty() {
        bail!("no .csv files under {}", path.display());
    }
    Ok(files)
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
