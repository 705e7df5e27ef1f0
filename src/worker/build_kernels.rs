//! Build-script part: compiles llmprof's own CUDA kernels (`csrc/kernels/*.cu`) with nvcc into
//! objects for the shim. nvcc comes from `LLMPROF_NVCC`, the pip wheel next to torch
//! (`nvidia-cuda-nvcc`, which bootstrap.sh installs), `$CUDA_HOME`, `/usr/local/cuda` or PATH.
//! Without nvcc (or with `LLMPROF_NO_KERNELS=1`) the build goes on without kernels and says so;
//! the switches that need them then fail with a message naming the fix.
//!
//! `csrc/kernels/sm90a/*.cu` are Hopper-only kernels built on CUTLASS 3's TMA warp-specialized
//! kernels (a GEMM, and SAM's global and windowed attention on the Hopper FMHA of CUTLASS's
//! example 88), compiled for sm_90a alone, with the CUTLASS headers (and examples) from `LLMPROF_CUTLASS` or
//! the `nvidia-cutlass` wheel next to torch (bootstrap.sh installs it). Without those headers the
//! build goes on without them (`LLMPROF_CUTLASS=0` asks for that) and SAM uses cuBLAS + GELU and
//! the folded-bias attention.
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

/// The compiled kernel objects.
#[derive(Default)]
pub struct Kernels {
    /// Every object, for the shim's link line (empty without nvcc).
    pub objects: Vec<PathBuf>,
    /// Whether the Hopper GEMMs (`csrc/kernels/sm90a`) are among them.
    pub sm90a: bool,
    /// Whether SAM's Hopper attention kernels (`csrc/kernels/sm90a/sam_global_attention.cu` and
    /// `sam_window_fmha.cu`, which also need CUTLASS's `examples/88_hopper_fmha`) are among them.
    pub sm90a_fmha: bool,
}

/// The sm90a sources built on CUTLASS's Hopper FMHA example rather than its library headers.
const FMHA_SOURCES: [&str; 2] = ["sam_global_attention.cu", "sam_window_fmha.cu"];

/// Compiles every `.cu` in `csrc/kernels` for [`GENCODE`], and those in `csrc/kernels/sm90a` for
/// sm_90a when the CUTLASS headers are found.
pub fn compile(torch_root: &Path, out_dir: &Path) -> Kernels {
    println!("cargo:rerun-if-env-changed=LLMPROF_NVCC");
    println!("cargo:rerun-if-env-changed=LLMPROF_NO_KERNELS");
    println!("cargo:rerun-if-env-changed=LLMPROF_CUTLASS");
    println!("cargo:rerun-if-changed=csrc/kernels/sm90a");
    if std::env::var("LLMPROF_NO_KERNELS").is_ok_and(|v| v == "1") {
        println!("cargo:warning=LLMPROF_NO_KERNELS=1: building without llmprof's CUDA kernels");
        return Kernels::default();
    }
    let Some(nvcc) = find_nvcc(torch_root) else {
        println!(
            "cargo:warning=nvcc not found (LLMPROF_NVCC, the nvidia-cuda-nvcc wheel next to torch, \
             CUDA_HOME, /usr/local/cuda, PATH): building without llmprof's CUDA kernels; \
             ./bootstrap.sh --yes installs it"
        );
        return Kernels::default();
    };
    let mut objects: Vec<PathBuf> = cu_files("csrc/kernels")
        .iter()
        .map(|src| nvcc_compile(&nvcc, src, out_dir, GENCODE, &[]))
        .collect();
    let (sm90a, sm90a_fmha) = match find_cutlass(torch_root) {
        Some(include) => {
            let fmha = has_fmha_example(&include);
            if !fmha {
                println!(
                    "cargo:warning=building without SAM's Hopper global and windowed attention \
                     (they fall back to the folded-bias attention): no examples/88_hopper_fmha beside the CUTLASS \
                     headers at {}; the nvidia-cutlass wheel has it",
                    include.display()
                );
            }
            let extra = [
                "-DNDEBUG".to_string(),
                "--expt-relaxed-constexpr".to_string(),
                format!("-I{}", include.display()),
                format!("-I{}", include.join("../tools/util/include").display()),
                format!("-I{}", include.join("../examples").display()),
            ];
            objects.extend(
                cu_files("csrc/kernels/sm90a")
                    .iter()
                    .filter(|src| fmha || !FMHA_SOURCES.iter().any(|f| src.ends_with(f)))
                    .map(|src| {
                        nvcc_compile(
                            &nvcc,
                            src,
                            out_dir,
                            &["arch=compute_90a,code=sm_90a"],
                            &extra,
                        )
                    }),
            );
            (true, fmha)
        }
        None => {
            println!(
                "cargo:warning=building without the Hopper kernels (SAM's MLP falls back to cuBLAS \
                 + GELU, its global and windowed attention to the folded-bias attention): LLMPROF_CUTLASS=0, or \
                 no CUTLASS headers at LLMPROF_CUTLASS or in the nvidia-cutlass wheel next to \
                 torch; ./bootstrap.sh --yes installs them"
            );
            (false, false)
        }
    };
    Kernels {
        objects,
        sm90a,
        sm90a_fmha,
    }
}

