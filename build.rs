//! Build script: records the git commit for `--version`, and links libtorch into the workload
//! binary only (`llmprof-worker`), with `torch_cuda` forced in and an rpath so that users never
//! set LD_LIBRARY_PATH. The front-end binary `llmprof` stays free of libtorch (fast start-up).
use std::path::PathBuf;
use std::process::Command;

fn main() {
    record_git_commit();
    link_libtorch_into_worker();
}

fn record_git_commit() {
    let commit = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".to_string());
    let dirty = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| !o.stdout.is_empty())
        .unwrap_or(false);
    let suffix = if dirty { "-dirty" } else { "" };
    println!("cargo:rustc-env=LLMPROF_GIT_COMMIT={commit}{suffix}");
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/index");
}

fn link_libtorch_into_worker() {
    // torch-sys declares `links = "tch"` and publishes the libtorch lib folder it found.
    let Ok(lib_dir) = std::env::var("DEP_TCH_LIBTORCH_LIB") else {
        println!("cargo:warning=torch-sys did not publish DEP_TCH_LIBTORCH_LIB; the worker may not find libtorch at run time");
        return;
    };
    let lib_dir = PathBuf::from(lib_dir);
    println!("cargo:rustc-env=LLMPROF_LIBTORCH_LIB={}", lib_dir.display());
    println!("cargo:rustc-link-search=native={}", lib_dir.display());
    // Without --no-as-needed the linker drops libtorch_cuda.so (nothing references it by symbol)
    // and CUDA is never detected at run time (see docs/build.md).
    for arg in [
        "-Wl,--no-as-needed".to_string(),
        "-ltorch_cuda".to_string(),
        "-lc10_cuda".to_string(),
        "-Wl,--as-needed".to_string(),
        format!("-Wl,-rpath,{}", lib_dir.display()),
    ] {
        println!("cargo:rustc-link-arg-bin=llmprof-worker={arg}");
    }
    // Test harnesses exercise the model on CPU: they only need to find libtorch.
    println!("cargo:rustc-link-arg-tests=-Wl,-rpath,{}", lib_dir.display());
    // (No `rustc-link-arg-benches`: cargo rejects it while the package has no bench target.)
}
