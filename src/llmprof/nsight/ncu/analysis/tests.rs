//! The ncu analysis on recorded exports: tests/fixtures/stage2/ncu (an H200 export with device
//! attributes, RTX 5090 exports without) and ncu-h100-llmprof (llmprof's own H100 capture).

use super::*;
use crate::measure::peaks::ClockSource;
use crate::roofline::{BoundClass, UsefulFlops};

const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/stage2");

fn near(got: Option<f64>, want: f64, tol: f64) -> bool {
    got.is_some_and(|g| (g - want).abs() <= tol)
}

#[test]
fn h200_datasheet_peaks_and_roofs_at_the_measured_clock() {
    let dir = Path::new(FIX).join("ncu/h200");
    let a = ncu_roofline(&dir, None).expect("analysis");
    let peaks = a.roofline.peaks.as_ref().expect("device attributes");
    assert_eq!(peaks.gpu_name, "NVIDIA H200");
    assert_eq!(peaks.sku.as_deref(), Some("H200 SXM"));
    // Datasheet: 989.4 TFLOP/s dense BF16 (at 1830 MHz), not 1070.5 at the 1980 MHz attribute.
    let bf16 = peaks.bf16_flops_per_s.expect("bf16") / 1e12;
    assert!((bf16 - 989.4).abs() < 1.0, "{bf16}");
    // ncu_raw.csv (process 445) has IDs 0 and 1; ncu_details.csv is another run (process 509).
    assert_eq!(a.kernels.len(), 3);
    let raw = a
        .kernels
        .iter()
        .position(|k| k.duration_ns == Some(1_656_768.0))
        .expect("raw launch 0");
    let b = &a.roofline.rows[raw].bound;
    assert_eq!(b.class, BoundClass::Unknown);
    assert!(b.reason.contains("tensor pipe"), "{}", b.reason);
    // The kernel ran at 1336 MHz (sm__cycles_elapsed.avg.per_second), DRAM at 3199 MHz.
    assert!(near(b.ridge_sm_clock_mhz, 1335.883, 0.001), "{b:?}");
    assert_eq!(b.ridge_sm_clock_source, Some(ClockSource::Measured));
    assert!(near(b.ridge_dram_clock_mhz, 3199.428, 0.001), "{b:?}");
    // The details export has only SpeedOfLight's SM Frequency: 1335.1 MHz.
    let details = a
        .kernels
        .iter()
        .position(|k| k.duration_ns == Some(1_655_136.0))
        .expect("details launch");
    let d = &a.roofline.rows[details].bound;
    assert!(near(d.ridge_sm_clock_mhz, 1335.119, 0.001), "{d:?}");
    let md = render(&dir, &a, false).expect("md");
    assert!(md.contains("the device attributes of NVIDIA H200"), "{md}");
    assert!(md.contains("datasheet peaks of the H200 SXM"), "{md}");
    assert!(md.contains("| 1336 | 3199 |"), "{md}");
    assert!(!md.contains("SM clock 1980"), "{md}");
    let js: serde_json::Value =
        serde_json::from_str(&render(&dir, &a, true).expect("json")).unwrap();
    let k = &js["kernels"][raw];
    assert!(
        near(k["ridge_sm_clock_mhz"].as_f64(), 1335.883, 0.001),
        "{k}"
    );
    assert_eq!(k["ridge_sm_clock_source"], "measured");
    assert_eq!(js["peaks"]["tensor_clock_mhz"], 1830.0);
}

