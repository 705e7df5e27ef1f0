//! NVML: a background sampler thread (power, energy counter, clocks, utilisation, memory,
//! temperature, throttle reasons) written to `nvml.csv` and averaged over time windows, and the
//! static GPU properties that peak derivation needs. Never panics: without a driver the result
//! is "NVML unavailable: <reason>", a value.
use std::fmt::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};

use super::gpu::GpuProps;
use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};
use nvml_wrapper::Nvml;

/// Why NVML could not be used (no driver, no device, ...). Displays as
/// `NVML unavailable: <reason>`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NvmlUnavailable {
    pub reason: String,
}

impl std::fmt::Display for NvmlUnavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NVML unavailable: {}", self.reason)
    }
}

pub use super::nvml_sample::NvmlSample;

/// Means of the samples that fall inside one `[start_ns, end_ns]` window.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct WindowMean {
    pub start_ns: u64,
    pub end_ns: u64,
    /// Samples inside the window; 0 when the window is shorter than the interval.
    pub samples: usize,
    pub power_w: Option<f64>,
    /// Joules in the window: the energy counter interpolated at its edges (`nvml_energy`).
    pub energy_j: Option<f64>,
    pub sm_clock_mhz: Option<f64>,
    pub mem_clock_mhz: Option<f64>,
    pub gpu_util_pct: Option<f64>,
    pub mem_util_pct: Option<f64>,
    pub mem_used_bytes: Option<f64>,
    pub temperature_c: Option<f64>,
    /// Bitwise OR of the throttle reasons seen.
    pub throttle_reasons: Option<u64>,
}

/// What a sampling run produced: rows, or why there are none.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NvmlTrace {
    pub device_index: u32,
    pub interval: Duration,
    pub samples: Vec<NvmlSample>,
    pub unavailable: Option<NvmlUnavailable>,
}

/// Samples one GPU on a background thread until `stop`.
pub struct NvmlSampler {
    device_index: u32,
    interval: Duration,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<Vec<NvmlSample>, NvmlUnavailable>>>,
    unavailable: Option<NvmlUnavailable>,
}

/// The sampler's clock (Unix ns); stage windows must use the same one to align with the samples.
pub fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

fn read_sample(device: &nvml_wrapper::Device<'_>) -> NvmlSample {
    let util = device.utilization_rates().ok();
    NvmlSample {
        unix_ns: unix_ns(),
        power_mw: device.power_usage().ok(),
        total_energy_mj: device.total_energy_consumption().ok(),
        sm_clock_mhz: device.clock_info(Clock::SM).ok(),
        mem_clock_mhz: device.clock_info(Clock::Memory).ok(),
        gpu_util_pct: util.as_ref().map(|u| u.gpu),
        mem_util_pct: util.as_ref().map(|u| u.memory),
        mem_used_bytes: device.memory_info().ok().map(|m| m.used),
        temperature_c: device.temperature(TemperatureSensor::Gpu).ok(),
        throttle_reasons: device.current_throttle_reasons().ok().map(|r| r.bits()),
        power_instant_mw: instant_power_mw(device),
    }
}

/// NVML's instantaneous power field, where the driver and board support it.
fn instant_power_mw(device: &nvml_wrapper::Device<'_>) -> Option<u32> {
    use nvml_wrapper::enums::device::SampleValue;
    use nvml_wrapper::structs::device::FieldId;
    use nvml_wrapper::sys_exports::field_id::NVML_FI_DEV_POWER_INSTANT;
    let values = device
        .field_values_for(&[FieldId(NVML_FI_DEV_POWER_INSTANT)])
        .ok()?;
    match values.into_iter().next()?.ok()?.value.ok()? {
        SampleValue::U32(v) => Some(v),
        SampleValue::U64(v) => u32::try_from(v).ok(),
        SampleValue::I64(v) => u32::try_from(v).ok(),
        SampleValue::F64(v) => (v.is_finite() && v >= 0.0).then_some(v as u32),
    }
}

