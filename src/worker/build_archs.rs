//! Build-script part: which GPU architectures llmprof's CUDA kernels are compiled for.
//!
//! `LLMPROF_CUDA_ARCHS` chooses explicitly: compute capabilities separated by commas, spaces or
//! semicolons (`90`, `9.0`, `sm_90` and `compute_90` all mean 9.0), `all` for every supported
//! family (A100, H100/H200, B200, RTX 50xx), or `native` (the default): the GPUs
//! `nvidia-smi --query-gpu=compute_cap` lists on the building machine. Where it lists none (a
//! machine without a GPU) `native` builds no kernels, with a notice: they could not run there,
//! and nvcc would take minutes of a fresh machine's setup. CI sets `LLMPROF_CUDA_ARCHS=90` so
//! that every kernel still compiles once; binaries built to be carried to a GPU machine name its
//! architecture the same way. Every choice embeds PTX of its newest architecture, which newer
//! GPUs can JIT-compile. The worker compares its device with the list at run time
//! (`ffi/kernel_archs.rs`) and names the rebuild command when the device is not covered.
use std::process::Command;

/// What `all` means: A100, H100/H200, B200, RTX 50xx.
const ALL: &[u32] = &[80, 90, 100, 120];
/// The oldest architecture the kernels support (they use bf16 and cp.async).
const OLDEST: u32 = 80;

/// The architectures to build for, sorted and distinct, and how they were chosen (for the
/// build's warning line).
pub struct Archs {
    pub list: Vec<u32>,
    pub why: String,
}

impl Archs {
    /// `-gencode` values: SASS for each, plus PTX of the newest.
    pub fn gencodes(&self) -> Vec<String> {
        let newest = self.list.last().copied();
        self.list
            .iter()
            .map(|&a| {
                if Some(a) == newest {
                    format!("arch=compute_{a},code=[sm_{a},compute_{a}]")
                } else {
                    format!("arch=compute_{a},code=sm_{a}")
                }
            })
            .collect()
    }

    /// Whether Hopper (9.0) is among them: the sm_90a CUTLASS kernels run there only.
    pub fn has_hopper(&self) -> bool {
        self.list.contains(&90)
    }

    /// "80,90": the value the worker embeds (`LLMPROF_KERNEL_ARCHS`).
    pub fn joined(&self) -> String {
        self.list
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// Reads `LLMPROF_CUDA_ARCHS` (default `native`). `Err(why)`: build no kernels, because
/// `native` found no GPU.
pub fn choose() -> Result<Archs, String> {
    println!("cargo:rerun-if-env-changed=LLMPROF_CUDA_ARCHS");
    let value = std::env::var("LLMPROF_CUDA_ARCHS").unwrap_or_else(|_| "native".into());
    match value.trim() {
        "" | "native" => native(),
        "all" => Ok(Archs {
            list: ALL.to_vec(),
            why: "LLMPROF_CUDA_ARCHS=all".into(),
        }),
        list => match parse_list(list) {
            Ok(list) if !list.is_empty() => Ok(Archs {
                list,
                why: format!("LLMPROF_CUDA_ARCHS={value}"),
            }),
            parsed => panic!(
                "LLMPROF_CUDA_ARCHS={value}: {}. Give compute capabilities such as 90 or 8.0,9.0 \
                 (each at least {OLDEST}), `native` (the GPUs nvidia-smi lists) or `all`",
                parsed.err().unwrap_or_else(|| "no architecture".into())
            ),
        },
    }
}

/// The GPUs of this machine, or why there are none.
fn native() -> Result<Archs, String> {
    let listed = Command::new("nvidia-smi")
        .args(["--query-gpu=compute_cap", "--format=csv,noheader"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .and_then(|text| parse_list(&text).ok());
    match listed {
        Some(list) if !list.is_empty() => Ok(Archs {
            why: format!("the GPUs nvidia-smi lists ({})", list_text(&list)),
            list,
        }),
        _ => Err("built on a machine without a GPU (nvidia-smi lists none)".into()),
    }
}

/// "sm_80, sm_90": the architectures as the build's notices spell them.
pub fn list_text(list: &[u32]) -> String {
    list.iter()
        .map(|a| format!("sm_{a}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// "8.0, 9.0" / "80;90" / "sm_90 compute_100" → [80, 90, 100] (sorted, distinct).
pub fn parse_list(text: &str) -> Result<Vec<u32>, String> {
    let mut list = Vec::new();
    for item in text
        .split([',', ';', ' ', '\n', '\t'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        let digits = item
            .trim_start_matches("sm_")
            .trim_start_matches("compute_")
            .replace('.', "");
        let arch: u32 = digits
            .parse()
            .map_err(|_| format!("'{item}' is not a compute capability"))?;
        if !(OLDEST..1000).contains(&arch) {
            return Err(format!("'{item}' is outside {OLDEST}..999"));
        }
        list.push(arch);
    }
    list.sort_unstable();
    list.dedup();
    Ok(list)
}
