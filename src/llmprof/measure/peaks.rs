//! Peak dense FLOP/s per precision and peak DRAM bandwidth of one GPU: the per-architecture
//! FLOP-per-clock-per-SM table (`rates`) times the SM count times a clock. The one resolver
//! (`resolve`) serves stage 1's MFU, stage 2's roofline and `analyze ncu`.
//!
//! Clocks. The peaks `resolve` returns are the datasheet figures, at the rated boost clock of the
//! board's row in the per-SKU table (`sku`): the MFU denominator of NVIDIA's tables and of the
//! PaLM paper's MFU convention. A board not in the table falls back to the CUDA clock-rate
//! attribute when the caller has it; NVML's maximum SM clock is never used (1980 MHz on H100/H200
//! gives 1070.5 TFLOP/s BF16 where the datasheet says 989.4; on GeForce boards it is 20–25 %
//! above the rated boost). [`Peaks::at_sm_clock`] and [`Peaks::at_dram_clock`] give the same GPU
//! at a measured clock (an NVML stage-window mean, ncu's per-kernel clocks).

pub mod rates;
pub mod sku;
#[cfg(test)]
mod tests;

use serde::Serialize;

pub use super::gpu::GpuProps;
pub use rates::{is_geforce, Arch};
pub use sku::{props_for_name, Sku};

/// Why peaks could not be derived.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    #[error("no peak table for compute capability {major}.{minor} ({name}); pass peak_tflops/peak_bandwidth_gbs overrides")]
    UnknownArchitecture {
        name: String,
        major: u32,
        minor: u32,
    },
    #[error("GPU properties of {name} are incomplete: {what} is missing or zero")]
    Incomplete { name: String, what: &'static str },
    #[error("no rated boost clock for {name}: the board is not in the SKU table (src/llmprof/measure/peaks/sku.rs) and no CUDA clock-rate attribute was given; NVML's maximum SM clock is not a rated clock. Add a row, or pass hardware.peak_tflops and hardware.peak_bandwidth_gbs")]
    NoRatedClock { name: String },
}

/// Where a clock behind a peak figure came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClockSource {
    /// The board's row in the per-SKU table (NVIDIA's datasheet clocks and bandwidth).
    SkuTable,
    /// The CUDA clock-rate attribute (`cudaDevAttrClockRate`, ncu `device__attribute_clock_rate`).
    CudaClockRate,
    /// The device's maximum memory clock (NVML, ncu `device__attribute_max_mem_frequency_khz`).
    MaxMemoryClock,
    /// A clock the caller measured and passed to [`Peaks::at_sm_clock`] / [`Peaks::at_dram_clock`].
    Measured,
}

/// Peak rates of one GPU, all dense (no 2:4 sparsity), in FLOP/s and bytes/s.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Peaks {
    pub gpu_name: String,
    pub arch: Arch,
    pub sm_count: u32,
    /// The per-SKU table row the clocks and bandwidth come from, when the board has one.
    pub sku: Option<String>,
    /// SM clock of the FP32 (non-tensor) figure.
    pub sm_clock_mhz: f64,
    /// SM clock of the tensor figures: `sm_clock_mhz`, except at the rated clocks of boards whose
    /// datasheet tensor figures use a lower clock (H100/H200 SXM: 1830 MHz vs 1980 MHz).
    pub tensor_clock_mhz: f64,
    pub sm_clock_source: ClockSource,
    pub fp32_flops_per_s: f64,
    pub tf32_flops_per_s: Option<f64>,
    /// Tensor cores, FP16 inputs, FP32 accumulate.
    pub fp16_flops_per_s: f64,
    /// Tensor cores, BF16 inputs, FP32 accumulate.
    pub bf16_flops_per_s: Option<f64>,
    /// Tensor cores, FP8 inputs, FP32 accumulate.
    pub fp8_flops_per_s: Option<f64>,
    pub dram_bytes_per_s: f64,
    /// The DRAM clock the bandwidth corresponds to: bandwidth = clock × 2 × bus bytes.
    pub dram_clock_mhz: f64,
    pub memory_bus_width_bits: u32,
    pub dram_clock_source: ClockSource,
    /// True when the board is a GeForce, whose FP32-accumulate tensor rate is half the full rate.
    pub geforce_half_rate: bool,
    /// The NVIDIA document the per-SM rates come from.
    pub source: String,
}

/// Peak DRAM bandwidth: memory clock × 2 (double data rate) × bus width in bytes.
pub fn dram_bytes_per_s(mem_clock_mhz: f64, bus_width_bits: u32) -> f64 {
    mem_clock_mhz * 1e6 * 2.0 * f64::from(bus_width_bits) / 8.0
}

