//! Roofline analysis: classify kernels against a GPU's roofs, summarise by GPU time, and render
//! `roofline.md` tables and SVG/PNG plots. Each kernel's roofs are the GPU's peaks at the SM and
//! DRAM clocks the profiler measured over that kernel (rated clocks where none were measured).

pub mod classify;
pub mod markdown;
pub mod module_flops;
pub mod plot;
pub mod precision;
pub mod useful;

pub use classify::{classify, Bound, BoundClass, KernelPoint, Roofs, Thresholds};
pub use module_flops::KernelOps;
pub use useful::UsefulFlops;

use serde::Serialize;

use crate::measure::peaks::Peaks;

/// One classified kernel.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    pub point: KernelPoint,
    pub bound: Bound,
}

/// GPU time spent in one bound class.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassShare {
    pub class: BoundClass,
    pub kernels: usize,
    pub time_ns: f64,
    pub share_pct: f64,
}

/// A roofline over a set of kernels.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RooflineReport {
    /// The GPU's datasheet peaks at its rated clocks; `None` when no GPU peaks were known
    /// (`peaks_note` says why).
    pub peaks: Option<Peaks>,
    pub peaks_note: String,
    pub rows: Vec<Row>,
    /// GPU-time-weighted share of each class, over all rows.
    pub summary: Vec<ClassShare>,
}

impl RooflineReport {
    /// Classifies `points` against `peaks` (if any) at each point's measured clocks and
    /// summarises them.
    pub fn build(
        points: Vec<KernelPoint>,
        peaks: Option<Peaks>,
        peaks_note: String,
        t: &Thresholds,
    ) -> Self {
        let rows: Vec<Row> = points
            .into_iter()
            .map(|point| {
                let roofs = peaks.as_ref().map(|p| {
                    Roofs::from_peaks(&p.at_clocks(point.sm_clock_mhz, point.dram_clock_mhz))
                });
                Row {
                    bound: classify(&point, roofs.as_ref(), t),
                    point,
                }
            })
            .collect();
        let summary = summarise(&rows);
        RooflineReport {
            peaks,
            peaks_note,
            rows,
            summary,
        }
    }

    /// Roofs to draw under `rows`: the peaks at the median SM and DRAM clocks measured over
    /// those kernels (the rated clocks where none were measured).
    pub fn plot_roofs(&self, rows: &[&Row]) -> Option<Roofs> {
        let peaks = self.peaks.as_ref()?;
        let sm = median(rows.iter().filter_map(|r| r.point.sm_clock_mhz).collect());
        let dram = median(rows.iter().filter_map(|r| r.point.dram_clock_mhz).collect());
        Some(Roofs::from_peaks(&peaks.at_clocks(sm, dram)))
    }

    /// Stage names in first-seen order (rows without a stage are left out).
    pub fn stages(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for r in &self.rows {
            if let Some(s) = &r.point.stage {
                if !out.contains(s) {
                    out.push(s.clone());
                }
            }
        }
        out
    }
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// GPU-time-weighted share per class (weights are `KernelPoint::weight_ns`).
pub fn summarise(rows: &[Row]) -> Vec<ClassShare> {
    let total: f64 = rows.iter().map(|r| r.point.weight_ns).sum();
    BoundClass::ALL
        .iter()
        .filter_map(|&class| {
            let of: Vec<&Row> = rows.iter().filter(|r| r.bound.class == class).collect();
            if of.is_empty() {
                return None;
            }
            let time_ns: f64 = of.iter().map(|r| r.point.weight_ns).sum();
            let share_pct = if total > 0.0 {
                100.0 * time_ns / total
            } else {
                0.0
            };
            Some(ClassShare {
                class,
                kernels: of.len(),
                time_ns,
                share_pct,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::peaks::ClockSource;

    #[test]
    fn summary_weights_by_gpu_time() {
        let p = |name: &str, ai: f64, w: f64| KernelPoint {
            name: name.into(),
            stage: Some("decode".into()),
            weight_ns: w,
            duration_ns: Some(w),
            executed_flops: Some(ai * 1e6),
            executed_intensity: Some(ai),
            dram_bytes: Some(1e6),
            useful_flops: None,
            useful_op: None,
            modules: Vec::new(),
            useful_why_not: None,
            precision: None,
            sm_pct: Some(80.0),
            dram_pct: Some(80.0),
            sm_clock_mhz: Some(1400.0),
            dram_clock_mhz: None,
            why_unknown: None,
        };
        let peaks = crate::measure::peaks::derive(
            &crate::measure::peaks::props_for_name("H200").expect("known"),
        )
        .expect("peaks");
        let r = RooflineReport::build(
            vec![p("a", 1.0, 300.0), p("b", 1.0, 100.0), p("c", 1e4, 100.0)],
            Some(peaks),
            String::new(),
            &Thresholds::default(),
        );
        assert_eq!(r.summary.len(), 2);
        assert_eq!(r.summary[0].class, BoundClass::MemoryBound);
        assert_eq!(r.summary[0].kernels, 2);
        assert!((r.summary[0].share_pct - 80.0).abs() < 1e-9);
        assert_eq!(r.summary[1].class, BoundClass::ComputeBound);
        assert_eq!(r.stages(), vec!["decode".to_string()]);
        // Roofs at the kernels' measured SM clock, the rated DRAM clock.
        assert_eq!(r.rows[0].bound.ridge_sm_clock_mhz, Some(1400.0));
        let rows: Vec<&Row> = r.rows.iter().collect();
        let roofs = r.plot_roofs(&rows).expect("peaks");
        assert_eq!(roofs.sm_clock_mhz, 1400.0);
        assert_eq!(roofs.dram_clock_source, ClockSource::SkuTable);
        assert_eq!(median(vec![3.0, 1.0, 2.0, 10.0]), Some(2.5));
    }
}
