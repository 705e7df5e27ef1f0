//! What a path names, checked with `stat` before anything opens it: only regular files are read.
//! Opening a FIFO blocks until a writer appears, a device can stream forever, and a symlink loop
//! makes a recursive walk endless, so listings (dataset folders, Nsight CSV folders) and image
//! loading skip or refuse every other kind, naming it, instead of hanging or skipping silently.
use serde::Serialize;
use std::fmt;
use std::path::{Path, PathBuf};

/// Why a path is not read as a regular file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NotRegular {
    Directory,
    Fifo,
    Socket,
    BlockDevice,
    CharDevice,
    /// A symlink whose resolution loops (ELOOP).
    SymlinkLoop,
    /// A symlink whose target does not exist.
    BrokenSymlink,
    Missing,
    /// `stat` failed otherwise (permissions, I/O error).
    Unreadable,
}

impl NotRegular {
    /// A phrase for messages: "is a FIFO (named pipe)".
    pub fn describe(self) -> &'static str {
        match self {
            Self::Directory => "a folder",
            Self::Fifo => "a FIFO (named pipe)",
            Self::Socket => "a socket",
            Self::BlockDevice => "a block device",
            Self::CharDevice => "a character device",
            Self::SymlinkLoop => "a symlink loop",
            Self::BrokenSymlink => "a symlink to a missing file",
            Self::Missing => "missing",
            Self::Unreadable => "unreadable",
        }
    }
}

/// A path a listing did not read, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skipped {
    pub path: PathBuf,
    pub kind: NotRegular,
    /// The OS error, for `Unreadable`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl fmt::Display for Skipped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} is {}", self.path.display(), self.kind.describe())?;
        if let Some(d) = &self.detail {
            write!(f, " ({d})")?;
        }
        Ok(())
    }
}

/// ELOOP, "too many levels of symbolic links".
#[cfg(target_os = "linux")]
const ELOOP: i32 = 40;
#[cfg(not(target_os = "linux"))]
const ELOOP: i32 = 62; // macOS and the BSDs

/// `Ok(metadata)` when `path` (symlinks followed) is a regular file, else why not.
pub fn regular_file(path: &Path) -> Result<std::fs::Metadata, Skipped> {
    let skipped = |kind, detail| Skipped {
        path: path.to_path_buf(),
        kind,
        detail,
    };
    match std::fs::metadata(path) {
        Ok(md) if md.is_file() => Ok(md),
        Ok(md) => Err(skipped(kind_of(&md.file_type()), None)),
        Err(e) if e.raw_os_error() == Some(ELOOP) => Err(skipped(NotRegular::SymlinkLoop, None)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
            let kind = if link {
                NotRegular::BrokenSymlink
            } else {
                NotRegular::Missing
            };
            Err(skipped(kind, None))
        }
        Err(e) => Err(skipped(NotRegular::Unreadable, Some(e.to_string()))),
    }
}

/// `std::fs::File::open` of a regular file only (symlinks followed): a FIFO, socket, device or
/// folder where a file is expected is an `InvalidInput` error naming what it is, instead of an
/// open or read that never ends. For files llmprof does not control (docs/security.md).
pub fn open_regular(path: impl AsRef<Path>) -> std::io::Result<std::fs::File> {
    let path = path.as_ref();
    match regular_file(path) {
        Ok(_) => std::fs::File::open(path),
        Err(s) if s.kind == NotRegular::Missing => std::fs::File::open(path),
        Err(s) => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{s}, not a regular file"),
        )),
    }
}

/// `std::fs::read_to_string` through [`open_regular`].
pub fn read_to_string(path: impl AsRef<Path>) -> std::io::Result<String> {
    let mut s = String::new();
    std::io::Read::read_to_string(&mut open_regular(path)?, &mut s)?;
    Ok(s)
}

/// The kind of a non-regular file type (after following symlinks).
pub fn kind_of(t: &std::fs::FileType) -> NotRegular {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return NotRegular::Fifo;
        }
        if t.is_socket() {
            return NotRegular::Socket;
        }
        if t.is_block_device() {
            return NotRegular::BlockDevice;
        }
        if t.is_char_device() {
            return NotRegular::CharDevice;
        }
    }
    if t.is_dir() {
        NotRegular::Directory
    } else {
        NotRegular::Unreadable
    }
}

/// Logs one warning per skipped path (`what`: "dataset entry", "CSV file").
pub fn warn_skipped(what: &str, skipped: &[Skipped]) {
    for s in skipped {
        tracing::warn!("skipping {what} {s}: only regular files are read");
    }
}

/// One line for a report: "skipped 2 entries that are not regular files: a.png is a FIFO
/// (named pipe); b.png is a symlink loop", or `None` when nothing was skipped.
pub fn skipped_note(skipped: &[Skipped]) -> Option<String> {
    if skipped.is_empty() {
        return None;
    }
    let list: Vec<String> = skipped.iter().map(Skipped::to_string).collect();
    Some(format!(
        "skipped {} entr{} that {} not regular files: {}",
        skipped.len(),
        if skipped.len() == 1 { "y" } else { "ies" },
        if skipped.len() == 1 { "is" } else { "are" },
        list.join("; ")
    ))
}

#[cfg(all(test, unix))]
mod tests {
    use super::super::test_util::{mkfifo, temp_dir};
    use super::*;

    #[test]
    fn open_regular_refuses_a_fifo_without_blocking_and_reads_files() {
        let d = temp_dir("open-regular");
        mkfifo(&d.join("metrics.json"));
        let e = read_to_string(d.join("metrics.json")).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
        assert!(
            e.to_string()
                .contains("is a FIFO (named pipe), not a regular file"),
            "{e}"
        );
        std::fs::write(d.join("ok.json"), "{}").unwrap();
        assert_eq!(read_to_string(d.join("ok.json")).unwrap(), "{}");
        let missing = read_to_string(d.join("missing.json")).unwrap_err();
        assert_eq!(missing.kind(), std::io::ErrorKind::NotFound);
    }

    #[test]
    fn kinds_are_told_apart() {
        let d = temp_dir("kinds");
        std::fs::write(d.join("a.png"), b"x").unwrap();
        mkfifo(&d.join("p.png"));
        std::os::unix::fs::symlink("loop.png", d.join("loop.png")).unwrap();
        std::os::unix::fs::symlink("gone.png", d.join("dangling.png")).unwrap();
        std::os::unix::fs::symlink("a.png", d.join("link.png")).unwrap();
        assert!(regular_file(&d.join("a.png")).is_ok());
        assert!(regular_file(&d.join("link.png")).is_ok());
        let kind = |n: &str| regular_file(&d.join(n)).unwrap_err().kind;
        assert_eq!(kind("p.png"), NotRegular::Fifo);
        assert_eq!(kind("loop.png"), NotRegular::SymlinkLoop);
        assert_eq!(kind("dangling.png"), NotRegular::BrokenSymlink);
        assert_eq!(kind("nope.png"), NotRegular::Missing);
        assert_eq!(regular_file(&d).unwrap_err().kind, NotRegular::Directory);
        assert_eq!(
            regular_file(Path::new("/dev/null")).unwrap_err().kind,
            NotRegular::CharDevice
        );
        let note = skipped_note(&[regular_file(&d.join("p.png")).unwrap_err()]).unwrap();
        assert!(
            note.contains("skipped 1 entry that is not") && note.contains("p.png is a FIFO"),
            "{note}"
        );
    }
}
