//! Analytic work per timed request (the model's FLOPs and bytes, averaged) and what fraction of
//! the GPU's peaks it used: MFU per region, MBU of decode. Peaks come from the one resolver
//! (`measure::peaks::resolve`), overridden by `hardware.peak_*`.
use super::timings::E2E;
use crate::dtype::Dtype;
use crate::measure::gpu::GpuProps;
use crate::measure::peaks;
use crate::region::{DECODE_STEP, PREFILL};
use crate::report::measurements::TimedRequest;
use crate::report::metrics::{FlopsInfo, PeaksInfo, StageStats, Utilisation, WindowPeak};
use crate::spec::HardwareSpec;
use std::collections::BTreeMap;

/// The region the schema's `vision_gflop` reports: a vision model's input encoder.
const VISION: &str = "vision";

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// Mean analytic FLOPs per region over the timed requests.
pub fn region_flops_mean(requests: &[TimedRequest]) -> BTreeMap<String, f64> {
    let mut by: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for t in requests {
        for (k, f) in &t.work.region_flops {
            by.entry(k.clone()).or_default().push(*f);
        }
    }
    by.into_iter().map(|(k, v)| (k, mean(&v))).collect()
}

/// Analytic work per request, averaged over the timed requests (decode steps over all steps).
pub fn flops_info(requests: &[TimedRequest]) -> FlopsInfo {
    let regions = region_flops_mean(requests);
    let steps: Vec<f64> = requests
        .iter()
        .flat_map(|t| t.work.step_flops.clone())
        .collect();
    let bytes: Vec<f64> = requests
        .iter()
        .flat_map(|t| t.work.step_bytes.clone())
        .collect();
    let steps_per_request = mean(
        &requests
            .iter()
            .map(|t| t.decode_steps as f64)
            .collect::<Vec<_>>(),
    );
    let prefill = regions.get(PREFILL.nvtx_name()).copied().unwrap_or(0.0);
    FlopsInfo {
        vision_gflop: regions.get(VISION).copied().unwrap_or(0.0) / 1e9,
        prefill_gflop: prefill / 1e9,
        decode_step_gflop_mean: mean(&steps) / 1e9,
        decode_step_bytes_mean: mean(&bytes),
        e2e_gflop: (prefill + mean(&steps) * steps_per_request) / 1e9,
        kineto_matmul_ratio: None,
    }
}

