//! Build script of the front end: records the git commit for `--version` and env.json. Nothing
//! else: this package never links libtorch (the worker's build script does that).
// Cargo reads a build script's instructions from its stdout.
#![allow(clippy::disallowed_macros)]
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    Command::new("git")
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
}

fn main() {
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    // --no-optional-locks: reading the status must not rewrite the index, which is watched.
    let dirty = git(&[
        "--no-optional-locks",
        "status",
        "--porcelain",
        "--untracked-files=no",
    ])
    .is_some_and(|s| !s.is_empty());
    let suffix = if dirty { "-dirty" } else { "" };
    println!("cargo:rustc-env=LLMPROF_GIT_COMMIT={commit}{suffix}");
    // Cargo reruns a build script every time when a path it was told to watch does not exist
    // (and then rebuilds this crate and everything above it, about three CPU-minutes on a 2-core
    // machine), so only existing files are watched: a clone may hold its branch's ref loose or
    // in packed-refs, and a repository that never packed its refs has no packed-refs.
    let watch = |path: std::path::PathBuf| {
        if path.is_file() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    };
    if let Some(git_dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        let git_dir = std::path::Path::new(&git_dir);
        watch(git_dir.join("HEAD"));
        watch(git_dir.join("index"));
        // A commit moves the branch's ref, not HEAD (which names the branch); refs may be packed.
        if let Some(branch) = git(&["rev-parse", "--symbolic-full-name", "HEAD"]) {
            if branch.starts_with("refs/") {
                let common = git(&["rev-parse", "--path-format=absolute", "--git-common-dir"])
                    .map(std::path::PathBuf::from)
                    .unwrap_or(git_dir.to_path_buf());
                watch(common.join(&branch));
                watch(common.join("packed-refs"));
            }
        }
    }
}