#[test]
fn rtx5090_with_gpu_name() {
    let dir = Path::new(FIX).join("ncu/rtx5090");
    let js: serde_json::Value =
        serde_json::from_str(&analyze_ncu(&dir, true, Some("RTX 5090")).expect("json"))
            .expect("json");
    let kernels = js["kernels"].as_array().expect("array");
    assert_eq!(kernels.len(), 3, "one per kernel folder");
    assert_eq!(kernels[0]["dram_read_bytes"], 2.33e6);
    assert_eq!(kernels[0]["bound"], "latency_bound"); // SM 9.61 %, DRAM 20.52 %
    assert!(kernels[1]["executed_intensity"].as_f64().expect("gemm ai") > 100.0);
    assert_eq!(
        kernels[1]["arithmetic_intensity"],
        kernels[1]["executed_intensity"]
    );
    assert_eq!(js["peaks"]["gpu_name"], "NVIDIA GeForce RTX 5090");
    // RTX Blackwell whitepaper: BF16 with FP32 accumulate 209.5 TFLOP/s dense at 2407 MHz.
    let bf16 = js["peaks"]["bf16_flops_per_s"].as_f64().expect("bf16") / 1e12;
    assert!((bf16 - 209.5).abs() < 0.5, "{bf16}");
    // kernel_0005: SpeedOfLight SM Frequency 2.00 GHz, DRAM Frequency 13.78 GHz: the bf16 roof
    // 170 × 512 × 2000 MHz = 174.1 TFLOP/s over 13780 MHz × 128 B = 1.764 TB/s.
    let k5 = &kernels[2];
    assert!(
        near(k5["ridge_sm_clock_mhz"].as_f64(), 2000.0, 1e-6),
        "{k5}"
    );
    let ridge = k5["ridge_intensity"].as_f64().expect("ridge");
    assert!((ridge - 174.08e12 / 1.76384e12).abs() < 0.1, "{ridge}");
    let without = analyze_ncu(&dir, false, None).expect("md");
    assert!(without.contains("GPU peaks unknown"), "{without}");
    let err = analyze_ncu(&dir, false, Some("Voodoo 3")).expect_err("unknown board");
    assert!(format!("{err:#}").contains("H100 SXM5"), "{err:#}");
}

#[test]
fn lm_head_useful_intensity_beside_executed() {
    // llmprof's own H100 capture of the decode step: nvjet_sm90_tst_384x8 is the LM head, a
    // batch-1 GEMV through the 1280 × 129280 bf16 head. ncu counts 2.658 GFLOP executed on the
    // tensor pipe (an n=8 tile: 8× the math); the analytic FLOPs are 2 × 1280 × 129280.
    let dir = Path::new(FIX).join("ncu-h100-llmprof");
    let head = UsefulFlops::linear("lm_head", "^nvjet_sm90_tst_384x8", None, 1, 1280, 129_280)
        .expect("regex");
    let a = ncu_roofline_with(&dir, None, &KernelOps::from_rules(vec![head])).expect("analysis");
    let row = a
        .roofline
        .rows
        .iter()
        .find(|r| r.point.name.starts_with("nvjet_sm90_tst_384x8"))
        .expect("lm_head kernel");
    let executed = row.point.executed_intensity.expect("executed");
    let useful = row.point.useful_intensity().expect("useful");
    assert!((executed - 7.96).abs() < 0.01, "{executed}");
    assert!((useful - 1.0).abs() < 0.01, "{useful}");
    assert_eq!(row.point.useful_op.as_deref(), Some("lm_head"));
    // Roofs at the measured 1447 MHz SM and 2617 MHz DRAM clocks: ridge 782.4 / 3.350 = 233.5
    // FLOP/B (319.3 at NVML's 1980 MHz maximum).
    let ridge = row.bound.ridge_intensity.expect("ridge");
    assert!((ridge - 233.5).abs() < 0.5, "{ridge}");
    let other = a
        .roofline
        .rows
        .iter()
        .find(|r| r.point.name.starts_with("nvjet_sm90_tst_64x8"))
        .expect("projection GEMV");
    assert_eq!(other.point.useful_flops, None);
    let md = render(&dir, &a, false).expect("md");
    assert!(md.contains("| 7.96 | 0.99 (lm_head) |"), "{md}");
    assert!(md.contains("executed FLOPs by precision"), "{md}");
}

