//! Build script of the worker package: links libtorch into `llmprof-worker`, with `torch_cuda`
//! forced in and an rpath so that users never set LD_LIBRARY_PATH. It also compiles the C++ shim (`csrc/shim.cpp`: Kineto, CUDA events/graphs, allocator
//! stats, versions of the loaded libraries) against the torch and CUDA runtime headers and links it into the worker and the test
//! harnesses only, together with llmprof's own CUDA kernels when nvcc is found (build_kernels.rs).
// Cargo reads a build script's instructions from its stdout.
#![allow(clippy::disallowed_macros)]
use std::path::{Path, PathBuf};

mod build_archs;
mod build_kernels;
use build_archs as archs;
use build_kernels as kernels;

fn main() {
    if let Some(lib_dir) = link_libtorch_into_worker() {
        compile_and_link_shim(&lib_dir);
    }
}

fn link_libtorch_into_worker() -> Option<PathBuf> {
    // torch-sys declares `links = "tch"` and publishes the libtorch lib folder it found.
    let Ok(lib_dir) = std::env::var("DEP_TCH_LIBTORCH_LIB") else {
        println!("cargo:warning=torch-sys did not publish DEP_TCH_LIBTORCH_LIB; the worker may not find libtorch at run time");
        return None;
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
    // Every harness (lib unit tests included: cargo has no link-arg directive for those) must
    // find libtorch at run time without LD_LIBRARY_PATH. In `llmprof` this rpath is inert: it
    // records no libtorch NEEDED entry (checked with readelf, docs/build.md).
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", lib_dir.display());
    Some(lib_dir)
}

/// Where the CUDA runtime headers and library were found.
struct CudaRuntime {
    include: PathBuf,
    lib_dir: PathBuf,
    /// Linker spelling after `-l`: `cudart` or `:libcudart.so.13`.
    link_name: String,
}

/// Compiles `csrc/shim.cpp` into `libllmprof_shim.so` (in OUT_DIR, linked against libtorch
/// and libcudart with rpaths) and declares it as a dylib of the library crate.
fn compile_and_link_shim(torch_lib_dir: &Path) {
    println!("cargo:rerun-if-changed=csrc/shim_unity.cpp");
    println!("cargo:rerun-if-changed=csrc/shim.cpp");
    println!("cargo:rerun-if-changed=csrc/shim.h");
    println!("cargo:rerun-if-changed=csrc/shim_guard.h");
    println!("cargo:rerun-if-changed=csrc/kernels.cpp");
    println!("cargo:rerun-if-changed=csrc/kernels_vision.cpp");
    println!("cargo:rerun-if-changed=csrc/kernels_gemm.cpp");
    println!("cargo:rerun-if-changed=csrc/kernels_gemv.cpp");
    println!("cargo:rerun-if-changed=csrc/streams.cpp");
    println!("cargo:rerun-if-changed=csrc/host_memory.cpp");
    println!("cargo:rerun-if-changed=csrc/cuda_graph.cpp");
    println!("cargo:rerun-if-changed=csrc/graph_nodes.cpp");
    println!("cargo:rerun-if-changed=csrc/graph_nodes.h");
    println!("cargo:rerun-if-changed=csrc/nvtx.cpp");
    println!("cargo:rerun-if-changed=csrc/nccl.cpp");
    println!("cargo:rerun-if-changed=csrc/kernel_args.h");
    println!("cargo:rerun-if-changed=csrc/kernels");
    println!("cargo:rerun-if-env-changed=LLMPROF_CUDA_INCLUDE");
    println!("cargo:rerun-if-env-changed=CUDA_HOME");
    let torch_root = torch_lib_dir
        .parent()
        .expect("the libtorch lib folder has a parent (the torch root)");
    let torch_include = torch_root.join("include");
    if !torch_include
        .join("torch/csrc/autograd/profiler_kineto.h")
        .is_file()
    {
        panic!(
            "libtorch headers not found under {} (expected torch/csrc/autograd/profiler_kineto.h); \
             see docs/build.md",
            torch_include.display()
        );
    }
    let cuda = find_cuda_runtime(torch_root).unwrap_or_else(|why| panic!("{why}"));
    // NVTX v3 (header-only) for the worker's ranges, next to the runtime headers.
    if !cuda.include.join("nvtx3/nvToolsExt.h").is_file() {
        panic!(
            "NVTX headers not found: {} has no nvtx3/nvToolsExt.h. With the torch wheel they come \
             from `nvidia-nvtx` (pulled by torch; `pip install nvidia-nvtx` into the torch venv \
             restores them); a CUDA toolkit has them in its include folder (docs/build.md)",
            cuda.include.display()
        );
    }
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let kernels = kernels::compile(torch_root, &out_dir);
    let kernel_objects = kernels.objects;
    // The worker checks its device against the architectures built (ffi/kernel_archs.rs), and
    // says why a build has no kernels.
    println!("cargo:rustc-env=LLMPROF_KERNEL_ARCHS={}", kernels.archs);
    println!(
        "cargo:rustc-env=LLMPROF_KERNELS_ABSENT={}",
        kernels.absent_because.as_deref().unwrap_or("")
    );

    let mut build = cc::Build::new();
    if !kernel_objects.is_empty() {
        build.define("LLMPROF_HAVE_KERNELS", "1");
    }
    if kernels.sm90a {
        build.define("LLMPROF_HAVE_SM90A_GEMM", "1");
    }
    if kernels.sm90a_fmha {
        build.define("LLMPROF_HAVE_SM90A_FMHA", "1");
    }
    // NCCL for tensor-parallel ranks on GPUs: the nvidia-nccl wheel torch depends on.
    let nccl = find_nccl(torch_root);
    if let Some((include, _)) = &nccl {
        build.define("LLMPROF_HAVE_NCCL", "1").include(include);
    }
    println!("cargo:rustc-env=LLMPROF_HAVE_NCCL={}", nccl.is_some() as u8);
    build
        .cpp(true)
        .pic(true)
        .file("csrc/shim_unity.cpp")
        .include("csrc")
        .include(&torch_include)
        .include(torch_include.join("torch/csrc/api/include"))
        .include(&cuda.include)
        .flag("-std=c++17")
        .define("_GLIBCXX_USE_CXX11_ABI", "1")
        // torch's c10/cuda/CUDAEvent.h uses hardware_destructive_interference_size (gcc 12 warns).
        .flag_if_supported("-Wno-interference-size")
        .flag_if_supported("-Wno-unused-parameter")
        .cargo_metadata(false);
    build.compile("llmprof_shim_objects");

    // The shim is a shared library, not an archive: an archive member, once pulled in by any
    // reference from the library crate, keeps C++ sections (exception tables, inline c10 code)
    // alive and makes even `llmprof` record libtorch as NEEDED. A shared library is recorded
    // only when a live (called) function references it, so `llmprof` stays libtorch-free while
    // the worker and every test harness (lib unit tests included) link it the ordinary way.
    let shared = out_dir.join("libllmprof_shim.so");
    let status = build
        .get_compiler()
        .to_command()
        .arg("-shared")
        .arg("-o")
        .arg(&shared)
        .arg("-Wl,--whole-archive")
        .arg(out_dir.join("libllmprof_shim_objects.a"))
        .arg("-Wl,--no-whole-archive")
        .args(&kernel_objects)
        .arg("-Wl,-soname,libllmprof_shim.so")
        .arg(format!("-L{}", torch_lib_dir.display()))
        .args(["-ltorch_cuda", "-lc10_cuda", "-ltorch_cpu", "-lc10"])
        .arg(format!("-L{}", cuda.lib_dir.display()))
        .arg(format!("-l{}", cuda.link_name))
        .arg(format!("-Wl,-rpath,{}", torch_lib_dir.display()))
        .arg(format!("-Wl,-rpath,{}", cuda.lib_dir.display()))
        .args(nccl.iter().flat_map(|(_, lib)| {
            [
                format!("-L{}", lib.display()),
                "-l:libnccl.so.2".to_string(),
                format!("-Wl,-rpath,{}", lib.display()),
            ]
        }))
        .arg("-Wl,--no-undefined")
        .status()
        .unwrap_or_else(|e| panic!("running the C++ compiler to link {}: {e}", shared.display()));
    if !status.success() {
        panic!("linking {} failed ({status})", shared.display());
    }
    println!("cargo:rustc-link-search=native={}", out_dir.display());
    println!("cargo:rustc-link-lib=dylib=llmprof_shim");
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", out_dir.display());
}

/// NCCL's header and library folders in the `nvidia-nccl` wheel beside torch, if installed.
fn find_nccl(torch_root: &Path) -> Option<(PathBuf, PathBuf)> {
    let root = torch_root.parent()?.join("nvidia/nccl");
    let (include, lib) = (root.join("include"), root.join("lib"));
    (include.join("nccl.h").is_file() && lib.join("libnccl.so.2").is_file())
        .then_some((include, lib))
}

/// Finds the CUDA runtime headers (`cuda_runtime_api.h` plus `crt/host_config.h`) and libcudart:
/// `LLMPROF_CUDA_INCLUDE`, then the pip wheels next to torch (`site-packages/nvidia/cu13`), then
/// `$CUDA_HOME` and `/usr/local/cuda`.
fn find_cuda_runtime(torch_root: &Path) -> Result<CudaRuntime, String> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Ok(dir) = std::env::var("LLMPROF_CUDA_INCLUDE") {
        candidates.push(PathBuf::from(dir));
    }
    if let Some(site_packages) = torch_root.parent() {
        candidates.push(site_packages.join("nvidia/cu13/include"));
        candidates.push(site_packages.join("nvidia/cuda_runtime/include"));
    }
    if let Ok(home) = std::env::var("CUDA_HOME") {
        candidates.push(PathBuf::from(home).join("include"));
    }
    candidates.push(PathBuf::from("/usr/local/cuda/include"));

    let mut missing_crt = None;
    for include in &candidates {
        if !include.join("cuda_runtime_api.h").is_file() {
            continue;
        }
        if !include.join("crt/host_config.h").is_file() {
            missing_crt.get_or_insert_with(|| include.clone());
            continue;
        }
        let root = include.parent().unwrap_or(include);
        for lib_dir in [root.join("lib"), root.join("lib64")] {
            if let Some(link_name) = cudart_link_name(&lib_dir) {
                return Ok(CudaRuntime {
                    include: include.clone(),
                    lib_dir,
                    link_name,
                });
            }
        }
    }
    let tried = candidates
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    Err(match missing_crt {
        Some(include) => format!(
            "CUDA runtime headers found in {} but crt/host_config.h is missing. Install it with \
             `pip install --no-deps nvidia-cuda-crt==13.0.88` into the torch venv (docs/build.md)",
            include.display()
        ),
        None => format!(
            "CUDA runtime headers (cuda_runtime_api.h + crt/host_config.h) and libcudart not found; \
             tried {tried}. With the torch wheel they come from `nvidia-cuda-runtime` (pulled by \
             torch) plus `pip install --no-deps nvidia-cuda-crt==13.0.88`; or set \
             LLMPROF_CUDA_INCLUDE (docs/build.md)"
        ),
    })
}

/// `cudart` when `libcudart.so` exists in `dir`, else `:libcudart.so.N` for the versioned file
/// (the wheels ship no unversioned symlink).
fn cudart_link_name(dir: &Path) -> Option<String> {
    if dir.join("libcudart.so").exists() {
        return Some("cudart".to_string());
    }
    let mut versioned: Vec<String> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("libcudart.so.") && !n.contains("static"))
        .collect();
    versioned.sort();
    versioned.first().map(|n| format!(":{n}"))
}
