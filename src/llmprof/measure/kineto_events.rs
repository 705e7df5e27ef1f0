//! Kineto's events as plain records: host-side `OpRecord`s (ops, user scopes, runtime calls) and
//! device-side `KernelRecord`s (kernels, memcpy, memset), read from libtorch's profiler (in the
//! worker) or back from a Chrome trace, so tables can be tested on recorded data. Pure.
use anyhow::{bail, Context, Result};
use serde_json::Value;

/// libkineto::ActivityType values (torch/include/kineto/ActivityType.h, torch 2.11).
pub mod activity {
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

impl ProfileEvents {
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
