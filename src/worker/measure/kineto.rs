//! Kineto (libtorch profiler) session through the shim: start/stop as RAII, events converted to
//! host-side `OpRecord`s and device-side `KernelRecord`s, plus the Chrome trace JSON. Also reads
//! such a trace back (`ProfileEvents::from_chrome_trace`), so tables can be tested on recorded data.
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde_json::Value;

use crate::ffi;

/// libkineto::ActivityType values (torch/include/kineto/ActivityType.h, torch 2.11).
mod activity {
    pub const CPU_OP: u8 = 0;
    pub const USER_ANNOTATION: u8 = 1;
    pub const GPU_USER_ANNOTATION: u8 = 2;
    pub const GPU_MEMCPY: u8 = 3;
    pub const GPU_MEMSET: u8 = 4;
    pub const CONCURRENT_KERNEL: u8 = 5;
    pub const CUDA_RUNTIME: u8 = 7;
    pub const CUDA_DRIVER: u8 = 8;
}

/// What a host-side event is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum HostKind {
    /// An ATen operator (`cpu_op`).
    Op,
    /// A user scope (`at::RecordFunction` USER_SCOPE, `user_annotation`): a stage.
    UserScope,
    /// A CUDA runtime call (`cudaLaunchKernel`, ...).
    Runtime,
    /// A CUDA driver call (`cuLaunchKernelEx`, ...).
    Driver,
}

/// What a device-side event is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum DeviceKind {
    Kernel,
    Memcpy,
    Memset,
    /// The GPU-timeline image of a user scope (`gpu_user_annotation`); not GPU work.
    UserScope,
}

/// A host-side event (operator, user scope, runtime/driver call).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct OpRecord {
    pub name: String,
    pub kind: HostKind,
    pub thread_id: u64,
    /// Unix epoch nanoseconds.
    pub start_ns: u64,
    pub duration_ns: u64,
    /// Ops and scopes: their own id (Kineto's "External id"). Runtime/driver calls: the CUPTI
    /// correlation id that their GPU activity carries.
    pub correlation_id: u64,
    /// Runtime/driver calls: the id of the op that made them (0 when none).
    pub linked_correlation_id: u64,
    /// FLOPs as counted by the profiler (`with_flops`); 0 when not counted.
    pub flops: u64,
    /// e.g. `[[8192, 8192], [8192, 8192]]`; empty when shapes were not recorded.
    pub input_shapes: String,
}

impl OpRecord {
    pub fn end_ns(&self) -> u64 {
        self.start_ns + self.duration_ns
    }
}

/// A device-side event (kernel, memcpy, memset, GPU image of a user scope).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct KernelRecord {
    pub name: String,
    pub kind: DeviceKind,
    pub device_index: i32,
    pub stream: i64,
    /// Unix epoch nanoseconds (GPU clock mapped to the host clock by Kineto).
    pub start_ns: u64,
    pub duration_ns: u64,
    /// CUPTI correlation id: equals the `correlation_id` of the runtime call that launched it.
    pub correlation_id: u64,
    /// The op that launched it (its `OpRecord::correlation_id`); 0 when none.
    pub op_correlation_id: u64,
}

impl KernelRecord {
    pub fn end_ns(&self) -> u64 {
        self.start_ns + self.duration_ns
    }

    /// True for GPU work (kernels, copies, memsets), false for annotations.
    pub fn is_gpu_work(&self) -> bool {
        self.kind != DeviceKind::UserScope
    }
}

/// All events of one profile, split by side.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct ProfileEvents {
    pub ops: Vec<OpRecord>,
    pub kernels: Vec<KernelRecord>,
}

/// What the profiler records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProfilerConfig {
    pub record_shapes: bool,
    pub profile_memory: bool,
    pub with_stack: bool,
    pub with_flops: bool,
    pub activity_cpu: bool,
    pub activity_cuda: bool,
}

impl ProfilerConfig {
    /// Shapes and FLOPs on, memory and stacks off; CUDA activity only when a GPU is visible.
    pub fn detect() -> Self {
        ProfilerConfig {
            record_shapes: true,
            profile_memory: false,
            with_stack: false,
            with_flops: true,
            activity_cpu: true,
            activity_cuda: ffi::cuda_device_count() > 0,
        }
    }

    fn to_raw(self) -> ffi::RawProfilerConfig {
        ffi::RawProfilerConfig {
            record_shapes: self.record_shapes.into(),
            profile_memory: self.profile_memory.into(),
            with_stack: self.with_stack.into(),
            with_flops: self.with_flops.into(),
            with_modules: 0,
            activity_cpu: self.activity_cpu.into(),
            activity_cuda: self.activity_cuda.into(),
        }
    }
}

