//! Roofline analysis: classify kernels against a GPU's roofs, summarise by GPU time, and render
//! `roofline.md` tables and SVG/PNG plots.

pub mod classify;
pub mod markdown;
pub mod plot;
pub mod precision;

pub use classify::{classify, Bound, BoundClass, KernelPoint, Roofs, Thresholds};

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
    /// `None` when no GPU peaks were known; `peaks_note` says why.
    pub peaks: Option<Peaks>,
    pub peaks_note: String,
    pub rows: Vec<Row>,
    /// GPU-time-weighted share of each class, over all rows.
    pub summary: Vec<ClassShare>,
}

impl RooflineReport {
    /// Classifies `points` against `peaks` (if any) and summarises them.
    pub fn build(
        points: Vec<KernelPoint>,
        peaks: Option<Peaks>,
        peaks_note: String,
        t: &Thresholds,
    ) -> Self {
        let roofs = peaks.as_ref().map(Roofs::from_peaks);
        let rows: Vec<Row> = points
            .into_iter()
            .map(|point| Row {
                bound: classify(&point, roofs.as_ref(), t),
                point,
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

    #[test]
    fn summary_weights_by_gpu_time() {
        let p = |name: &str, ai: f64, w: f64| KernelPoint {
            name: name.into(),
            stage: Some("decode".into()),
            weight_ns: w,
            duration_ns: Some(w),
            flops: Some(ai * 1e6),
            intensity: Some(ai),
            precision: None,
            sm_pct: Some(80.0),
            dram_pct: Some(80.0),
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
    }
}