/// Peaks for MFU/MBU at the run's precision, or why there are none: the datasheet dense peak at
/// the rated boost clock (the MFU convention), from `measure::peaks::resolve`. The peak at a
/// stage window's measured clock is `Peaks::at_sm_clock(window mean SM MHz)` on the same peaks.
pub fn peaks_info(
    cuda_device: Option<usize>,
    gpu: &Result<GpuProps, String>,
    dtype: Dtype,
    hw: &HardwareSpec,
    window_sm_clock_mhz: &BTreeMap<String, f64>,
) -> Result<PeaksInfo, String> {
    if cuda_device.is_none() {
        return Err("no GPU: MFU/MBU need a GPU's peak FLOP/s and bandwidth".into());
    }
    // The worker records no CUDA clock-rate attribute yet: boards outside the SKU table get no
    // derived peaks (NVML's maximum SM clock is not a rated clock).
    let cuda_clock = gpu.as_ref().ok().and_then(|g| g.cuda_clock_rate_mhz);
    let resolved = peaks::resolve(gpu.clone(), cuda_clock, "NVML and the CUDA runtime");
    let gpu_name = match gpu {
        Ok(g) => g.name.clone(),
        Err(_) => "unknown (NVML unavailable)".into(),
    };
    let (flops, bw, source) = match &resolved {
        Ok((p, source)) => (
            Some(p.dense_flops_per_s(dtype) / 1e12),
            Some(p.dram_bytes_per_s / 1e9),
            source.clone(),
        ),
        Err(why) => (None, None, format!("not derived: {why}")),
    };
    let overridden = hw.peak_tflops.is_some() || hw.peak_bandwidth_gbs.is_some();
    let source = match (overridden, &resolved) {
        (true, Err(_)) => "hardware.peak_tflops / hardware.peak_bandwidth_gbs overrides".into(),
        (true, Ok(_)) => format!("{source}; overridden by hardware.peak_*"),
        (false, _) => source,
    };
    // The clock of the figure: tensor math runs at the tensor clock, fp32 at the SM clock.
    let clock_mhz = resolved.as_ref().ok().map(|(p, _)| match dtype {
        Dtype::F32 => p.sm_clock_mhz,
        Dtype::Bf16 | Dtype::F16 => p.tensor_clock_mhz,
    });
    match (hw.peak_tflops.or(flops), hw.peak_bandwidth_gbs.or(bw)) {
        (Some(t), Some(b)) => Ok(PeaksInfo {
            gpu_name,
            precision: dtype.name().into(),
            peak_tflops: t,
            peak_bandwidth_gbs: b,
            source,
            clock_mhz,
            // Dense rates scale linearly with the clock (same FLOP per clock per SM).
            at_window_clock: clock_mhz
                .filter(|c| *c > 0.0)
                .map(|rated| {
                    window_sm_clock_mhz
                        .iter()
                        .map(|(w, mhz)| {
                            let peak = WindowPeak {
                                sm_clock_mhz: *mhz,
                                peak_tflops: t * mhz / rated,
                            };
                            (w.clone(), peak)
                        })
                        .collect()
                })
                .unwrap_or_default(),
        }),
        _ => Err(format!(
            "{source}; set hardware.peak_tflops and hardware.peak_bandwidth_gbs"
        )),
    }
}

/// The peaks of `ranks` GPUs working on one model (`runtime.tensor_parallel`): each rank's
/// time is the whole model's step, so MFU/MBU are against the ranks' summed peaks.
pub fn across_ranks(p: PeaksInfo, ranks: u32) -> PeaksInfo {
    if ranks <= 1 {
        return p;
    }
    let n = f64::from(ranks);
    PeaksInfo {
        peak_tflops: p.peak_tflops * n,
        peak_bandwidth_gbs: p.peak_bandwidth_gbs * n,
        source: format!("{}; × {ranks} GPUs (runtime.tensor_parallel)", p.source),
        at_window_clock: p
            .at_window_clock
            .into_iter()
            .map(|(w, at)| {
                let at = WindowPeak {
                    peak_tflops: at.peak_tflops * n,
                    ..at
                };
                (w, at)
            })
            .collect(),
        ..p
    }
}

