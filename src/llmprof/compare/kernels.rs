//! The kernel-level diff: kernels.json of both runs summed by short name (over stages and template
//! variants that shorten alike, `measure::kernel_names::short_name`), the kernels whose total time
//! changed most first. Both tables come from one Kineto pass each, so totals compare when the two
//! runs profiled the same work (same inputs and `pipeline.torch_profiler.max_decode_steps`).
use crate::measure::kernel_names::short_name;
use crate::measure::op_tables::KernelRow;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Serialize)]
pub struct KernelChange {
    pub name: String,
    pub a_ms: f64,
    pub b_ms: f64,
    pub a_calls: u64,
    pub b_calls: u64,
    pub delta_ms: f64,
    /// `None` when the kernel is absent in A.
    pub delta_pct: Option<f64>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct KernelDiff {
    /// Total kernel time of each side, ms.
    pub a_total_ms: f64,
    pub b_total_ms: f64,
    pub rows: Vec<KernelChange>,
    /// Why there is no table (a run without kernels.json, or one with no kernels).
    pub note: Option<String>,
}

/// Short name → (total ms, calls).
fn by_short_name(rows: &[KernelRow]) -> BTreeMap<String, (f64, u64)> {
    let mut out: BTreeMap<String, (f64, u64)> = BTreeMap::new();
    for r in rows {
        let e = out.entry(short_name(&r.name)).or_default();
        e.0 += r.total_ns as f64 / 1e6;
        e.1 += r.calls;
    }
    out
}

/// The `top` kernels with the largest absolute change of total time.
pub fn diff(a: Option<&[KernelRow]>, b: Option<&[KernelRow]>, top: usize) -> KernelDiff {
    let (a, b) =
        match (a, b) {
            (Some(a), Some(b)) if !a.is_empty() || !b.is_empty() => (a, b),
            (None, _) | (_, None) => {
                return KernelDiff {
                    note: Some("no kernel diff: a run has no kernels.json".into()),
                    ..KernelDiff::default()
                }
            }
            _ => return KernelDiff {
                note: Some(
                    "no kernel diff: neither run recorded GPU kernels (CPU runs, or Kineto off)"
                        .into(),
                ),
                ..KernelDiff::default()
            },
        };
    let (ka, kb) = (by_short_name(a), by_short_name(b));
    let mut names: Vec<&String> = ka.keys().chain(kb.keys()).collect();
    names.sort();
    names.dedup();
    let mut rows: Vec<KernelChange> = names
        .into_iter()
        .map(|n| {
            let (a_ms, a_calls) = ka.get(n).copied().unwrap_or_default();
            let (b_ms, b_calls) = kb.get(n).copied().unwrap_or_default();
            KernelChange {
                name: n.clone(),
                a_ms,
                b_ms,
                a_calls,
                b_calls,
                delta_ms: b_ms - a_ms,
                delta_pct: (a_ms > 0.0).then(|| (b_ms / a_ms - 1.0) * 100.0),
            }
        })
        .collect();
    rows.sort_by(|x, y| {
        y.delta_ms
            .abs()
            .total_cmp(&x.delta_ms.abs())
            .then_with(|| x.name.cmp(&y.name))
    });
    rows.truncate(top);
    KernelDiff {
        a_total_ms: ka.values().map(|v| v.0).sum(),
        b_total_ms: kb.values().map(|v| v.0).sum(),
        rows,
        note: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(stage: &str, name: &str, calls: u64, total_ns: u64) -> KernelRow {
        KernelRow {
            stage: Some(stage.into()),
            name: name.into(),
            calls,
            total_ns,
            mean_ns: total_ns as f64 / calls as f64,
            share_of_gpu: 0.0,
            modules: Vec::new(),
        }
    }

    const GEMM: &str = "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8::Params)";

    #[test]
    fn kernels_are_summed_by_short_name_and_ranked_by_change() {
        let a = [
            k("prefill", GEMM, 10, 5_000_000),
            k("decode", GEMM, 100, 20_000_000),
            k("decode", "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)", 50, 1_000_000),
            k("prefill", "nvjet_tst_128x64_64x8_1x1_h_bz_TNT", 4, 3_000_000),
        ];
        let b = [
            k("prefill", GEMM, 10, 15_000_000),
            k("decode", GEMM, 100, 20_000_000),
            k("decode", "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)", 50, 1_100_000),
            k("prefill", "flash_fwd_kernel", 2, 2_000_000),
        ];
        let d = diff(Some(&a), Some(&b), 3);
        assert_eq!(d.rows.len(), 3);
        // GEMM: 25 → 35 ms over both stages; nvjet gone (−3 ms); flash new (+2 ms).
        assert_eq!(d.rows[0].name, short_name(GEMM));
        assert!((d.rows[0].delta_ms - 10.0).abs() < 1e-9);
        assert_eq!((d.rows[0].a_calls, d.rows[0].b_calls), (110, 110));
        assert!((d.rows[0].delta_pct.unwrap() - 40.0).abs() < 1e-9);
        assert!(d.rows[1].name.starts_with("nvjet") && d.rows[1].b_ms == 0.0);
        assert_eq!(d.rows[2].name, "flash_fwd_kernel");
        assert_eq!(d.rows[2].delta_pct, None);
        assert!((d.a_total_ms - 29.0).abs() < 1e-9 && (d.b_total_ms - 38.1).abs() < 1e-9);
    }

    #[test]
    fn missing_or_empty_tables_give_a_note() {
        assert!(diff(None, Some(&[]), 5)
            .note
            .unwrap()
            .contains("no kernels.json"));
        assert!(diff(Some(&[]), Some(&[]), 5)
            .note
            .unwrap()
            .contains("neither run"));
    }
}
