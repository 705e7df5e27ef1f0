//! One NVML reading: the sampler writes it, nvml.csv holds it, the window maths reads it.

/// One NVML reading. A field is `None` when the device does not support it or the call failed.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NvmlSample {
    /// Unix epoch nanoseconds (the same clock as Kineto timestamps).
    pub unix_ns: u64,
    pub power_mw: Option<u32>,
    /// Energy since the driver was loaded, millijoules (Volta and newer).
    pub total_energy_mj: Option<u64>,
    pub sm_clock_mhz: Option<u32>,
    pub mem_clock_mhz: Option<u32>,
    /// Percent of the last sample period with a kernel running.
    pub gpu_util_pct: Option<u32>,
    /// Percent of the last sample period with device memory being read or written.
    pub mem_util_pct: Option<u32>,
    pub mem_used_bytes: Option<u64>,
    pub temperature_c: Option<u32>,
    /// NVML clock-throttle reason bits (`nvmlClocksThrottleReasons`), 0 = not throttled.
    pub throttle_reasons: Option<u64>,
    /// Instantaneous power (`NVML_FI_DEV_POWER_INSTANT`): `power_mw` is a moving average of
    /// about a second on recent GPUs, too slow for windows of tens of milliseconds.
    pub power_instant_mw: Option<u32>,
}