/// MFU per region with analytic FLOPs (and per decode step and end to end), MBU of decode.
pub fn utilisation(
    requests: &[TimedRequest],
    flops: &FlopsInfo,
    stages: &BTreeMap<String, StageStats>,
    peaks: &Result<PeaksInfo, String>,
) -> Utilisation {
    let p = match peaks {
        Ok(p) => p,
        Err(why) => {
            return Utilisation {
                unavailable: Some(why.clone()),
                ..Utilisation::default()
            }
        }
    };
    let peak = p.peak_tflops * 1e12;
    let bandwidth = p.peak_bandwidth_gbs * 1e9;
    let mut work: Vec<(String, f64)> = region_flops_mean(requests).into_iter().collect();
    work.push((
        DECODE_STEP.nvtx_name().into(),
        flops.decode_step_gflop_mean * 1e9,
    ));
    work.push((E2E.into(), flops.e2e_gflop * 1e9));
    let mut u = Utilisation::default();
    for (region, f) in &work {
        if region == E2E {
            continue;
        }
        // Compute floor; a decode step also reads its weights and KV cache: the roofline's larger.
        let mut floor_s = f / peak;
        if region == DECODE_STEP.nvtx_name() {
            floor_s = floor_s.max(flops.decode_step_bytes_mean / bandwidth);
        }
        u.floor_ms.insert(region.clone(), floor_s * 1e3);
    }
    for (region, f) in work {
        if let Some(s) = stages.get(&region) {
            if s.mean_ms > 0.0 {
                u.mfu.insert(region.clone(), f / (s.mean_ms / 1e3) / peak);
            }
            if s.p50_ms > 0.0 {
                u.mfu_p50.insert(region, f / (s.p50_ms / 1e3) / peak);
            }
        }
    }
    // Prefill and each decode step against the peak at their window's clock.
    for (region, window, f) in [
        (
            PREFILL.nvtx_name(),
            PREFILL.nvtx_name(),
            flops.prefill_gflop,
        ),
        (
            DECODE_STEP.nvtx_name(),
            crate::region::DECODE.nvtx_name(),
            flops.decode_step_gflop_mean,
        ),
    ] {
        let (Some(s), Some(w)) = (stages.get(region), p.at_window_clock.get(window)) else {
            continue;
        };
        if s.mean_ms > 0.0 && w.peak_tflops > 0.0 {
            u.mfu_at_window_clock.insert(
                region.into(),
                f * 1e9 / (s.mean_ms / 1e3) / (w.peak_tflops * 1e12),
            );
        }
    }
    if let Some(s) = stages.get(DECODE_STEP.nvtx_name()) {
        let bytes = flops.decode_step_bytes_mean;
        u.mbu_decode = (s.mean_ms > 0.0).then(|| bytes / (s.mean_ms / 1e3) / bandwidth);
        u.mbu_decode_p50 = (s.p50_ms > 0.0).then(|| bytes / (s.p50_ms / 1e3) / bandwidth);
    }
    u
}

#[cfg(test)]
mod tests {
    use super::super::timings::tests::request;
    use super::*;
    use crate::measure::peaks::props_for_name;
    use crate::model::BatchWork;

    fn worked(steps: usize, prefill: f64, vision: f64, step: f64, bytes: f64) -> TimedRequest {
        let mut t = request(
            0,
            0,
            &[("prefill", 10.0), ("vision", 5.0), (E2E, 30.0)],
            &vec![2.0; steps],
        );
        t.work = BatchWork {
            region_flops: [("prefill".into(), prefill), ("vision".into(), vision)].into(),
            step_flops: vec![step; steps],
            step_bytes: vec![bytes; steps],
        };
        t
    }

    #[test]
    fn flops_average_over_requests_and_steps() {
        let reqs = [worked(2, 4e9, 1e9, 1e9, 2e9), worked(4, 8e9, 3e9, 2e9, 4e9)];
        let f = flops_info(&reqs);
        assert_eq!(f.prefill_gflop, 6.0);
        assert_eq!(f.vision_gflop, 2.0);
        // Steps: two at 1 GFLOP, four at 2 GFLOP → mean 5/3 GFLOP; 3 steps per request.
        assert!((f.decode_step_gflop_mean - 10.0 / 6.0).abs() < 1e-12);
        assert!((f.e2e_gflop - (6.0 + 10.0 / 6.0 * 3.0)).abs() < 1e-12);
        assert!((f.decode_step_bytes_mean - 20e9 / 6.0).abs() < 1e-3);
    }