fn positive(v: f64) -> Option<f64> {
    (v.is_finite() && v > 0.0).then_some(v)
}

/// The datasheet peaks of `props` (see [`derive_with_clock_rate`]) without a CUDA clock rate.
pub fn derive(props: &GpuProps) -> Result<Peaks, Error> {
    derive_with_clock_rate(props, None)
}

/// Derives the peaks at the rated clocks: the SKU row of `props.name` when there is one, else
/// `cuda_clock_rate_mhz` (the CUDA clock-rate attribute) for the SM clock and the device's
/// maximum memory clock for DRAM; an error otherwise, or for an architecture not in the table.
/// The SM count, compute capability and bus width of `props` win over the row's.
pub fn derive_with_clock_rate(
    props: &GpuProps,
    cuda_clock_rate_mhz: Option<f64>,
) -> Result<Peaks, Error> {
    let incomplete = |what: &'static str| Error::Incomplete {
        name: props.name.clone(),
        what,
    };
    let row = sku::lookup(&props.name);
    let (cc_major, cc_minor) = props
        .compute_capability
        .or(row.map(|s| s.compute_capability))
        .ok_or_else(|| incomplete("compute_capability"))?;
    let arch = Arch::from_cc(cc_major, cc_minor).ok_or_else(|| Error::UnknownArchitecture {
        name: props.name.clone(),
        major: cc_major,
        minor: cc_minor,
    })?;
    let sm_count = props
        .sm_count
        .filter(|n| *n > 0)
        .or(row.map(|s| s.sm_count))
        .ok_or_else(|| incomplete("sm_count"))?;
    let bus_bits = props
        .memory_bus_width_bits
        .filter(|b| *b > 0)
        .or(row.map(|s| s.memory_bus_width_bits))
        .ok_or_else(|| incomplete("memory_bus_width_bits"))?;
    let (sm_clock_mhz, tensor_clock_mhz, sm_clock_source) = match row {
        Some(s) => (s.boost_clock_mhz, s.tensor_clock_mhz, ClockSource::SkuTable),
        None => {
            let c = cuda_clock_rate_mhz
                .and_then(positive)
                .ok_or_else(|| Error::NoRatedClock {
                    name: props.name.clone(),
                })?;
            (c, c, ClockSource::CudaClockRate)
        }
    };
    let bus_bytes_x2 = 2.0 * f64::from(bus_bits) / 8.0;
    let (dram, dram_clock_mhz, dram_clock_source) = match row {
        Some(s) => (
            s.dram_bytes_per_s,
            s.dram_bytes_per_s / bus_bytes_x2 / 1e6,
            ClockSource::SkuTable,
        ),
        None => {
            let mem = props
                .max_mem_clock_mhz
                .and_then(positive)
                .ok_or_else(|| incomplete("max_mem_clock_mhz"))?;
            (
                dram_bytes_per_s(mem, bus_bits),
                mem,
                ClockSource::MaxMemoryClock,
            )
        }
    };
    let t = arch.per_sm();
    let half = t.geforce_half_rate && is_geforce(&props.name);
    let scale = if half { 0.5 } else { 1.0 };
    let sms = f64::from(sm_count);
    let fp32_per_s = sms * sm_clock_mhz * 1e6;
    let tensor_per_s = sms * tensor_clock_mhz * 1e6 * scale;
    Ok(Peaks {
        gpu_name: props.name.clone(),
        arch,
        sm_count,
        sku: row.map(|s| s.name.to_string()),
        sm_clock_mhz,
        tensor_clock_mhz,
        sm_clock_source,
        fp32_flops_per_s: t.fp32 * fp32_per_s,
        tf32_flops_per_s: t.tensor_tf32.map(|r| r * tensor_per_s),
        fp16_flops_per_s: t.tensor_fp16 * tensor_per_s,
        bf16_flops_per_s: t.tensor_bf16.map(|r| r * tensor_per_s),
        fp8_flops_per_s: t.tensor_fp8.map(|r| r * tensor_per_s),
        dram_bytes_per_s: dram,
        dram_clock_mhz,
        memory_bus_width_bits: bus_bits,
        dram_clock_source,
        geforce_half_rate: half,
        source: t.source.to_string(),
    })
}

