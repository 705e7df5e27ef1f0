//! report.md's "Where the decode step goes": the modules furthest above their analytic floors
//! (metrics.json `modules`), and how the step's time adds up; modules.md has every module.
use std::fmt::Write as _;

use crate::region::DECODE_STEP;
use crate::report::metrics_modules::ModulesInfo;

/// Modules listed in report.md (modules.md lists them all).
const SHOWN: usize = 8;

pub(super) fn render(s: &mut String, m: &ModulesInfo) {
    let Some(st) = m.stages.get(DECODE_STEP.nvtx_name()) else {
        return;
    };
    let _ = writeln!(
        s,
        "\n## Where the decode step goes (Kineto, profiled pass)\n"
    );
    let floors = st.kinds.iter().any(|k| k.floor_ms.is_some());
    let _ = writeln!(
        s,
        "{} per step by module, summed over layers{}. Every module: modules.md.\n",
        m.time_words().0,
        if floors {
            ", furthest above its analytic floor first"
        } else {
            ""
        }
    );
    s.push_str(
        "| module | ms per step | share | floor ms | × floor |\n|---|---:|---:|---:|---:|\n",
    );
    for k in st.kinds.iter().take(SHOWN) {
        let floor = k.floor_ms.map_or("—".into(), |f| format!("{f:.4}"));
        let times = k.times_floor.map_or("—".into(), |x| format!("{x:.1}"));
        let _ = writeln!(
            s,
            "| {} | {:.4} | {:.1} % | {floor} | {times} |",
            k.module,
            k.ms_per_run,
            100.0 * k.share
        );
    }
    if st.span_ms > 0.0 {
        let _ = write!(
            s,
            "\nPer step {}: work {:.3} − overlap {:.3} + idle between kernels {:.3} = {:.3} ms",
            m.time_words().1,
            st.work_ms,
            st.overlap_ms,
            st.idle_inside_ms,
            st.span_ms
        );
        match (st.timed_ms, st.residual_pct) {
            (Some(t), Some(r)) => {
                let _ = writeln!(s, " (timed mean {t:.3} ms: {r:+.1} %).");
            }
            _ => s.push_str(".\n"),
        }
    }
    if let Some(line) = crate::report::modules_md::kineto_flops_line(st) {
        let _ = writeln!(s, "\n{line}");
    }
    let g = &m.mapping;
    if g.replays > 0 && (g.kernels_unmatched > 0 || g.graphs_without_record > 0) {
        let _ = writeln!(
            s,
            "\n⚠ {} replayed kernels ({:.1} % of replayed time) have no module: modules.md says where matching stopped.",
            g.kernels_unmatched,
            100.0 * m.unmatched_share
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::metrics_modules::{ModuleKind, StageModules};

    fn kind(module: &str, ms: f64, floor: Option<f64>) -> ModuleKind {
        ModuleKind {
            module: module.into(),
            instances: 32,
            ms_per_run: ms,
            share: ms / 10.0,
            kernels_per_run: 32.0,
            floor_ms: floor,
            times_floor: floor.map(|f| ms / f),
            above_floor_ms: floor.map(|f| ms - f),
            kineto_flops_ratio: None,
            kineto_flops_na: None,
            top_kernels: vec![],
        }
    }

    #[test]
    fn lists_the_first_modules_the_accounting_and_unmatched_work() {
        let mut m = ModulesInfo {
            source: Default::default(),
            mapping: Default::default(),
            unmatched_share: 0.0,
            stages: Default::default(),
        };
        let mut s = String::new();
        render(&mut s, &m);
        assert!(s.is_empty(), "no decode step, no section");
        let kinds: Vec<ModuleKind> = (0..10)
            .map(|i| kind(&format!("m{i}"), 1.0 - 0.05 * i as f64, Some(0.1)))
            .collect();
        m.stages.insert(
            "decode_step".into(),
            StageModules {
                runs: 3,
                work_ms: 9.0,
                overlap_ms: 0.0,
                early_start_ms: 0.0,
                idle_inside_ms: 0.5,
                span_ms: 9.5,
                gap_ms: 0.1,
                gap_work_ms: 0.05,
                timed_ms: Some(9.6),
                timed_idle_ms: Some(1.1),
                residual_pct: Some(-100.0 * 0.1 / 9.6),
                within_2pct: Some(true),
                kinds,
                layers: vec![],
            },
        );
        m.mapping.replays = 3;
        m.mapping.kernels_unmatched = 7;
        m.unmatched_share = 0.02;
        render(&mut s, &m);
        assert!(
            s.contains("| m0 | 1.0000 | 10.0 % | 0.1000 | 10.0 |"),
            "{s}"
        );
        assert!(s.contains("| m7 |") && !s.contains("| m8 |"), "{s}");
        assert!(
            s.contains("= 9.500 ms (timed mean 9.600 ms: -1.0 %)."),
            "{s}"
        );
        assert!(
            s.contains("⚠ 7 replayed kernels (2.0 % of replayed time)"),
            "{s}"
        );
    }
}
