//! Names llmprof does not control, made into paths (docs/security.md): file names a Hub server
//! lists, commits it resolves to, entries of a dataset's subset file or index, names a user passes
//! for a dataset. One check for all of them: a name is a relative path of ordinary components (no
//! root, no `..` or `.`, no backslash or NUL), or a single such component where one is meant; a
//! path found on disk stays inside its root once symlinks are resolved. (Reading only regular
//! files is `dataset::file_kind`'s rule.)
use std::path::{Component, Path, PathBuf};

/// Why a name was refused as a path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnsafeName {
    #[error("'{0}' is empty")]
    Empty(String),
    #[error("'{0}' is an absolute path")]
    Absolute(String),
    #[error("'{0}' has a '..' or '.' component")]
    Dots(String),
    #[error("'{0}' holds a backslash, a NUL or a control character")]
    BadCharacter(String),
    #[error("'{0}' has more than one component where a single name is meant")]
    NotSingle(String),
    #[error("'{name}' leads outside {root} (after its symbolic links)")]
    Outside { name: String, root: String },
}

/// `name` as a relative path of ordinary components, for joining under a root.
pub fn relative_path(name: &str) -> Result<&Path, UnsafeName> {
    if name.is_empty() {
        return Err(UnsafeName::Empty(name.into()));
    }
    if name.chars().any(|c| c == '\\' || c.is_control()) {
        return Err(UnsafeName::BadCharacter(name.escape_debug().to_string()));
    }
    let path = Path::new(name);
    for c in path.components() {
        match c {
            Component::Normal(_) => {}
            Component::RootDir | Component::Prefix(_) => {
                return Err(UnsafeName::Absolute(name.into()))
            }
            Component::ParentDir | Component::CurDir => return Err(UnsafeName::Dots(name.into())),
        }
    }
    // `a//b` and `a/./b` lose their empty or `.` parts in `components()`; refuse them too, so
    // the name is the path that is used.
    if name.split('/').any(|part| part.is_empty() || part == ".") {
        return Err(UnsafeName::Dots(name.into()));
    }
    Ok(path)
}

/// `name` as one ordinary path component (a folder or file name, no separator).
pub fn single_component(name: &str) -> Result<&Path, UnsafeName> {
    let path = relative_path(name)?;
    if path.components().count() != 1 {
        return Err(UnsafeName::NotSingle(name.into()));
    }
    Ok(path)
}

/// `root/name` for an untrusted relative `name`.
pub fn join(root: &Path, name: &str) -> Result<PathBuf, UnsafeName> {
    Ok(root.join(relative_path(name)?))
}

/// The canonical form of `path` when it (symlinks resolved) lies inside `root` (also resolved);
/// an error naming both when it leads out. Io errors (a missing file) pass through as `Ok(None)`
/// so that the caller reports them in its own words.
pub fn inside(root: &Path, path: &Path) -> Result<Option<PathBuf>, UnsafeName> {
    let (Ok(root_c), Ok(path_c)) = (root.canonicalize(), path.canonicalize()) else {
        return Ok(None);
    };
    if path_c.starts_with(&root_c) {
        Ok(Some(path_c))
    } else {
        Err(UnsafeName::Outside {
            name: path.display().to_string(),
            root: root.display().to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_relative_names_pass() {
        for ok in [
            "config.json",
            "a/b.safetensors",
            "images/page 1.png",
            "x..y",
            ".hidden",
        ] {
            assert_eq!(relative_path(ok).unwrap(), Path::new(ok), "{ok}");
        }
        assert!(single_component("page-01.png").is_ok());
    }

    #[test]
    fn roots_dots_separators_and_controls_are_refused() {
        let cases = [
            ("", "empty"),
            ("/etc/passwd", "absolute"),
            ("../x", "'..'"),
            ("a/../../x", "'..'"),
            ("./x", "'..' or '.'"),
            ("a//b", "'..' or '.'"),
            ("a/", "'..' or '.'"),
            ("a\\..\\b", "backslash"),
            ("a\0b", "NUL"),
            ("a\nb", "control"),
        ];
        for (name, why) in cases {
            let e = relative_path(name).unwrap_err().to_string();
            assert!(e.contains(why), "{name:?}: {e}");
        }
        let e = single_component("a/b").unwrap_err().to_string();
        assert!(e.contains("more than one component"), "{e}");
        assert!(single_component("..").is_err());
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_out_of_the_root_is_outside() {
        let base = std::env::temp_dir().join(format!("llmprof-untrusted-{}", std::process::id()));
        let root = base.join("root");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(base.join("secret"), b"s").unwrap();
        std::fs::write(root.join("in.png"), b"p").unwrap();
        std::os::unix::fs::symlink(base.join("secret"), root.join("out.png")).unwrap();
        assert!(inside(&root, &root.join("in.png")).unwrap().is_some());
        let e = inside(&root, &root.join("out.png"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("leads outside"), "{e}");
        assert_eq!(inside(&root, &root.join("missing.png")), Ok(None));
        std::fs::remove_dir_all(&base).unwrap();
    }
}