/// The `.cu` files directly in `dir`, sorted.
fn cu_files(dir: &str) -> Vec<PathBuf> {
    let mut sources: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {dir}: {e}"))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "cu"))
        .collect();
    sources.sort();
    sources
}

/// nvcc `src` → `out_dir/<stem>.cu.o` for `gencodes`, with `extra` flags.
fn nvcc_compile(
    nvcc: &Path,
    src: &Path,
    out_dir: &Path,
    gencodes: &[&str],
    extra: &[String],
) -> PathBuf {
    let stem = src.file_stem().expect("a .cu file has a stem");
    let obj = out_dir.join(stem).with_extension("cu.o");
    let mut cmd = Command::new(nvcc);
    cmd.args(["-O3", "-std=c++17", "-Xcompiler", "-fPIC", "-c"])
        .args(extra)
        .arg(src)
        .arg("-o")
        .arg(&obj);
    for g in gencodes {
        cmd.arg("-gencode").arg(g);
    }
    let status = cmd
        .status()
        .unwrap_or_else(|e| panic!("running {}: {e}", nvcc.display()));
    if !status.success() {
        panic!(
            "nvcc failed on {} ({status}); set LLMPROF_NO_KERNELS=1 to build without the kernels",
            src.display()
        );
    }
    obj
}

/// CUTLASS's `include` folder: `LLMPROF_CUTLASS` (`0`: build without the Hopper GEMMs), else
/// the `nvidia-cutlass` wheel's copy next to torch (`site-packages/cutlass_library/source/include`).
/// A folder counts when it has the collective builder and, beside it, the `tools/util` headers
/// (the Hopper FMHA example beside them is optional: [`has_fmha_example`]).
fn find_cutlass(torch_root: &Path) -> Option<PathBuf> {
    let usable = |p: &Path| {
        p.join("cutlass/gemm/collective/collective_builder.hpp")
            .is_file()
            && p.join("../tools/util/include/cutlass/util/packed_stride.hpp")
                .is_file()
    };
    if let Ok(p) = std::env::var("LLMPROF_CUTLASS") {
        if p == "0" {
            return None;
        }
        let p = PathBuf::from(p);
        if usable(&p) {
            return Some(p);
        }
        println!(
            "cargo:warning=LLMPROF_CUTLASS={} is not a CUTLASS include folder (with \
             cutlass/gemm/collective/collective_builder.hpp and ../tools/util/include beside it); \
             looking next to torch",
            p.display()
        );
    }
    let wheel = torch_root.parent()?.join("cutlass_library/source/include");
    usable(&wheel).then_some(wheel)
}

/// Whether CUTLASS's Hopper FMHA example sits beside the `include` folder (the wheel has it).
fn has_fmha_example(include: &Path) -> bool {
    include
        .join("../examples/88_hopper_fmha/kernel/fmha_kernel_builder.hpp")
        .is_file()
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