impl NvmlSampler {
    /// Starts sampling `device_index` every `interval`. Without NVML it returns a sampler that
    /// records nothing and reports why in `stop()`.
    pub fn start(device_index: u32, interval: Duration) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let mut sampler = NvmlSampler {
            device_index,
            interval,
            stop: stop.clone(),
            thread: None,
            unavailable: None,
        };
        let nvml = match Nvml::init() {
            Ok(nvml) => nvml,
            Err(err) => {
                sampler.unavailable = Some(NvmlUnavailable {
                    reason: err.to_string(),
                });
                return sampler;
            }
        };
        let spawned = std::thread::Builder::new()
            .name("nvml-sampler".into())
            .spawn(move || {
                let device = nvml
                    .device_by_index(device_index)
                    .map_err(|err| NvmlUnavailable {
                        reason: format!("device {device_index}: {err}"),
                    })?;
                let mut rows = Vec::new();
                loop {
                    rows.push(read_sample(&device));
                    if stop.load(Ordering::Relaxed) {
                        return Ok(rows);
                    }
                    std::thread::park_timeout(interval);
                    if stop.load(Ordering::Relaxed) {
                        rows.push(read_sample(&device));
                        return Ok(rows);
                    }
                }
            });
        match spawned {
            Ok(handle) => sampler.thread = Some(handle),
            Err(err) => {
                sampler.unavailable = Some(NvmlUnavailable {
                    reason: format!("cannot start sampler thread: {err}"),
                })
            }
        }
        sampler
    }

    /// Stops the thread (it takes one last sample) and returns everything recorded.
    pub fn stop(mut self) -> NvmlTrace {
        let (samples, unavailable) = self.join();
        NvmlTrace {
            device_index: self.device_index,
            interval: self.interval,
            samples,
            unavailable,
        }
    }

    fn join(&mut self) -> (Vec<NvmlSample>, Option<NvmlUnavailable>) {
        self.stop.store(true, Ordering::Relaxed);
        let Some(handle) = self.thread.take() else {
            return (Vec::new(), self.unavailable.take());
        };
        handle.thread().unpark();
        match handle.join() {
            Ok(Ok(rows)) => (rows, None),
            Ok(Err(unavailable)) => (Vec::new(), Some(unavailable)),
            Err(_) => (
                Vec::new(),
                Some(NvmlUnavailable {
                    reason: "sampler thread panicked".to_string(),
                }),
            ),
        }
    }
}

impl Drop for NvmlSampler {
    fn drop(&mut self) {
        let _ = self.join();
    }
}

