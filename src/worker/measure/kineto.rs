//! Kineto (libtorch profiler) session through the shim: start/stop as RAII, the shim's events
//! turned into `llmprof::measure::kineto_events` records, plus the Chrome trace JSON.
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use llmprof::measure::kineto_events::{
    activity, DeviceKind, HostKind, KernelRecord, OpRecord, ProfileEvents,
};

use crate::ffi;

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
            add_distributed_info(path)
                .with_context(|| format!("adding distributedInfo to {}", path.display()))?;
        }
        Ok(Profile {
            events: events_from_raw(&events),
            trace_path: trace_path.map(Path::to_path_buf),
            trace_start_ns: raw.trace_start_ns(),
        })
    }
}

/// Puts `"distributedInfo": {"backend": "none", "rank": 0, "world_size": 1}` at the top of a
/// trace Kineto wrote (it adds one only under torch.distributed), so that analysers of PyTorch
/// traces read the rank (HTA looks for `"rank": N`). A trace that has one is left alone.
pub fn add_distributed_info(path: &Path) -> Result<()> {
    // libkineto reports no error when it cannot write (a full disk): there is nothing to amend,
    // and the run's next write meets the cause itself.
    if !path.exists() {
        tracing::warn!(path = %path.display(), "Kineto wrote no trace file (is the disk full?)");
        return Ok(());
    }
    let text = std::fs::read_to_string(path)?;
    if text.contains("\"distributedInfo\"") {
        return Ok(());
    }
    let Some(open) = text.find('{') else {
        anyhow::bail!("not a JSON object");
    };
    let info = r#""distributedInfo": {"backend": "none", "rank": 0, "world_size": 1},"#;
    let mut out = String::with_capacity(text.len() + info.len() + 8);
    out.push_str(&text[..=open]);
    out.push_str("\n  ");
    out.push_str(info);
    out.push_str(&text[open + 1..]);
    std::fs::write(path, out)?;
    Ok(())
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

/// Sorts shim events into host and device records; other activities (instant events,
/// overhead, ...) are dropped.
pub fn events_from_raw(events: &[ffi::RawEvent]) -> ProfileEvents {
    let mut out = ProfileEvents::default();
    for e in events {
        let host = |kind| OpRecord {
            name: e.name.as_str().into(),
            kind,
            thread_id: e.start_thread_id,
            start_ns: e.start_ns,
            duration_ns: e.duration_ns,
            correlation_id: e.correlation_id,
            linked_correlation_id: e.linked_correlation_id,
            flops: e.flops,
            input_shapes: e.input_shapes.as_str().into(),
        };
        let device = |kind| KernelRecord {
            name: e.name.as_str().into(),
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