/// A running Kineto profiler. `finish` stops it and returns the events; dropping it without
/// `finish` stops it and discards them (so an early `?` never leaves the profiler on).
pub struct KinetoSession {
    running: bool,
    _not_send: std::marker::PhantomData<*const ()>,
}

/// The result of a session.
#[derive(Debug, Clone)]
pub struct Profile {
    pub events: ProfileEvents,
    /// Where the Chrome/Perfetto trace was written, when asked.
    pub trace_path: Option<PathBuf>,
    pub trace_start_ns: u64,
}

impl KinetoSession {
    pub fn start(config: ProfilerConfig) -> Result<Self> {
        ffi::profiler_start(&config.to_raw()).context("starting the Kineto profiler")?;
        Ok(KinetoSession {
            running: true,
            _not_send: std::marker::PhantomData,
        })
    }

    /// A named user scope (a stage) on the CPU and GPU timelines; ends on drop.
    pub fn scope(&self, name: &str) -> Result<ffi::UserScope> {
        ffi::UserScope::begin(name).with_context(|| format!("opening user scope {name:?}"))
    }

    /// Stops the profiler; writes the trace to `trace_path` when given.
    pub fn finish(mut self, trace_path: Option<&Path>) -> Result<Profile> {
        self.running = false;
        let mut raw = ffi::profiler_stop().context("stopping the Kineto profiler")?;
        let events = raw.events().context("reading Kineto events")?;
        if let Some(path) = trace_path {
            raw.save(path)
                .with_context(|| format!("writing Kineto trace {}", path.display()))?;
        }
        Ok(Profile {
            events: ProfileEvents::from_raw(&events),
            trace_path: trace_path.map(Path::to_path_buf),
            trace_start_ns: raw.trace_start_ns(),
        })
    }
}

impl Drop for KinetoSession {
    fn drop(&mut self) {
        if self.running {
            if let Err(err) = ffi::profiler_stop() {
                tracing::warn!(%err, "stopping an abandoned Kineto session");
            }
        }
    }
}

impl ProfileEvents {
    /// Sorts shim events into host and device records; other activities (instant events,
    /// overhead, ...) are dropped.
    pub fn from_raw(events: &[ffi::RawEvent]) -> Self {
        let mut out = ProfileEvents::default();
        for e in events {
            let host = |kind| OpRecord {
                name: e.name.clone(),
                kind,
                thread_id: e.start_thread_id,
                start_ns: e.start_ns,
                duration_ns: e.duration_ns,
                correlation_id: e.correlation_id,
                linked_correlation_id: e.linked_correlation_id,
                flops: e.flops,
                input_shapes: e.input_shapes.clone(),
            };
            let device = |kind| KernelRecord {
                name: e.name.clone(),
                kind,
                device_index: e.device_index,
                stream: e.device_resource_id,
                start_ns: e.start_ns,
                duration_ns: e.duration_ns,
                correlation_id: e.correlation_id,
                op_correlation_id: e.linked_correlation_id,
            };
            match e.activity_type {
                activity::CPU_OP => out.ops.push(host(HostKind::Op)),
                activity::USER_ANNOTATION => out.ops.push(host(HostKind::UserScope)),
                activity::CUDA_RUNTIME => out.ops.push(host(HostKind::Runtime)),
                activity::CUDA_DRIVER => out.ops.push(host(HostKind::Driver)),
                activity::CONCURRENT_KERNEL => out.kernels.push(device(DeviceKind::Kernel)),
                activity::GPU_MEMCPY => out.kernels.push(device(DeviceKind::Memcpy)),
                activity::GPU_MEMSET => out.kernels.push(device(DeviceKind::Memset)),
                activity::GPU_USER_ANNOTATION => out.kernels.push(device(DeviceKind::UserScope)),
                _ => {}
            }
        }
        out
    }

