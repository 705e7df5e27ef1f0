//! The GPUs a local sweep may use and how jobs share them: the configured list, else
//! `CUDA_VISIBLE_DEVICES` when set, else `nvidia-smi -L`, else NVML's device count; then one
//! slot per GPU and per `jobs_per_gpu`. A job never shares a GPU unless `jobs_per_gpu` > 1.
use super::conf::LocalConf;
use anyhow::{bail, Result};

/// The GPUs `CUDA_VISIBLE_DEVICES` names (an empty value, `-1` or `NoDevFiles`: none).
pub fn parse_visible(value: &str) -> Vec<String> {
    let ids: Vec<String> = value
        .split(',')
        .map(|s| s.trim().to_string())
        .take_while(|s| !s.is_empty() && s != "-1" && s != "NoDevFiles")
        .collect();
    ids
}

/// GPU indices from `nvidia-smi -L` ("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-…)").
pub fn parse_nvidia_smi_list(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("GPU "))
        .filter_map(|rest| rest.split(':').next())
        .filter(|i| i.chars().all(|c| c.is_ascii_digit()) && !i.is_empty())
        .map(str::to_string)
        .collect()
}

/// The GPUs this machine shows to a process started from here.
pub fn visible() -> Vec<String> {
    match std::env::var("CUDA_VISIBLE_DEVICES") {
        Ok(v) => return parse_visible(&v),
        Err(std::env::VarError::NotUnicode(_)) => {
            tracing::warn!("CUDA_VISIBLE_DEVICES is not UTF-8, so it names no GPU: jobs run without one (unset it, or list GPU indices or UUIDs)");
            return Vec::new();
        }
        Err(std::env::VarError::NotPresent) => {}
    }
    if let Ok(out) = std::process::Command::new("nvidia-smi").arg("-L").output() {
        if out.status.success() {
            return parse_nvidia_smi_list(&String::from_utf8_lossy(&out.stdout));
        }
    }
    match nvml_wrapper::Nvml::init().and_then(|n| n.device_count()) {
        Ok(n) => (0..n).map(|i| i.to_string()).collect(),
        Err(_) => Vec::new(),
    }
}

/// One entry per job that may run at once: the GPU it gets (None: a CPU job, environment
/// untouched).
pub fn slots(conf: &LocalConf, visible: &[String]) -> Result<Vec<Option<String>>> {
    let gpus: Vec<String> = conf.gpus.clone().unwrap_or_else(|| visible.to_vec());
    if gpus.is_empty() {
        return Ok(vec![None; conf.n_jobs.unwrap_or(1)]);
    }
    let mut slots = Vec::new();
    // Round-robin, so n_jobs < slots still spreads jobs over the GPUs.
    for _ in 0..conf.jobs_per_gpu {
        slots.extend(gpus.iter().map(|g| Some(g.clone())));
    }
    match conf.n_jobs {
        None => Ok(slots),
        Some(n) if n <= slots.len() => {
            slots.truncate(n);
            Ok(slots)
        }
        Some(n) => bail!(
            "hydra.launcher.n_jobs={n} but there are only {} GPU slot(s) ({} GPU(s): {} × jobs_per_gpu={}); a job never shares a GPU unless asked\n  fix: lower n_jobs, or set hydra.launcher.jobs_per_gpu={} to share GPUs, or hydra.launcher.gpus=[] for CPU jobs",
            slots.len(),
            gpus.len(),
            gpus.join(","),
            conf.jobs_per_gpu,
            n.div_ceil(gpus.len())
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(n_jobs: Option<usize>, gpus: Option<&[&str]>, per: usize) -> LocalConf {
        LocalConf {
            n_jobs,
            gpus: gpus.map(|g| g.iter().map(|s| s.to_string()).collect()),
            jobs_per_gpu: per,
        }
    }

    #[test]
    fn visible_gpus_from_the_environment_and_nvidia_smi() {
        assert_eq!(parse_visible("0, 1"), ["0", "1"]);
        assert_eq!(parse_visible("GPU-abc"), ["GPU-abc"]);
        assert!(parse_visible("").is_empty());
        assert!(parse_visible("-1").is_empty());
        // CUDA stops at the first invalid entry.
        assert_eq!(parse_visible("2,-1,3"), ["2"]);
        let smi = "GPU 0: NVIDIA H200 (UUID: GPU-1f)\nGPU 1: NVIDIA H200 (UUID: GPU-2e)\n  MIG 1g.10gb Device 0: (UUID: MIG-x)\n";
        assert_eq!(parse_nvidia_smi_list(smi), ["0", "1"]);
        assert!(parse_nvidia_smi_list("No devices were found\n").is_empty());
    }

    #[test]
    fn one_job_per_gpu_unless_asked() {
        let two = ["0".to_string(), "1".to_string()];
        let s = slots(&conf(None, None, 1), &two).unwrap();
        assert_eq!(s, [Some("0".into()), Some("1".into())]);
        let s = slots(&conf(Some(1), None, 1), &two).unwrap();
        assert_eq!(s, [Some("0".into())]);
        let e = slots(&conf(Some(3), None, 1), &two).unwrap_err();
        assert!(format!("{e:#}").contains("jobs_per_gpu=2"), "{e:#}");
        let s = slots(&conf(Some(3), None, 2), &two).unwrap();
        assert_eq!(s, [Some("0".into()), Some("1".into()), Some("0".into())]);
        // No GPUs: CPU jobs, one unless set.
        assert_eq!(slots(&conf(None, None, 1), &[]).unwrap(), [None]);
        assert_eq!(
            slots(&conf(Some(2), Some(&[]), 1), &two).unwrap(),
            [None, None]
        );
        let s = slots(&conf(None, Some(&["3"]), 1), &two).unwrap();
        assert_eq!(s, [Some("3".into())]);
    }
}
