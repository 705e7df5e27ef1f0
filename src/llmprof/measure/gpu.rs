//! One GPU's static properties, from whichever source knows them: NVML plus the CUDA runtime
//! (stage 1), ncu's `device__attribute_*` columns or a known board name (stage 2, `analyze ncu`).
//! Peaks are derived from this one type (`peaks::resolve`); the rated boost clock comes from the
//! per-SKU table by `name` (`peaks::sku`), never from `max_sm_clock_mhz`.
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuProps {
    pub name: String,
    /// Device index (NVML), when known.
    pub index: Option<u32>,
    /// e.g. "Hopper" (NVML's DeviceArchitecture).
    pub architecture: Option<String>,
    /// (major, minor).
    pub compute_capability: Option<(u32, u32)>,
    /// NVML has no SM count: the worker fills it from the CUDA runtime.
    pub sm_count: Option<u32>,
    pub cuda_cores: Option<u32>,
    /// NVML's maximum SM clock: reported, not a rated clock (GeForce boards list 20–25 % above
    /// their boost clock), so peaks never use it.
    pub max_sm_clock_mhz: Option<f64>,
    /// The CUDA runtime's clock-rate attribute (`cudaDevAttrClockRate`), the rated-clock
    /// fallback for boards outside the per-SKU table.
    pub cuda_clock_rate_mhz: Option<f64>,
    pub max_mem_clock_mhz: Option<f64>,
    pub memory_bus_width_bits: Option<u32>,
    pub memory_total_bytes: Option<u64>,
    pub power_limit_mw: Option<u32>,
    pub driver_version: Option<String>,
}
