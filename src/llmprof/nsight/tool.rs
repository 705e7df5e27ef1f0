//! Finds the Nsight command-line tools (`nsys`, `ncu`) on PATH or in NVIDIA's install folders.

use std::ffi::OsString;
use std::path::PathBuf;

/// A profiler binary was not found; the message names every place searched and how to install it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{tool}` not found; searched: {}. {hint}", searched.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "))]
pub struct ToolMissing {
    pub tool: String,
    pub searched: Vec<PathBuf>,
    pub hint: String,
}

/// Install folders NVIDIA's packages use, as glob patterns (CUDA toolkit `bin/`, standalone Nsight
/// Systems/Compute under /opt/nvidia).
const INSTALL_GLOBS: [&str; 6] = [
    "/usr/local/cuda/bin",
    "/usr/local/cuda-*/bin",
    "/opt/nvidia/nsight-systems/*/bin",
    "/opt/nvidia/nsight-systems-cli/*/bin",
    "/opt/nvidia/nsight-compute/*",
    "/usr/local/cuda*/nsight-compute-*",
];

fn install_hint(tool: &str) -> String {
    match tool {
        "nsys" => "Install Nsight Systems (the CUDA toolkit's `cuda-nsight-systems` package, or the \
                   `nsight-systems-cli` package from NVIDIA's apt repository) and put its bin/ on PATH."
            .into(),
        "ncu" => "Install Nsight Compute (the CUDA toolkit's `cuda-nsight-compute` package, or \
                  `nsight-compute` from NVIDIA's apt repository) and put its folder on PATH."
            .into(),
        other => format!("Install `{other}` and put it on PATH."),
    }
}

/// Looks for `name` in `$PATH`, then in NVIDIA's usual install folders (newest version first).
pub fn find_tool(name: &str) -> Result<PathBuf, ToolMissing> {
    find_tool_in(name, std::env::var_os("PATH"), &INSTALL_GLOBS)
}

/// The path a setting names (`tools.nsys`, `tools.ncu`, docs/settings.md) when there is one,
/// else [`find_tool`]. A configured path that is not an executable file is an error naming it.
pub fn find_tool_configured(
    name: &str,
    configured: Option<&std::path::Path>,
) -> Result<PathBuf, ToolMissing> {
    match configured {
        None => find_tool(name),
        Some(p) if is_executable(p) => Ok(p.to_path_buf()),
        Some(p) => Err(ToolMissing {
            tool: name.to_string(),
            searched: vec![p.to_path_buf()],
            hint: format!(
                "The setting tools.{name} names it (llmprof settings shows where that is set): \
                 point it at the {name} executable, or remove it to search PATH."
            ),
        }),
    }
}

/// [`find_tool`] with the PATH value and install globs given, so tests need no real install.
pub fn find_tool_in(
    name: &str,
    path: Option<OsString>,
    globs: &[&str],
) -> Result<PathBuf, ToolMissing> {
    let mut searched: Vec<PathBuf> = path
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    for pattern in globs {
        let mut dirs: Vec<PathBuf> = glob::glob(pattern)
            .map(|g| g.flatten().collect())
            .unwrap_or_default();
        dirs.sort();
        dirs.reverse(); // newest version folder first
        if dirs.is_empty() {
            dirs.push(PathBuf::from(pattern));
        }
        searched.extend(dirs);
    }
    for dir in &searched {
        let candidate = dir.join(name);
        if is_executable(&candidate) {
            return Ok(candidate);
        }
    }
    Err(ToolMissing {
        tool: name.to_string(),
        searched,
        hint: install_hint(name),
    })
}

fn is_executable(path: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn finds_on_path_and_in_install_globs() {
        let root = std::env::temp_dir().join(format!("llmprof-tool-test-{}", std::process::id()));
        let bin = root.join("nsight-compute/2025.3.1");
        std::fs::create_dir_all(&bin).expect("mkdir");
        let ncu = bin.join("ncu");
        std::fs::write(&ncu, "#!/bin/sh\n").expect("write");
        std::fs::set_permissions(&ncu, std::fs::Permissions::from_mode(0o755)).expect("chmod");

        let pattern = format!("{}/nsight-compute/*", root.display());
        let found = find_tool_in("ncu", Some(OsString::from("/nonexistent")), &[&pattern])
            .expect("found via glob");
        assert_eq!(found, ncu);
        let found =
            find_tool_in("ncu", Some(bin.clone().into_os_string()), &[]).expect("found via PATH");
        assert_eq!(found, ncu);
        std::fs::remove_dir_all(&root).expect("cleanup");
    }

    #[test]
    fn a_configured_path_is_used_or_named_in_the_error() {
        let root = std::env::temp_dir().join(format!("llmprof-tool-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&root).expect("mkdir");
        let nsys = root.join("my-nsys");
        std::fs::write(&nsys, "#!/bin/sh\n").expect("write");
        std::fs::set_permissions(&nsys, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        assert_eq!(find_tool_configured("nsys", Some(&nsys)), Ok(nsys.clone()));
        let err = find_tool_configured("nsys", Some(&root.join("absent"))).expect_err("absent");
        assert_eq!(err.searched, vec![root.join("absent")]);
        assert!(err.to_string().contains("tools.nsys"), "{err}");
        std::fs::remove_dir_all(&root).expect("cleanup");
    }

    #[test]
    fn missing_tool_names_paths_and_install() {
        let err = find_tool_in(
            "nsys",
            Some(OsString::from("/a:/b")),
            &["/nonexistent-opt/nsight-systems/*/bin"],
        )
        .expect_err("not there");
        assert_eq!(err.tool, "nsys");
        assert_eq!(
            err.searched,
            vec![
                PathBuf::from("/a"),
                PathBuf::from("/b"),
                PathBuf::from("/nonexistent-opt/nsight-systems/*/bin")
            ]
        );
        let msg = err.to_string();
        assert!(msg.contains("`nsys` not found"), "{msg}");
        assert!(msg.contains("/a, /b"), "{msg}");
        assert!(msg.contains("Nsight Systems"), "{msg}");
    }
}