#[test]
fn kernels_get_their_modules_and_useful_flops_from_stage_one() {
    // The same H100 capture, with what stage 1's module attribution saw in that decode step
    // (DeepSeek-OCR, bf16, batch 1, 12 layers): nvjet_sm90_tst_384x8 launched by lm_head,
    // nvjet_sm90_tst_64x8 by o_proj (1280 × 1280) and by a 1280 × 1792 projection of the shared
    // experts. The GEMV read 3.30 MB = o_proj's weight, so the bytes pick o_proj among the
    // kernel's own modules.
    use crate::measure::module_tables::{ModuleKernelRow, ModuleProfile, ModuleTimeRow};
    use crate::model::module_work::ModuleWork;
    let dir = Path::new(FIX).join("ncu-h100-llmprof");
    let mut p = ModuleProfile::default();
    p.stage_runs.insert("decode_step".into(), 1);
    let mut work = Vec::new();
    let gemv = "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT";
    let modules: [(&str, &str, u32, f64, f64); 3] = [
        (
            "lm_head",
            "nvjet_sm90_tst_384x8_64x4_2x1_v_bz_TNT",
            1,
            1280.0,
            129_280.0,
        ),
        ("layer.attention.o_proj", gemv, 12, 1280.0, 1280.0),
        ("layer.moe.shared_experts", gemv, 11, 1280.0, 1792.0),
    ];
    for (module, kernel, layers, i, o) in modules {
        for layer in 0..layers {
            let index = (layers > 1).then_some(layer);
            p.rows.push(ModuleTimeRow {
                stage: "decode_step".into(),
                module: module.into(),
                index,
                time_ns: 1000,
                kernels: 1,
                replayed_ns: 1000,
                kineto_flops: 0,
            });
            work.push(ModuleWork {
                module: module.into(),
                index,
                flops: 2.0 * i * o,
                weight_bytes: 2.0 * i * o,
                activation_bytes: 0.0,
                kv_bytes: 0.0,
            });
        }
        p.kernels.push(ModuleKernelRow {
            stage: "decode_step".into(),
            module: module.into(),
            name: kernel.into(),
            calls: layers.into(),
            total_ns: 1000 * u64::from(layers),
        });
    }
    let ops = crate::roofline::module_flops::kernel_ops(&p, &work, &["decode_step"]);
    let a = ncu_roofline_with(&dir, None, &ops).expect("analysis");
    let row = |prefix: &str| {
        a.roofline
            .rows
            .iter()
            .find(|r| r.point.name.starts_with(prefix))
            .unwrap_or_else(|| panic!("{prefix}"))
            .point
            .clone()
    };
    let head = row("nvjet_sm90_tst_384x8");
    assert_eq!(head.useful_op.as_deref(), Some("lm_head"));
    assert_eq!(head.modules, ["lm_head"]);
    assert_eq!(head.useful_flops, Some(2.0 * 1280.0 * 129_280.0));
    let proj = row("nvjet_sm90_tst_64x8");
    assert_eq!(proj.useful_op.as_deref(), Some("layer.attention.o_proj"));
    assert_eq!(proj.modules.len(), 2, "{:?}", proj.modules);
    assert_eq!(proj.useful_flops, Some(2.0 * 1280.0 * 1280.0));
    // ncu executed 26.2 MFLOP there (an n=8 tile): 8× the math.
    let ratio = proj.executed_flops.expect("executed") / proj.useful_flops.expect("useful");
    assert!((ratio - 8.0).abs() < 0.01, "{ratio}");
    let md = render(&dir, &a, false).expect("md");
    assert!(md.contains("| layer.attention.o_proj +1 |"), "{md}");
    let json = render(&dir, &a, true).expect("json");
    assert!(
        json.contains("\"modules\": [\n        \"lm_head\""),
        "{json}"
    );
    // Without stage 1's modules nothing is mapped: no byte coincidence stands in for them.
    let bare = ncu_roofline(&dir, None).expect("analysis");
    assert!(bare
        .roofline
        .rows
        .iter()
        .all(|r| r.point.useful_op.is_none()));
}