/// The one peaks resolver (stage 1, stage 2, `analyze ncu`): the datasheet peaks of the GPU
/// `props` describes, at its rated clocks, with a sentence saying where they came from (`origin`
/// names the source of `props`: "NVML and the CUDA runtime", "the device attributes of …"), or
/// why there are none. `cuda_clock_rate_mhz` is the CUDA clock-rate attribute, the fallback for a
/// board without a SKU row.
pub fn resolve(
    props: Result<GpuProps, String>,
    cuda_clock_rate_mhz: Option<f64>,
    origin: &str,
) -> Result<(Peaks, String), String> {
    let props = props?;
    let peaks = derive_with_clock_rate(&props, cuda_clock_rate_mhz).map_err(|e| e.to_string())?;
    let clocks = match sku::lookup(&props.name) {
        Some(s) => format!(
            "datasheet peaks of the {} at its rated boost clock {:.0} MHz (tensor figures at {:.0} MHz) and {:.2} TB/s, from the SKU table ({}); {} SMs from {origin}",
            s.name,
            peaks.sm_clock_mhz,
            peaks.tensor_clock_mhz,
            peaks.dram_bytes_per_s / 1e12,
            s.source,
            peaks.sm_count
        ),
        None => format!(
            "derived from {origin}: {} SMs at the CUDA clock-rate attribute {:.0} MHz (board not in the SKU table), memory clock {:.0} MHz × {} bits",
            peaks.sm_count, peaks.sm_clock_mhz, peaks.dram_clock_mhz, peaks.memory_bus_width_bits
        ),
    };
    let source = format!("{clocks}; per-SM rates: {}", peaks.source);
    Ok((peaks, source))
}

impl Peaks {
    /// Dense FLOP/s for tensors of `dtype` (bf16 falls back to the fp16 rate on parts without a
    /// separate bf16 figure).
    pub fn dense_flops_per_s(&self, dtype: crate::dtype::Dtype) -> f64 {
        use crate::dtype::Dtype;
        match dtype {
            Dtype::Bf16 => self.bf16_flops_per_s.unwrap_or(self.fp16_flops_per_s),
            Dtype::F16 => self.fp16_flops_per_s,
            Dtype::F32 => self.fp32_flops_per_s,
        }
    }

    /// The same GPU with its SMs at `mhz`: every FLOP/s figure scaled from the clock it was at
    /// (FP32 from `sm_clock_mhz`, tensor from `tensor_clock_mhz`) to `mhz`; DRAM unchanged.
    /// Pure. `None` unless `mhz` is finite and positive.
    ///
    /// The report builder's "peak at the clock the GPU actually ran" for a stage window is
    /// `peaks.at_sm_clock(window_mean_sm_mhz)?.dense_flops_per_s(dtype)`, with `peaks` from
    /// [`resolve`] and the window's mean NVML SM clock.
    pub fn at_sm_clock(&self, mhz: f64) -> Option<Peaks> {
        let mhz = positive(mhz)?;
        let s = mhz / self.sm_clock_mhz;
        let t = mhz / self.tensor_clock_mhz;
        Some(Peaks {
            sm_clock_mhz: mhz,
            tensor_clock_mhz: mhz,
            sm_clock_source: ClockSource::Measured,
            fp32_flops_per_s: self.fp32_flops_per_s * s,
            tf32_flops_per_s: self.tf32_flops_per_s.map(|v| v * t),
            fp16_flops_per_s: self.fp16_flops_per_s * t,
            bf16_flops_per_s: self.bf16_flops_per_s.map(|v| v * t),
            fp8_flops_per_s: self.fp8_flops_per_s.map(|v| v * t),
            ..self.clone()
        })
    }

    /// The same GPU with its DRAM at `mhz` (the clock ncu's `dram__cycles_elapsed.avg.per_second`
    /// measures): bandwidth = `mhz` × 2 × bus bytes; FLOP/s unchanged. `None` unless `mhz` is
    /// finite and positive.
    pub fn at_dram_clock(&self, mhz: f64) -> Option<Peaks> {
        let mhz = positive(mhz)?;
        Some(Peaks {
            dram_bytes_per_s: dram_bytes_per_s(mhz, self.memory_bus_width_bits),
            dram_clock_mhz: mhz,
            dram_clock_source: ClockSource::Measured,
            ..self.clone()
        })
    }

    /// The same GPU at whichever measured clocks are given (a `None` or invalid clock keeps the
    /// rated one).
    pub fn at_clocks(&self, sm_mhz: Option<f64>, dram_mhz: Option<f64>) -> Peaks {
        let sm = sm_mhz.and_then(|m| self.at_sm_clock(m));
        let p = sm.as_ref().unwrap_or(self);
        dram_mhz
            .and_then(|m| p.at_dram_clock(m))
            .unwrap_or_else(|| p.clone())
    }
}
