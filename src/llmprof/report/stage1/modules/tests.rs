use super::*;
use crate::measure::module_tables::ModuleTimeRow;
use crate::measure::step_timeline::StageTimeline;

fn row(stage: &str, module: &str, index: Option<u32>, ns: u64) -> ModuleTimeRow {
    ModuleTimeRow {
        stage: stage.into(),
        module: module.into(),
        index,
        time_ns: ns,
        kernels: 2,
        replayed_ns: ns,
        kineto_flops: 0,
    }
}

fn kernel_row(module: &str, name: &str, ns: u64) -> crate::measure::module_tables::ModuleKernelRow {
    crate::measure::module_tables::ModuleKernelRow {
        stage: "decode_step".into(),
        module: module.into(),
        name: name.into(),
        calls: 64,
        total_ns: ns,
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
        source: Default::default(),
        rows: vec![
            row("decode_step", "layer.attention.qkv", Some(0), 3_000_000),
            row("decode_step", "layer.attention.qkv", Some(1), 3_000_000),
            row("decode_step", "lm_head", None, 1_000_000),
            row("decode_step", OUTSIDE_MODULES, None, 500_000),
            row("prefill", "lm_head", None, 9_000_000),
        ],
        stage_runs: BTreeMap::from([("decode_step".into(), 2), ("prefill".into(), 1)]),
        mapping: Default::default(),
        kernels: vec![
            kernel_row(
                "layer.attention.qkv",
                "void gemv<float>(float const*)",
                4_000_000,
            ),
            kernel_row(
                "layer.attention.qkv",
                "void splitk_reduce<float>()",
                2_000_000,
            ),
            kernel_row("lm_head", "void gemv<float>(float const*)", 1_000_000),
        ],
        nesting_stages: vec![],
        timelines: vec![StageTimeline {
            stage: "decode_step".into(),
            runs: 2,
            span_ns: 4_000_000.0,
            work_ns: 3_750_000.0,
            busy_ns: 3_500_000.0,
            gap_ns: 200_000.0,
            gap_work_ns: 50_000.0,
            early_start_ns: 0.0,
        }],
    }
}

fn w() -> Vec<ModuleWork> {
    // Floors: qkv 2 × max(1 B / 1 MB/s, 2 FLOP / 1 MFLOP/s) = 2 × 2 µs; lm_head 1 kB → 1 ms.
    vec![
        work("layer.attention.qkv", Some(0), 2.0, 1.0),
        work("layer.attention.qkv", Some(1), 2.0, 1.0),
        work("lm_head", None, 0.0, 1000.0),
    ]
}

#[test]
fn kinds_sum_over_layers_per_run_with_floors_and_catch_alls_last() {
    let rows = kinds(&profile(), "decode_step", &w(), Some(&peaks()));
    let names: Vec<&str> = rows.iter().map(|r| r.module.as_str()).collect();
    // qkv is 3 ms per run over a 4 µs floor, lm_head 0.5 ms under its 1 ms floor.
    assert_eq!(names, ["layer.attention.qkv", "lm_head", OUTSIDE_MODULES]);
    let qkv = &rows[0];
    assert_eq!(qkv.instances, 2);
    assert!((qkv.ms_per_run - 3.0).abs() < 1e-12);
    assert!((qkv.share - 6.0 / 7.5).abs() < 1e-12);
    assert!((qkv.kernels_per_run - 2.0).abs() < 1e-12);
    assert!((qkv.floor_ms.unwrap() - 0.004).abs() < 1e-12);
    assert!((qkv.times_floor.unwrap() - 750.0).abs() < 1e-9);
    assert!((rows[1].above_floor_ms.unwrap() + 0.5).abs() < 1e-12);
    assert_eq!(rows[2].floor_ms, None);
    // Each kind's kernels, heaviest first, per run (2 runs).
    let top: Vec<(&str, f64, f64)> = qkv
        .top_kernels
        .iter()
        .map(|t| (t.name.as_str(), t.ms_per_run, t.calls_per_run))
        .collect();
    assert_eq!(
        top,
        [
            ("gemv<float>", 2.0, 32.0),
            ("splitk_reduce<float>", 1.0, 32.0)
        ]
    );
    assert_eq!(rows[1].top_kernels[0].name, "gemv<float>");
    // Kineto counted nothing (no operator FLOPs) and the rows are replayed: n/a with the reason;
    // lm_head has no analytic FLOPs in this work list: no statement.
    assert!(qkv
        .kineto_flops_na
        .as_deref()
        .unwrap()
        .starts_with("replayed from a CUDA graph"));
    assert_eq!(
        (
            rows[1].kineto_flops_ratio,
            rows[1].kineto_flops_na.as_deref()
        ),
        (None, None)
    );
    let mut counted = profile();
    for r in counted
        .rows
        .iter_mut()
        .filter(|r| r.module == "layer.attention.qkv")
    {
        r.kineto_flops = 2; // 2 per instance over 2 runs: 2 per run against 4 analytic
        r.replayed_ns = 0;
    }
    let rows = kinds(&counted, "decode_step", &w(), Some(&peaks()));
    assert_eq!(rows[0].kineto_flops_ratio, Some(0.5));
    let mut eager = profile();
    eager.rows.iter_mut().for_each(|r| r.replayed_ns = 0);
    let rows = kinds(&eager, "decode_step", &w(), None);
    assert!(rows[0]
        .kineto_flops_na
        .as_deref()
        .unwrap()
        .starts_with("Kineto has no FLOP formula"));
    let sum: f64 = rows.iter().map(|r| r.share).sum();
    assert!((sum - 1.0).abs() < 1e-12);
    // No floors outside the decode step, nor without peaks.
    let prefill = kinds(&profile(), "prefill", &w(), Some(&peaks()));
    assert_eq!(prefill[0].floor_ms, None);
    assert!(kinds(&profile(), "decode_step", &w(), None)
        .iter()
        .all(|r| r.floor_ms.is_none()));
}