    /// Reads a Chrome/Perfetto trace written by `ProfilerResult::save` (complete `"ph": "X"`
    /// events of categories cpu_op, user_annotation, cuda_runtime, cuda_driver, kernel,
    /// gpu_memcpy, gpu_memset, gpu_user_annotation; everything else is skipped).
    pub fn from_chrome_trace(json: &str) -> Result<Self> {
        let root: Value = serde_json::from_str(json).context("trace is not JSON")?;
        let Some(events) = root.get("traceEvents").and_then(Value::as_array) else {
            bail!("trace has no traceEvents array");
        };
        let mut out = ProfileEvents::default();
        for (i, ev) in events.iter().enumerate() {
            if ev.get("ph").and_then(Value::as_str) != Some("X") {
                continue;
            }
            let cat = ev.get("cat").and_then(Value::as_str).unwrap_or("");
            let host_kind = match cat {
                "cpu_op" => Some(HostKind::Op),
                "user_annotation" => Some(HostKind::UserScope),
                "cuda_runtime" => Some(HostKind::Runtime),
                "cuda_driver" => Some(HostKind::Driver),
                _ => None,
            };
            let device_kind = match cat {
                "kernel" => Some(DeviceKind::Kernel),
                "gpu_memcpy" => Some(DeviceKind::Memcpy),
                "gpu_memset" => Some(DeviceKind::Memset),
                "gpu_user_annotation" => Some(DeviceKind::UserScope),
                _ => None,
            };
            if host_kind.is_none() && device_kind.is_none() {
                continue;
            }
            let ctx = || format!("traceEvents[{i}] ({cat})");
            let name = ev
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let start_ns = json_us_to_ns(ev.get("ts")).with_context(|| format!("{}: ts", ctx()))?;
            let duration_ns =
                json_us_to_ns(ev.get("dur")).with_context(|| format!("{}: dur", ctx()))?;
            let args = ev.get("args");
            let arg_u64 = |key: &str| args.and_then(|a| a.get(key)).and_then(Value::as_u64);
            let external_id = arg_u64("External id").unwrap_or(0);
            let correlation = arg_u64("correlation").unwrap_or(0);
            let tid = ev.get("tid").and_then(Value::as_u64).unwrap_or(0);
            if let Some(kind) = host_kind {
                let (correlation_id, linked) = match kind {
                    HostKind::Op | HostKind::UserScope => (external_id, 0),
                    HostKind::Runtime | HostKind::Driver => (correlation, external_id),
                };
                out.ops.push(OpRecord {
                    name,
                    kind,
                    thread_id: tid,
                    start_ns,
                    duration_ns,
                    correlation_id,
                    linked_correlation_id: linked,
                    flops: arg_u64("flops").unwrap_or(0),
                    input_shapes: args
                        .and_then(|a| a.get("Input Dims"))
                        .map(|v| v.to_string().replace(',', ", "))
                        .unwrap_or_default(),
                });
            } else if let Some(kind) = device_kind {
                out.kernels.push(KernelRecord {
                    name,
                    kind,
                    device_index: args
                        .and_then(|a| a.get("device"))
                        .and_then(Value::as_i64)
                        .or_else(|| ev.get("pid").and_then(Value::as_i64))
                        .and_then(|d| i32::try_from(d).ok())
                        .unwrap_or(0),
                    stream: args
                        .and_then(|a| a.get("stream"))
                        .and_then(Value::as_i64)
                        .unwrap_or(tid as i64),
                    start_ns,
                    duration_ns,
                    correlation_id: correlation,
                    op_correlation_id: external_id,
                });
            }
        }
        Ok(out)
    }
}

/// Converts a trace timestamp in microseconds (3 decimals = ns) to integer nanoseconds without
/// going through a float multiply, so recorded values convert exactly.
fn json_us_to_ns(value: Option<&Value>) -> Result<u64> {
    let Some(value) = value else { bail!("missing") };
    if let Some(us) = value.as_u64() {
        return Ok(us * 1000);
    }
    let Some(us) = value.as_f64() else {
        bail!("not a number: {value}")
    };
    if !us.is_finite() || us < 0.0 {
        bail!("not a non-negative time: {value}");
    }
    // Display prints the shortest decimal that round-trips, i.e. the digits in the file.
    let text = format!("{us}");
    let (int_part, frac_part) = text.split_once('.').unwrap_or((&text, ""));
    let mut frac: String = frac_part.chars().take(3).collect();
    while frac.len() < 3 {
        frac.push('0');
    }
    let int: u64 = int_part.parse().with_context(|| format!("time {text}"))?;
    let frac: u64 = frac.parse().with_context(|| format!("time {text}"))?;
    Ok(int * 1000 + frac)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn microseconds_convert_exactly() {
        let v: Value = serde_json::from_str("4459499379117.141").unwrap();
        assert_eq!(json_us_to_ns(Some(&v)).unwrap(), 4_459_499_379_117_141);
        let v: Value = serde_json::from_str("0.768").unwrap();
        assert_eq!(json_us_to_ns(Some(&v)).unwrap(), 768);
        let v: Value = serde_json::from_str("12").unwrap();
        assert_eq!(json_us_to_ns(Some(&v)).unwrap(), 12_000);
        let v: Value = serde_json::from_str("1.5").unwrap();
        assert_eq!(json_us_to_ns(Some(&v)).unwrap(), 1_500);
    }
}