    #[test]
    fn mfu_divides_work_by_time_and_peak() {
        let reqs = [worked(2, 4e9, 1e9, 1e9, 2e9)];
        let stages = super::super::timings::region_stats(&reqs);
        let f = flops_info(&reqs);
        let p = Ok(PeaksInfo {
            gpu_name: "test".into(),
            precision: "bf16".into(),
            peak_tflops: 1.0,
            peak_bandwidth_gbs: 1000.0,
            source: "test".into(),
            clock_mhz: Some(2000.0),
            at_window_clock: [(
                "prefill".to_string(),
                WindowPeak {
                    sm_clock_mhz: 1000.0,
                    peak_tflops: 0.5,
                },
            )]
            .into(),
        });
        let u = utilisation(&reqs, &f, &stages, &p);
        // At half the clock the peak halves, so prefill's MFU at the window clock doubles.
        assert!((u.mfu_at_window_clock["prefill"] - 0.8).abs() < 1e-12);
        assert!(!u.mfu_at_window_clock.contains_key("decode_step"));
        // prefill: 4 GFLOP in 10 ms = 400 GFLOP/s of 1 TFLOP/s.
        assert!((u.mfu["prefill"] - 0.4).abs() < 1e-12);
        assert!((u.mfu["vision"] - 0.2).abs() < 1e-12);
        // decode step: 1 GFLOP in 2 ms = 0.5; 2 GB in 2 ms = 1000 GB/s = MBU 1.
        assert!((u.mfu["decode_step"] - 0.5).abs() < 1e-12);
        assert!((u.mbu_decode.unwrap() - 1.0).abs() < 1e-12);
        // Floors at the peaks: prefill 4 GFLOP at 1 TFLOP/s = 4 ms, vision 1 GFLOP 1 ms; a decode step is bound by its
        // 2 GB at 1000 GB/s (2 ms), not its 1 GFLOP (1 ms); no floor for end to end.
        assert!((u.floor_ms["prefill"] - 4.0).abs() < 1e-12);
        assert!((u.floor_ms["vision"] - 1.0).abs() < 1e-12);
        assert!((u.floor_ms["decode_step"] - 2.0).abs() < 1e-12);
        assert!(!u.floor_ms.contains_key("e2e"));
        // One request: the median is the mean.
        assert_eq!(u.mfu_p50, u.mfu);
        assert_eq!(u.mbu_decode_p50, u.mbu_decode);
        let none = utilisation(&reqs, &f, &stages, &Err("no GPU".into()));
        assert!(none.mfu.is_empty() && none.unavailable.as_deref() == Some("no GPU"));
    }

    #[test]
    fn peaks_come_from_the_gpu_or_the_overrides() {
        let hw = HardwareSpec {
            peak_tflops: None,
            peak_bandwidth_gbs: None,
        };
        let h100 = Ok(props_for_name("H100 SXM").unwrap());
        let clocks: BTreeMap<String, f64> = [("decode".to_string(), 1500.0)].into();
        let p = peaks_info(Some(0), &h100, Dtype::Bf16, &hw, &clocks).unwrap();
        // NVIDIA's H100 SXM datasheet: 989.4 dense bf16 TFLOP/s at the 1830 MHz tensor clock.
        assert!(
            (p.peak_tflops - 989.4).abs() / 989.4 < 0.02,
            "{}",
            p.peak_tflops
        );
        assert_eq!(p.precision, "bf16");
        let rated = p.clock_mhz.unwrap();
        let at = &p.at_window_clock["decode"];
        assert!((at.peak_tflops - p.peak_tflops * 1500.0 / rated).abs() < 1e-9);
        assert!(peaks_info(None, &h100, Dtype::Bf16, &hw, &clocks).is_err());
        let no_nvml = Err("NVML unavailable".to_string());
        assert!(peaks_info(Some(0), &no_nvml, Dtype::Bf16, &hw, &clocks).is_err());
        let both = HardwareSpec {
            peak_tflops: Some(100.0),
            peak_bandwidth_gbs: Some(1000.0),
        };
        let p = peaks_info(Some(0), &no_nvml, Dtype::F32, &both, &clocks).unwrap();
        // Two tensor-parallel ranks: twice the peaks, said in the source.
        let two = across_ranks(p.clone(), 2);
        assert_eq!(
            (two.peak_tflops, two.peak_bandwidth_gbs),
            (2.0 * p.peak_tflops, 2.0 * p.peak_bandwidth_gbs)
        );
        assert!(two.source.ends_with("× 2 GPUs (runtime.tensor_parallel)"));
        assert_eq!(across_ranks(p.clone(), 1).peak_tflops, p.peak_tflops);
        assert_eq!((p.peak_tflops, p.peak_bandwidth_gbs), (100.0, 1000.0));
        assert!(p.source.contains("overrides"));
    }
}