fn mean_of<T: Copy>(rows: &[&NvmlSample], field: impl Fn(&NvmlSample) -> Option<T>) -> Option<f64>
where
    f64: From<T>,
{
    let values: Vec<f64> = rows
        .iter()
        .filter_map(|r| field(r))
        .map(f64::from)
        .collect();
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

impl NvmlTrace {
    /// A note for the report when NVML was not usable.
    pub fn note(&self) -> Option<String> {
        self.unavailable.as_ref().map(ToString::to_string)
    }

    /// Means over each `(start_ns, end_ns)` window (Unix epoch ns, inclusive).
    pub fn window_means(&self, windows: &[(u64, u64)]) -> Vec<WindowMean> {
        windows
            .iter()
            .map(|&(start_ns, end_ns)| {
                let rows: Vec<&NvmlSample> = self
                    .samples
                    .iter()
                    .filter(|s| start_ns <= s.unix_ns && s.unix_ns <= end_ns)
                    .collect();
                let energy_j = super::nvml_energy::window_energy_j(&self.samples, start_ns, end_ns);
                let throttle = rows
                    .iter()
                    .filter_map(|r| r.throttle_reasons)
                    .reduce(|a, b| a | b);
                WindowMean {
                    start_ns,
                    end_ns,
                    samples: rows.len(),
                    // The instantaneous reading where the board has one, else NVML's power
                    // reading (a moving average of about 1 s on recent GPUs); energy_j is exact.
                    power_w: mean_of(&rows, |r| r.power_instant_mw)
                        .or_else(|| mean_of(&rows, |r| r.power_mw))
                        .map(|mw| mw / 1000.0),
                    energy_j,
                    sm_clock_mhz: mean_of(&rows, |r| r.sm_clock_mhz),
                    mem_clock_mhz: mean_of(&rows, |r| r.mem_clock_mhz),
                    gpu_util_pct: mean_of(&rows, |r| r.gpu_util_pct),
                    mem_util_pct: mean_of(&rows, |r| r.mem_util_pct),
                    mem_used_bytes: mean_of(&rows, |r| r.mem_used_bytes.map(|b| b as f64)),
                    temperature_c: mean_of(&rows, |r| r.temperature_c),
                    throttle_reasons: throttle,
                }
            })
            .collect()
    }

    /// Reads back what [`NvmlTrace::to_csv`] wrote (comment lines skipped).
    pub fn from_csv(text: &str) -> Result<NvmlTrace> {
        fn cell<T: std::str::FromStr>(c: Option<&str>) -> Option<T> {
            c.filter(|c| !c.is_empty()).and_then(|c| c.parse().ok())
        }
        let mut samples = Vec::new();
        for (i, line) in text.lines().enumerate().skip(1) {
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            let c: Vec<&str> = line.split(',').collect();
            let unix_ns = cell(c.first().copied())
                .with_context(|| format!("nvml.csv line {}: no unix_ns", i + 1))?;
            samples.push(NvmlSample {
                unix_ns,
                power_mw: cell(c.get(1).copied()),
                total_energy_mj: cell(c.get(2).copied()),
                sm_clock_mhz: cell(c.get(3).copied()),
                mem_clock_mhz: cell(c.get(4).copied()),
                gpu_util_pct: cell(c.get(5).copied()),
                mem_util_pct: cell(c.get(6).copied()),
                mem_used_bytes: cell(c.get(7).copied()),
                temperature_c: cell(c.get(8).copied()),
                throttle_reasons: c
                    .get(9)
                    .and_then(|h| u64::from_str_radix(h.trim_start_matches("0x"), 16).ok()),
                power_instant_mw: cell(c.get(10).copied()),
            });
        }
        Ok(NvmlTrace {
            device_index: 0,
            interval: Duration::ZERO,
            samples,
            unavailable: None,
        })
    }

    /// CSV text: one row per sample, empty cells for unsupported fields. Without NVML the file
    /// holds the header and a `# NVML unavailable: <reason>` line.
    pub fn to_csv(&self) -> String {
        let mut out = String::from(
            "unix_ns,power_mw,total_energy_mj,sm_clock_mhz,mem_clock_mhz,gpu_util_pct,\
             mem_util_pct,mem_used_bytes,temperature_c,throttle_reasons,power_instant_mw\n",
        );
        if let Some(note) = self.note() {
            let _ = writeln!(out, "# {note}");
        }
        fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
            v.map(|v| v.to_string()).unwrap_or_default()
        }
        for s in &self.samples {
            let _ = writeln!(
                out,
                "{},{},{},{},{},{},{},{},{},{},{}",
                s.unix_ns,
                opt(s.power_mw),
                opt(s.total_energy_mj),
                opt(s.sm_clock_mhz),
                opt(s.mem_clock_mhz),
                opt(s.gpu_util_pct),
                opt(s.mem_util_pct),
                opt(s.mem_used_bytes),
                opt(s.temperature_c),
                opt(s.throttle_reasons.map(|r| format!("{r:#x}"))),
                opt(s.power_instant_mw),
            );
        }
        out
    }

    pub fn write_csv(&self, path: &Path) -> Result<()> {
        std::fs::write(path, self.to_csv()).with_context(|| format!("writing {}", path.display()))
    }
}

/// The NVML index of this process's CUDA device `cuda`: CUDA numbers only the GPUs that
/// `CUDA_VISIBLE_DEVICES` lists (a launcher pins each job to one), NVML every GPU of the machine.
pub fn nvml_index_for_cuda(cuda: u32) -> u32 {
    let Ok(visible) = std::env::var("CUDA_VISIBLE_DEVICES") else {
        return cuda;
    };
    match visible_entry(&visible, cuda) {
        Some(VisibleGpu::Index(i)) => i,
        Some(VisibleGpu::Uuid(uuid)) => Nvml::init()
            .ok()
            .and_then(|n| n.device_by_uuid(uuid.as_str()).and_then(|d| d.index()).ok())
            .unwrap_or(cuda),
        None => cuda,
    }
}

#[derive(Debug, PartialEq)]
enum VisibleGpu {
    Index(u32),
    Uuid(String),
}

/// Entry `cuda` of a `CUDA_VISIBLE_DEVICES` value (an index or a `GPU-…` UUID).
fn visible_entry(visible: &str, cuda: u32) -> Option<VisibleGpu> {
    let entry = visible.split(',').map(str::trim).nth(cuda as usize)?;
    match entry.parse::<u32>() {
        Ok(i) => Some(VisibleGpu::Index(i)),
        Err(_) if entry.starts_with("GPU-") => Some(VisibleGpu::Uuid(entry.to_string())),
        Err(_) => None,
    }
}

