use super::*;
use crate::measure::module_tables::ModuleTimeRow;

fn row(stage: &str, module: &str, index: Option<u32>, ns: u64) -> ModuleTimeRow {
    ModuleTimeRow {
        stage: stage.into(),
        module: module.into(),
        index,
        time_ns: ns,
        kernels: 2,
        replayed_ns: ns,
    }
}

fn work(module: &str, index: Option<u32>, flops: f64, weight_bytes: f64) -> ModuleWork {
    ModuleWork {
        module: module.into(),
        index,
        flops,
        weight_bytes,
        activation_bytes: 0.0,
        kv_bytes: 0.0,
    }
}

fn peaks() -> PeaksInfo {
    PeaksInfo {
        gpu_name: "test".into(),
        precision: "bf16".into(),
        peak_tflops: 1e-6,        // 1 MFLOP/s
        peak_bandwidth_gbs: 1e-3, // 1 MB/s
        source: "test".into(),
        clock_mhz: None,
        at_window_clock: BTreeMap::new(),
    }
}

fn profile() -> ModuleProfile {
    ModuleProfile {
        rows: vec![
            row("decode_step", "layer.attention.qkv", Some(0), 3_000_000),
            row("decode_step", "layer.attention.qkv", Some(1), 3_000_000),
            row("decode_step", "lm_head", None, 1_000_000),
            row("decode_step", OUTSIDE_MODULES, None, 500_000),
            row("prefill", "lm_head", None, 9_000_000),
        ],
        stage_runs: BTreeMap::from([("decode_step".into(), 2), ("prefill".into(), 1)]),
        mapping: Default::default(),
    }
}

#[test]
fn kinds_sum_over_layers_per_run_with_floors_and_catch_alls_last() {
    // Floors: qkv 2 × max(1 B / 1 MB/s, 2 FLOP / 1 MFLOP/s) = 2 × 2 µs; lm_head 1 kB → 1 ms.
    let w = [
        work("layer.attention.qkv", Some(0), 2.0, 1.0),
        work("layer.attention.qkv", Some(1), 2.0, 1.0),
        work("lm_head", None, 0.0, 1000.0),
    ];
    let rows = kind_rows(&profile(), "decode_step", &w, Some(&peaks()));
    let names: Vec<&str> = rows.iter().map(|r| r.module.as_str()).collect();
    // qkv is 3 ms per run over a 4 µs floor, lm_head 0.5 ms under its 1 ms floor.
    assert_eq!(names, ["layer.attention.qkv", "lm_head", OUTSIDE_MODULES]);
    let qkv = &rows[0];
    assert_eq!(qkv.instances, 2);
    assert!((qkv.ms_per_run - 3.0).abs() < 1e-12);
    assert!((qkv.share - 6.0 / 7.5).abs() < 1e-12);
    assert!((qkv.kernels_per_run - 2.0).abs() < 1e-12);
    assert!((qkv.floor_ms.unwrap() - 0.004).abs() < 1e-12);
    assert!((rows[1].floor_ms.unwrap() - 1.0).abs() < 1e-12);
    assert_eq!(rows[2].floor_ms, None);
    let sum: f64 = rows.iter().map(|r| r.share).sum();
    assert!((sum - 1.0).abs() < 1e-12);
    // No floors outside the decode step, nor without peaks.
    let prefill = kind_rows(&profile(), "prefill", &w, Some(&peaks()));
    assert_eq!(prefill[0].floor_ms, None);
    assert!(kind_rows(&profile(), "decode_step", &w, None)
        .iter()
        .all(|r| r.floor_ms.is_none()));
}

#[test]
fn renders_each_stage_decode_step_first_and_nothing_for_old_runs() {
    let mut k = KinetoSummary {
        prefill_ms: 0.0,
        decode_ms: 0.0,
        decode_steps: 2,
        events: 0,
        operators: vec![],
        kernels: vec![],
        kineto_flops: 0,
        analytic_flops: 0.0,
        modules: None,
        decode_step_modules: vec![],
    };
    assert_eq!(render(&k, None), None);
    k.modules = Some(profile());
    let md = render(&k, Some(&peaks())).unwrap();
    let decode = md.find("## decode_step: 2 run(s), 3.750 ms").unwrap();
    let prefill = md.find("## prefill: 1 run(s), 9.000 ms").unwrap();
    assert!(decode < prefill, "{md}");
    assert!(
        md.contains("| layer.attention.qkv | 2 | 3.0000 | 80.0 % | 2.0 |"),
        "{md}"
    );
}
