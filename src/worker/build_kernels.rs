//! Build-script part: compiles llmprof's own CUDA kernels (`csrc/kernels/*.cu`) with nvcc into
//! objects for the shim. nvcc comes from `LLMPROF_NVCC`, the pip wheel next to torch
//! (`nvidia-cuda-nvcc`, which bootstrap.sh installs), `$CUDA_HOME`, `/usr/local/cuda` or PATH.
//! Without nvcc (or with `LLMPROF_NO_KERNELS=1`) the build goes on without kernels and says so;
//! the switches that need them then fail with a message naming the fix.
//!
//! The architectures come from `LLMPROF_CUDA_ARCHS` (build_archs.rs: by default the GPUs of the
//! building machine, none where it has none); the nvcc jobs run in parallel (cargo's job count).
//!
//! `csrc/kernels/sm90a/*.cu` are Hopper-only kernels built on CUTLASS 3's TMA warp-specialized
//! kernels (a GEMM, and SAM's global and windowed attention on the Hopper FMHA of CUTLASS's
//! example 88), compiled for sm_90a alone, with the CUTLASS headers (and examples) from `LLMPROF_CUTLASS` or
//! the `nvidia-cutlass` wheel next to torch (bootstrap.sh installs it). Without those headers the
//! build goes on without them (`LLMPROF_CUTLASS=0` asks for that) and SAM uses cuBLAS + GELU and
//! the folded-bias attention.
use super::archs::{self, Archs};
use std::path::{Path, PathBuf};
use std::process::Command;

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
    /// The architectures the portable kernels were built for, "80,90" (empty without kernels):
    /// what the worker embeds as `LLMPROF_KERNEL_ARCHS`.
    pub archs: String,
    /// Why there are no kernels, where `LLMPROF_CUDA_ARCHS` decided it.
    pub absent_because: Option<String>,
}

/// The sm90a sources built on CUTLASS's Hopper FMHA example rather than its library headers.
const FMHA_SOURCES: [&str; 2] = ["sam_global_attention.cu", "sam_window_fmha.cu"];

/// Compiles every `.cu` in `csrc/kernels` for the chosen architectures ([`archs::choose`]), and
/// those in `csrc/kernels/sm90a` for sm_90a when Hopper is among them and the CUTLASS headers are
/// found.
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
    let archs = match archs::choose() {
        Ok(archs) => archs,
        Err(why) => {
            println!(
                "cargo:warning=building without llmprof's CUDA kernels: {why}. For a GPU machine, \
                 build there (./bootstrap.sh --yes) or set LLMPROF_CUDA_ARCHS (e.g. 90 for \
                 H100/H200, all for every GPU)"
            );
            return Kernels {
                absent_because: Some(why),
                ..Kernels::default()
            };
        }
    };
    println!(
        "cargo:warning=llmprof's CUDA kernels for {} (+PTX): {}",
        archs::list_text(&archs.list),
        archs.why
    );
    let gencodes = archs.gencodes();
    let mut jobs: Vec<Job> = cu_files("csrc/kernels")
        .into_iter()
        .map(|src| Job {
            src,
            gencodes: gencodes.clone(),
            extra: Vec::new(),
        })
        .collect();
    let (sm90a, sm90a_fmha) = hopper_jobs(torch_root, &archs, &mut jobs);
    Kernels {
        objects: run_parallel(&nvcc, out_dir, jobs),
        sm90a,
        sm90a_fmha,
        archs: archs.joined(),
        absent_because: None,
    }
}

/// One nvcc invocation: a source, its `-gencode` values and extra flags.
struct Job {
    src: PathBuf,
    gencodes: Vec<String>,
    extra: Vec<String>,
}

/// Adds the sm_90a CUTLASS kernels to `jobs` (first: they take longest) when Hopper is among
/// `archs` and CUTLASS is found; returns whether the GEMMs and the FMHA kernels are built.
fn hopper_jobs(torch_root: &Path, archs: &Archs, jobs: &mut Vec<Job>) -> (bool, bool) {
    if !archs.has_hopper() {
        println!(
            "cargo:warning=building without the Hopper (sm_90a) kernels: sm_90 is not among the \
             architectures chosen; they only run on H100/H200"
        );
        return (false, false);
    }
    let Some(include) = find_cutlass(torch_root) else {
        println!(
            "cargo:warning=building without the Hopper kernels (SAM's MLP falls back to cuBLAS \
             + GELU, its global and windowed attention to the folded-bias attention): LLMPROF_CUTLASS=0, or \
             no CUTLASS headers at LLMPROF_CUTLASS or in the nvidia-cutlass wheel next to \
             torch; ./bootstrap.sh --yes installs them"
        );
        return (false, false);
    };
    let fmha = has_fmha_example(&include);
    if !fmha {
        println!(
            "cargo:warning=building without SAM's Hopper global and windowed attention \
             (they fall back to the folded-bias attention): no examples/88_hopper_fmha beside the CUTLASS \
             headers at {}; the nvidia-cutlass wheel has it",
            include.display()
        );
    }
    let extra = vec![
        "-DNDEBUG".to_string(),
        "--expt-relaxed-constexpr".to_string(),
        format!("-I{}", include.display()),
        format!("-I{}", include.join("../tools/util/include").display()),
        format!("-I{}", include.join("../examples").display()),
    ];
    let hopper: Vec<Job> = cu_files("csrc/kernels/sm90a")
        .into_iter()
        .filter(|src| fmha || !FMHA_SOURCES.iter().any(|f| src.ends_with(f)))
        .map(|src| Job {
            src,
            gencodes: vec!["arch=compute_90a,code=sm_90a".to_string()],
            extra: extra.clone(),
        })
        .collect();
    jobs.splice(0..0, hopper);
    (true, fmha)
}

/// Runs `jobs` on cargo's job count of threads (`NUM_JOBS`), in order of submission; returns
/// the objects in that order. Panics naming the first source nvcc failed on.
fn run_parallel(nvcc: &Path, out_dir: &Path, jobs: Vec<Job>) -> Vec<PathBuf> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let threads = std::env::var("NUM_JOBS")
        .ok()
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(1)
        .clamp(1, jobs.len().max(1));
    let next = AtomicUsize::new(0);
    let mut results: Vec<(usize, PathBuf)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(job) = jobs.get(i) else { break };
                        done.push((i, nvcc_compile(nvcc, job, out_dir)));
                    }
                    done
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, obj)| obj).collect()
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

/// nvcc `job.src` → `out_dir/<stem>.cu.o` for the job's gencodes, with its extra flags.
fn nvcc_compile(nvcc: &Path, job: &Job, out_dir: &Path) -> PathBuf {
    let src = &job.src;
    let stem = src.file_stem().expect("a .cu file has a stem");
    let obj = out_dir.join(stem).with_extension("cu.o");
    let mut cmd = Command::new(nvcc);
    cmd.args(["-O3", "-std=c++17", "-Xcompiler", "-fPIC", "-c"])
        .args(&job.extra)
        .arg(src)
        .arg("-o")
        .arg(&obj);
    for g in &job.gencodes {
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