/// Queries device `index`'s properties through NVML (no SM count: NVML has none).
pub fn query_gpu(index: u32) -> Result<GpuProps, NvmlUnavailable> {
    let unavailable = |reason: String| NvmlUnavailable { reason };
    let nvml = Nvml::init().map_err(|e| unavailable(e.to_string()))?;
    let device = nvml
        .device_by_index(index)
        .map_err(|e| unavailable(format!("device {index}: {e}")))?;
    Ok(GpuProps {
        index: Some(index),
        name: device
            .name()
            .map_err(|e| unavailable(format!("device {index} name: {e}")))?,
        architecture: device.architecture().ok().map(|a| a.to_string()),
        compute_capability: device
            .cuda_compute_capability()
            .ok()
            .map(|c| (c.major as u32, c.minor as u32)),
        sm_count: None,
        cuda_cores: device.num_cores().ok(),
        max_sm_clock_mhz: device.max_clock_info(Clock::SM).ok().map(f64::from),
        cuda_clock_rate_mhz: None,
        max_mem_clock_mhz: device.max_clock_info(Clock::Memory).ok().map(f64::from),
        memory_bus_width_bits: device.memory_bus_width().ok(),
        memory_total_bytes: device.memory_info().ok().map(|m| m.total),
        power_limit_mw: device.enforced_power_limit().ok(),
        driver_version: nvml.sys_driver_version().ok(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn visible_devices_map_cuda_ordinals_to_machine_indices() {
        assert_eq!(visible_entry("1", 0), Some(VisibleGpu::Index(1)));
        assert_eq!(visible_entry("3, 2", 1), Some(VisibleGpu::Index(2)));
        assert_eq!(
            visible_entry("GPU-1f2e", 0),
            Some(VisibleGpu::Uuid("GPU-1f2e".into()))
        );
        assert_eq!(visible_entry("0", 1), None);
        assert_eq!(visible_entry("MIG-abc", 0), None);
    }

    fn sample(unix_ns: u64, power_mw: u32, energy_mj: u64, sm: u32) -> NvmlSample {
        NvmlSample {
            unix_ns,
            power_mw: Some(power_mw),
            total_energy_mj: Some(energy_mj),
            sm_clock_mhz: Some(sm),
            throttle_reasons: Some(if sm < 1900 { 0x4 } else { 0 }),
            ..NvmlSample::default()
        }
    }

    fn trace() -> NvmlTrace {
        NvmlTrace {
            device_index: 0,
            interval: Duration::from_millis(10),
            samples: vec![
                sample(100_000_000, 300_000, 1_000, 1980),
                sample(110_000_000, 500_000, 5_000, 1980),
                sample(120_000_000, 700_000, 11_000, 1800),
                sample(130_000_000, 100_000, 12_000, 1980),
            ],
            unavailable: None,
        }
    }

    #[test]
    fn window_means_by_hand() {
        let ms = 1_000_000;
        let w = trace().window_means(&[(105 * ms, 125 * ms), (131 * ms, 140 * ms)]);
        // Samples at 110 and 120 ms inside. Energy: the counter interpolated at 105 ms (3000 mJ)
        // and 125 ms (11500 mJ) = 8.5 J (the samples inside alone give 6 J and miss both edges);
        // power (500 + 700)/2 W = 600 W; SM clock (1980 + 1800)/2 = 1890; throttle 0 | 0x4.
        assert_eq!(w[0].samples, 2);
        assert!((w[0].energy_j.unwrap() - 8.5).abs() < 1e-12);
        assert!((w[0].power_w.unwrap() - 600.0).abs() < 1e-9);
        assert!((w[0].sm_clock_mhz.unwrap() - 1890.0).abs() < 1e-12);
        assert_eq!(w[0].throttle_reasons, Some(0x4));
        assert_eq!(w[0].gpu_util_pct, None);
        // A window after the last sample has no values rather than zeros.
        assert_eq!(w[1].samples, 0);
        assert_eq!(w[1].power_w, None);
        assert_eq!(w[1].energy_j, None);
    }

    #[test]
    fn csv_leaves_unsupported_fields_empty() {
        let csv = trace().to_csv();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 5);
        assert_eq!(lines[1], "100000000,300000,1000,1980,,,,,,0x0,");
    }

    #[test]
    fn without_a_driver_nvml_is_a_value_not_an_error() {
        // On a machine with a driver this samples for real; either way nothing panics.
        let trace = NvmlSampler::start(0, Duration::from_millis(5)).stop();
        match &trace.unavailable {
            Some(u) => {
                assert!(trace.samples.is_empty());
                assert!(u.to_string().starts_with("NVML unavailable: "));
                assert!(trace.to_csv().contains("# NVML unavailable: "));
            }
            None => assert!(!trace.samples.is_empty()),
        }
        if let Err(u) = query_gpu(0) {
            assert!(!u.reason.is_empty());
        }
    }
}
