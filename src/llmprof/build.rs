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
    let dirty =
        git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    let suffix = if dirty { "-dirty" } else { "" };
    println!("cargo:rustc-env=LLMPROF_GIT_COMMIT={commit}{suffix}");
    if let Some(git_dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        println!("cargo:rerun-if-changed={git_dir}/HEAD");
        println!("cargo:rerun-if-changed={git_dir}/index");
        // A commit moves the branch's ref, not HEAD (which names the branch); refs may be packed.
        if let Some(branch) = git(&["rev-parse", "--symbolic-full-name", "HEAD"]) {
            if branch.starts_with("refs/") {
                let common = git(&["rev-parse", "--path-format=absolute", "--git-common-dir"])
                    .unwrap_or(git_dir.clone());
                let common = std::path::Path::new(&common);
                println!("cargo:rerun-if-changed={}", common.join(&branch).display());
                println!(
                    "cargo:rerun-if-changed={}",
                    common.join("packed-refs").display()
                );
            }
        }
    }
}