#[test]
fn h200_decode_step_kernels_get_their_own_modules_flops_only() {
    // llmprof's own stage 2 of DeepSeek-OCR on an H200 (reports/gpu-runs.md §38): the six ncu
    // exports and the Kineto child's module attribution. The decode-attention kernel and the
    // norm get their modules and no FLOPs; every linear kernel gets the FLOPs of a module that
    // launched it, picked by the bytes it read where it serves several.
    use crate::measure::module_tables::ModuleProfile;
    use crate::model::module_work::ModuleWork;
    let dir = Path::new(FIX).join("ncu-h200-modules");
    let text = std::fs::read_to_string(dir.join("stage1_modules.json")).expect("fixture");
    let v: serde_json::Value = serde_json::from_str(&text).expect("json");
    let profile: ModuleProfile = serde_json::from_value(v["modules"].clone()).expect("modules");
    let work: Vec<ModuleWork> =
        serde_json::from_value(v["decode_step_modules"].clone()).expect("work");
    let ops = crate::roofline::module_flops::kernel_ops(&profile, &work, &["decode_step"]);
    let a = ncu_roofline_with(&dir, None, &ops).expect("analysis");
    assert_eq!(a.roofline.rows.len(), 6);
    let got = |needle: &str| {
        let p = &a
            .roofline
            .rows
            .iter()
            .find(|r| r.point.name.contains(needle))
            .unwrap_or_else(|| panic!("{needle}"))
            .point;
        (p.modules.clone(), p.useful_op.clone(), p.useful_flops)
    };
    let (mods, op, _) = got("attn_split");
    assert_eq!(mods, ["layer.attention.core"]);
    assert_eq!(op, None, "attention borrows no FLOPs");
    let (mods, op, _) = got("add_rms_norm");
    assert_eq!(mods.len(), 4, "{mods:?}");
    assert_eq!(op, None);
    // The grouped GEMM serves gate/up and down; it read the 6 routed experts' gate/up weights.
    let (_, op, flops) = got("device_kernel");
    assert_eq!(op.as_deref(), Some("layer.moe.experts_gate_up"));
    assert_eq!(flops, Some(2.0 * 6.0 * 1280.0 * 2.0 * 896.0));
    // One GEMV kernel for o_proj and the shared experts: it read o_proj's 1280 × 1280 weight.
    let (_, op, flops) = got("nvjet_sm90_tst_16x64");
    assert_eq!(op.as_deref(), Some("layer.attention.o_proj"));
    assert_eq!(flops, Some(2.0 * 1280.0 * 1280.0));
    let (_, op, _) = got("nvjet_sm90_tst_128x8");
    assert_eq!(op.as_deref(), Some("lm_head"));
    for r in &a.roofline.rows {
        if let Some(op) = &r.point.useful_op {
            assert!(
                op.split('|')
                    .all(|o| r.point.modules.iter().any(|m| m == o)),
                "{} got {op}, not one of its modules {:?}",
                r.point.name,
                r.point.modules
            );
        }
    }
}

#[test]
fn a_tensor_parallel_ranks_kernels_keep_the_workloads_stage_not_ncclcomminitrank() {
    // llmprof's stage 2 of rank 1 of 2 (Llama-3.1-8B, 2 x H200, reports/gpu-runs.md §46 call D):
    // every kernel's NVTX cell lists NCCL's `ncclCommInitRank` range after llmprof's own
    // `decode` and `decode_step`; it named the stage of every kernel and a roofline plot before.
    let dir = Path::new(FIX).join("ncu-h200-tp2-rank1");
    let a = ncu_roofline(&dir, None).expect("analysis");
    assert_eq!(a.roofline.rows.len(), 3);
    for r in &a.roofline.rows {
        assert_eq!(
            r.point.stage.as_deref(),
            Some("decode_step"),
            "{}",
            r.point.name
        );
    }
    assert_eq!(a.roofline.stages(), ["decode_step"]);
}