fn summary(modules: Option<ModuleProfile>) -> KinetoSummary {
    KinetoSummary {
        prefill_ms: 0.0,
        decode_ms: 0.0,
        decode_steps: 2,
        events: 0,
        operators: vec![],
        kernels: vec![],
        kineto_flops: 0,
        analytic_flops: 0.0,
        modules,
        decode_step_modules: w(),
    }
}

fn timed(mean_ms: f64) -> StageStats {
    StageStats {
        n: 2,
        mean_ms,
        std_ms: None,
        min_ms: mean_ms,
        p50_ms: mean_ms,
        p90_ms: mean_ms,
        p99_ms: mean_ms,
        max_ms: mean_ms,
        cv: None,
    }
}

#[test]
fn stages_add_up_on_the_timeline_and_are_set_against_the_timed_mean() {
    assert_eq!(build(&summary(None), &BTreeMap::new(), None), None);
    let stages = BTreeMap::from([("decode_step".to_string(), timed(3.95))]);
    let m = build(&summary(Some(profile())), &stages, Some(&peaks())).unwrap();
    let d = &m.stages["decode_step"];
    // work 3.75 − overlap 0.25 + idle 0.5 = span 4.0 ms; kinds add up to the work.
    assert!((d.work_ms - d.overlap_ms + d.idle_inside_ms - d.span_ms).abs() < 1e-12);
    let kinds_ms: f64 = d.kinds.iter().map(|k| k.ms_per_run).sum();
    assert!(
        (kinds_ms - d.work_ms).abs() < 1e-12,
        "{kinds_ms} vs {}",
        d.work_ms
    );
    assert!((d.residual_pct.unwrap() - 100.0 * 0.05 / 3.95).abs() < 1e-9);
    assert_eq!(d.within_2pct, Some(true));
    // The timed runs' idle: timed 3.95 − busy (3.75 − 0.25).
    assert!((d.timed_idle_ms.unwrap() - 0.45).abs() < 1e-12);
    assert_eq!(
        d.layers
            .iter()
            .map(|l| (l.index, l.ms_per_run))
            .collect::<Vec<_>>(),
        [(0, 1.5), (1, 1.5)]
    );
    // A stage without a timeline or a timed mean gets no residual, nor one holding other stages
    // (its timed mean holds theirs too).
    let p = &m.stages["prefill"];
    assert_eq!(
        (p.residual_pct, p.within_2pct, p.span_ms),
        (None, None, 0.0)
    );
    let mut nesting = profile();
    nesting.nesting_stages = vec!["decode_step".into()];
    let n = build(&summary(Some(nesting)), &stages, None).unwrap();
    assert_eq!(n.stages["decode_step"].timed_ms, None);
    assert_eq!(n.stages["decode_step"].residual_pct, None);
    let far = BTreeMap::from([("decode_step".to_string(), timed(3.8))]);
    let m2 = build(&summary(Some(profile())), &far, None).unwrap();
    assert_eq!(m2.stages["decode_step"].within_2pct, Some(false));
}

#[test]
fn modules_md_puts_the_decode_step_first_with_its_accounting_line() {
    let stages = BTreeMap::from([("decode_step".to_string(), timed(3.95))]);
    let m = build(&summary(Some(profile())), &stages, Some(&peaks())).unwrap();
    let md = crate::report::modules_md::render(&m);
    let decode = md.find("## decode_step: 2 run(s), 3.750 ms").unwrap();
    let prefill = md.find("## prefill: 1 run(s), 9.000 ms").unwrap();
    assert!(decode < prefill, "{md}");
    assert!(
        md.contains(
            "| layer.attention.qkv | 2 | 3.0000 | 80.0 % | 2.0 | 0.0040 | 750.0 | 2.9960 |"
        ),
        "{md}"
    );
    assert!(
        md.contains("= span 4.000 ms; the timed mean 3.950 ms, span − timed +1.3 % (within 2 %)"),
        "{md}"
    );
    assert!(
        md.contains("Layers: 2 from 1.5000 to 1.5000 ms per run"),
        "{md}"
    );
}
