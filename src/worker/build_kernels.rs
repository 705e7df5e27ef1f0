//! Build-script part: compiles llmprof's own CUDA kernels (`csrc/kernels/*.cu`) with nvcc into
//! objects for the shim. nvcc comes from `LLMPROF_NVCC`, the pip wheel next to torch
//! (`nvidia-cuda-nvcc`, which bootstrap.sh installs), `$CUDA_HOME`, `/usr/local/cuda` or PATH.
//! Without nvcc (or with `LLMPROF_NO_KERNELS=1`) the build goes on without kernels and says so;
//! the switches that need them then fail with a message naming the fix.
use std::path::{Path, PathBuf};
use std::process::Command;

/// Real GPUs the objects carry code for (A100, H100/H200, B200, RTX 50xx), plus PTX of the newest
/// for later ones.
const GENCODE: &[&str] = &[
    "arch=compute_80,code=sm_80",
    "arch=compute_90,code=sm_90",
    "arch=compute_100,code=sm_100",
    "arch=compute_120,code=[sm_120,compute_120]",
];

/// Compiles every `.cu` in `csrc/kernels`; returns the object paths (empty without nvcc).
pub fn compile(torch_root: &Path, out_dir: &Path) -> Vec<PathBuf> {
    println!("cargo:rerun-if-env-changed=LLMPROF_NVCC");
    println!("cargo:rerun-if-env-changed=LLMPROF_NO_KERNELS");
    if std::env::var("LLMPROF_NO_KERNELS").is_ok_and(|v| v == "1") {
        println!("cargo:warning=LLMPROF_NO_KERNELS=1: building without llmprof's CUDA kernels");
        return Vec::new();
    }
    let Some(nvcc) = find_nvcc(torch_root) else {
        println!(
            "cargo:warning=nvcc not found (LLMPROF_NVCC, the nvidia-cuda-nvcc wheel next to torch, \
             CUDA_HOME, /usr/local/cuda, PATH): building without llmprof's CUDA kernels; \
             ./bootstrap.sh --yes installs it"
        );
        return Vec::new();
    };
    let mut sources: Vec<PathBuf> = std::fs::read_dir("csrc/kernels")
        .expect("csrc/kernels exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "cu"))
        .collect();
    sources.sort();
    sources
        .iter()
        .map(|src| {
            let stem = src.file_stem().expect("a .cu file has a stem");
            let obj = out_dir.join(stem).with_extension("cu.o");
            let mut cmd = Command::new(&nvcc);
            cmd.args(["-O3", "-std=c++17", "-Xcompiler", "-fPIC", "-c"])
                .arg(src)
                .arg("-o")
                .arg(&obj);
            for g in GENCODE {
                cmd.arg("-gencode").arg(g);
            }
            let status = cmd
                .status()
                .unwrap_or_else(|e| panic!("running {}: {e}", nvcc.display()));
            if !status.success() {
                panic!(
                    "nvcc failed on {} ({status}); set LLMPROF_NO_KERNELS=1 to build without the \
                     kernels",
                    src.display()
                );
            }
            obj
        })
        .collect()
}

fn find_nvcc(torch_root: &Path) -> Option<PathBuf> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Ok(p) = std::env::var("LLMPROF_NVCC") {
        candidates.push(PathBuf::from(p));
    }
    if let Some(site_packages) = torch_root.parent() {
        candidates.push(site_packages.join("nvidia/cu13/bin/nvcc"));
    }
    if let Ok(home) = std::env::var("CUDA_HOME") {
        candidates.push(PathBuf::from(home).join("bin/nvcc"));
    }
    candidates.push(PathBuf::from("/usr/local/cuda/bin/nvcc"));
    if let Some(path) = std::env::var_os("PATH") {
        candidates.extend(std::env::split_paths(&path).map(|d| d.join("nvcc")));
    }
    candidates.into_iter().find(|p| p.is_file())
}
