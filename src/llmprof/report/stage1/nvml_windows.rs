//! NVML telemetry over the prefill and decode windows of the timed requests: time-weighted means
//! of power, clocks, utilisation, memory and temperature, the throttle reasons seen, and energy.
use crate::measure::nvml::{NvmlTrace, WindowMean};
use crate::region::{DECODE, PREFILL};
use crate::report::measurements::TimedRequest;
use crate::report::metrics::{NvmlInfo, NvmlWindow};
use std::collections::BTreeMap;

fn unavailable(note: String) -> NvmlInfo {
    NvmlInfo {
        available: false,
        note: Some(note),
        samples: 0,
        windows: BTreeMap::new(),
        energy_j_total: None,
        energy_j_per_output_token: None,
        energy_j_per_decode_token: None,
    }
}

/// Means over the windows named `name`, each window weighted by its duration.
fn window(trace: &NvmlTrace, requests: &[TimedRequest], name: &str) -> NvmlWindow {
    let spans: Vec<(u64, u64)> = requests
        .iter()
        .flat_map(|t| t.windows.iter().filter(|w| w.0 == name).map(|w| (w.1, w.2)))
        .collect();
    let means = trace.window_means(&spans);
    let weight: Vec<f64> = spans.iter().map(|(a, b)| (b - a) as f64).collect();
    let avg = |f: &dyn Fn(&WindowMean) -> Option<f64>| -> Option<f64> {
        let (mut acc, mut wsum) = (0.0, 0.0);
        for (m, wt) in means.iter().zip(&weight) {
            if let Some(v) = f(m) {
                acc += v * wt;
                wsum += wt;
            }
        }
        (wsum > 0.0).then(|| acc / wsum)
    };
    // Every window counts: one that cannot be measured makes the sum unknown, never smaller.
    let energy: Option<Vec<f64>> = means.iter().map(|m| m.energy_j).collect();
    NvmlWindow {
        seconds: weight.iter().sum::<f64>() / 1e9,
        power_w: avg(&|m| m.power_w),
        sm_clock_mhz: avg(&|m| m.sm_clock_mhz),
        mem_clock_mhz: avg(&|m| m.mem_clock_mhz),
        gpu_util_pct: avg(&|m| m.gpu_util_pct),
        mem_util_pct: avg(&|m| m.mem_util_pct),
        mem_used_gib: avg(&|m| m.mem_used_bytes).map(|b| b / (1u64 << 30) as f64),
        temperature_c: avg(&|m| m.temperature_c),
        energy_j: energy.filter(|e| !e.is_empty()).map(|e| e.iter().sum()),
        throttle_reasons: means
            .iter()
            .filter_map(|m| m.throttle_reasons)
            .reduce(|a, b| a | b),
    }
}

/// The NVML section of metrics.json.
pub fn nvml_info(trace: Option<&NvmlTrace>, requests: &[TimedRequest]) -> NvmlInfo {
    let Some(trace) = trace else {
        return unavailable("disabled (pipeline.nvml.enable=false)".into());
    };
    if let Some(u) = &trace.unavailable {
        return unavailable(u.reason.clone());
    }
    let windows: BTreeMap<String, NvmlWindow> = [PREFILL, DECODE]
        .iter()
        .map(|r| {
            (
                r.nvtx_name().to_string(),
                window(trace, requests, r.nvtx_name()),
            )
        })
        .collect();
    let energy = |name: &str| windows.get(name).and_then(|w| w.energy_j);
    let energy_total = energy(PREFILL.nvtx_name())
        .zip(energy(DECODE.nvtx_name()))
        .map(|(p, d)| p + d);
    let output_tokens: u64 = requests.iter().map(|t| t.output_tokens as u64).sum();
    // Decode produces every token but each row's first (which prefill produces).
    let decode_tokens: u64 = requests
        .iter()
        .map(|t| (t.decode_steps * t.rows.len().max(1)) as u64)
        .sum();
    NvmlInfo {
        available: true,
        note: None,
        samples: trace.samples.len(),
        energy_j_per_decode_token: energy(DECODE.nvtx_name())
            .filter(|_| decode_tokens > 0)
            .map(|e| e / decode_tokens as f64),
        windows,
        energy_j_total: energy_total,
        energy_j_per_output_token: energy_total
            .filter(|_| output_tokens > 0)
            .map(|e| e / output_tokens as f64),
    }
}

#[cfg(test)]
mod tests {
    use super::super::timings::tests::request;
    use super::*;
    use crate::measure::nvml::NvmlSample;
    use std::time::Duration;

    fn sample(ms: u64, power_w: u32, energy_j: u64) -> NvmlSample {
        NvmlSample {
            unix_ns: ms * 1_000_000,
            power_mw: Some(power_w * 1000),
            total_energy_mj: Some(energy_j * 1000),
            ..NvmlSample::default()
        }
    }

    #[test]
    fn windows_average_power_and_sum_energy() {
        let trace = NvmlTrace {
            device_index: 0,
            interval: Duration::from_millis(10),
            samples: vec![
                sample(0, 100, 0),
                sample(10, 100, 1),
                sample(20, 300, 4),
                sample(30, 300, 7),
            ],
            unavailable: None,
        };
        let mut t = request(0, 0, &[], &[1.0]);
        t.windows = vec![
            ("prefill".into(), 0, 10_000_000),
            ("decode".into(), 20_000_000, 30_000_000),
        ];
        let info = nvml_info(Some(&trace), &[t]);
        assert!(info.available);
        assert_eq!(info.windows["prefill"].power_w, Some(100.0));
        assert_eq!(info.windows["decode"].power_w, Some(300.0));
        assert_eq!(info.windows["prefill"].energy_j, Some(1.0));
        assert_eq!(info.windows["decode"].energy_j, Some(3.0));
        assert_eq!(info.energy_j_total, Some(4.0));
        assert_eq!(info.energy_j_per_output_token, Some(2.0));
        // One decode step of one row: the decode window's 3 J.
        assert_eq!(info.energy_j_per_decode_token, Some(3.0));
    }

    #[test]
    fn a_window_outside_the_samples_makes_energy_unknown_not_smaller() {
        let trace = NvmlTrace {
            device_index: 0,
            interval: Duration::from_millis(10),
            samples: vec![sample(0, 100, 0), sample(10, 100, 1)],
            unavailable: None,
        };
        let mut a = request(0, 0, &[], &[1.0]);
        a.windows = vec![("decode".into(), 0, 10_000_000)];
        let mut b = request(0, 1, &[], &[1.0]);
        b.windows = vec![("decode".into(), 20_000_000, 30_000_000)];
        let info = nvml_info(Some(&trace), &[a, b]);
        assert_eq!(info.windows["decode"].energy_j, None);
        assert_eq!(info.energy_j_per_decode_token, None);
    }

    #[test]
    fn missing_nvml_says_why() {
        assert!(nvml_info(None, &[]).note.unwrap().contains("disabled"));
    }
}
