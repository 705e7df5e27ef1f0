use super::*;
use crate::measure::module_tables::{ModuleKernelRow, ModuleTimeRow};

const STEP: &str = "decode_step";

/// A module kind: its kernels (name, launches per instance and step) and work per instance
/// (FLOPs, weight bytes).
type Spec<'a> = (&'a str, &'a [(&'a str, u64)], f64, f64);

/// Two layers, two decode steps of `modules`.
fn profile(modules: &[Spec]) -> (ModuleProfile, Vec<ModuleWork>) {
    let mut p = ModuleProfile::default();
    p.stage_runs.insert(STEP.into(), 2);
    let mut work = Vec::new();
    for (module, kernels, flops, weight) in modules {
        for layer in 0..2 {
            p.rows.push(ModuleTimeRow {
                stage: STEP.into(),
                module: module.to_string(),
                index: Some(layer),
                time_ns: 1000,
                kernels: 1,
                replayed_ns: 1000,
                kineto_flops: 0,
            });
            work.push(ModuleWork {
                module: module.to_string(),
                index: Some(layer),
                flops: *flops,
                weight_bytes: *weight,
                activation_bytes: 0.0,
                kv_bytes: 0.0,
            });
        }
        for (i, (name, per_instance)) in kernels.iter().enumerate() {
            p.kernels.push(ModuleKernelRow {
                stage: STEP.into(),
                module: module.to_string(),
                name: name.to_string(),
                // 2 layers × 2 steps
                calls: per_instance * 4,
                total_ns: 4000 - i as u64,
            });
        }
    }
    (p, work)
}

const MB: f64 = 1024.0 * 1024.0;

#[test]
fn one_module_one_launch_gets_the_module_flops() {
    let (p, w) = profile(&[("layer.attention.qkv", &[("nvjet_qkv", 1)], 6e6, 6.0 * MB)]);
    let ops = kernel_ops(&p, &w, &[STEP]);
    assert_eq!(ops.rules.len(), 1);
    let r = &ops.rules[0];
    assert_eq!(r.op, "layer.attention.qkv");
    assert_eq!(r.flops_per_launch, 6e6);
    assert!(matches!(
        &r.kernel,
        KernelMatch::Base { base, weight_bytes: None } if base == "nvjet_qkv"
    ));
    assert_eq!(
        ops.modules_of(Some(STEP), "nvjet_qkv"),
        Some(&["layer.attention.qkv".to_string()][..])
    );
}

#[test]
fn attention_of_several_kernels_and_norms_get_no_flops_but_keep_their_module() {
    let (p, w) = profile(&[
        (
            "layer.attention.core",
            &[
                ("void attn_split<64>(Params)", 1),
                ("void attn_combine<64>(Params)", 1),
            ],
            4e6,
            0.0,
        ),
        (
            "layer.attention.input_norm",
            &[("void rms_norm<bf16>(int)", 1)],
            0.0,
            0.0,
        ),
    ]);
    let ops = kernel_ops(&p, &w, &[STEP]);
    assert!(ops.rules.is_empty(), "{:?}", ops.rules);
    let why = ops
        .no_flops_reason(Some(STEP), "void attn_split<64>(Params)")
        .expect("reason");
    assert!(
        why.contains("50 % of layer.attention.core's GPU time, which 2 kernels share"),
        "{why}"
    );
    let why = ops
        .no_flops_reason(Some(STEP), "void rms_norm<bf16>(int)")
        .expect("reason");
    assert!(why.contains("no analytic FLOPs"), "{why}");
    assert_eq!(
        ops.modules_of(Some(STEP), "attn_split"),
        Some(&["layer.attention.core".to_string()][..])
    );
}

#[test]
fn a_kernel_shared_by_linears_is_told_apart_by_weight_among_its_own_modules_only() {
    // One GEMV kernel for o_proj and down (different weights), one for nothing else; the
    // attention kernel reads as many bytes as o_proj's weight, yet is never mapped to it.
    let (p, w) = profile(&[
        ("layer.attention.o_proj", &[("gemv", 1)], 2e6, 2.0 * MB),
        ("layer.mlp.down", &[("gemv", 1)], 8e6, 8.0 * MB),
        ("layer.attention.core", &[("attn_decode", 1)], 1e6, 0.0),
        ("layer.attention.input_norm", &[("gemv", 1)], 0.0, 0.0),
    ]);
    let ops = kernel_ops(&p, &w, &[STEP]);
    let launch = |name: &'static str, read: f64| super::super::useful::Launch {
        kernel_name: name,
        stage: Some(STEP),
        dram_read_bytes: Some(read),
        executed_flops: Some(1.0),
    };
    let hit = |name, read| {
        super::super::useful::find(&ops.rules, &launch(name, read)).map(|r| r.op.clone())
    };
    assert_eq!(hit("gemv", 2.0 * MB), Some("layer.attention.o_proj".into()));
    assert_eq!(hit("gemv", 8.0 * MB), Some("layer.mlp.down".into()));
    assert_eq!(hit("gemv", 5.0 * MB), None);
    // attention core is its module's only kernel: it gets attention's FLOPs, not o_proj's.
    assert_eq!(
        hit("attn_decode", 2.0 * MB),
        Some("layer.attention.core".into())
    );
    let mods = ops.modules_of(Some(STEP), "gemv").expect("modules");
    assert_eq!(mods.len(), 3, "{mods:?}");
}

#[test]
fn other_stages_and_outside_work_have_modules_but_no_flops() {
    let (mut p, w) = profile(&[("layer.mlp.gate_up", &[("gemm", 1)], 1e6, 4.0 * MB)]);
    p.stage_runs.insert("prefill".into(), 1);
    p.kernels.push(ModuleKernelRow {
        stage: "prefill".into(),
        module: "layer.mlp.gate_up".into(),
        name: "gemm".into(),
        calls: 2,
        total_ns: 10,
    });
    p.rows.push(ModuleTimeRow {
        stage: "prefill".into(),
        module: "layer.mlp.gate_up".into(),
        index: Some(0),
        time_ns: 10,
        kernels: 2,
        replayed_ns: 0,
        kineto_flops: 0,
    });
    p.kernels.push(ModuleKernelRow {
        stage: STEP.into(),
        module: OUTSIDE_MODULES.into(),
        name: "copy".into(),
        calls: 2,
        total_ns: 10,
    });
    let ops = kernel_ops(&p, &w, &[STEP, "prefill"]);
    assert_eq!(ops.rules.len(), 1, "{:?}", ops.rules);
    let why = ops
        .no_flops_reason(Some("prefill"), "gemm")
        .expect("prefill");
    assert!(why.contains("decode_step stage only"), "{why}");
    let why = ops.no_flops_reason(Some(STEP), "copy").expect("outside");
    assert!(why.contains("outside every module"), "{why}");
    assert_eq!(ops.modules_of(None, "gemm"), None);
}

#[test]
fn a_main_kernel_beside_small_ones_gets_the_module_flops_and_they_get_none() {
    // lm_head: its GEMV (95 % of the module's time) and a copy of the logits.
    let (mut p, w) = profile(&[(
        "lm_head",
        &[("gemv", 1), ("void at::native::direct_copy<float>(int)", 1)],
        3e8,
        300.0 * MB,
    )]);
    p.kernels[0].total_ns = 9500;
    p.kernels[1].total_ns = 500;
    let ops = kernel_ops(&p, &w, &[STEP]);
    assert_eq!(ops.rules.len(), 1, "{:?}", ops.rules);
    assert_eq!(ops.rules[0].op, "lm_head");
    assert_eq!(ops.rules[0].flops_per_launch, 3e8);
    let why = ops
        .no_flops_reason(Some(STEP), "void at::native::direct_copy<float>(int)")
        .expect("the copy has none");
    assert!(why.starts_with("5 % of lm_head's GPU time"), "{why}");
    // Launched twice per instance (a module looping over chunks): one launch's share unknown.
    let (p, w) = profile(&[("layer.mlp.down", &[("gemm", 2)], 1e6, 2.0 * MB)]);
    let ops = kernel_ops(&p, &w, &[STEP]);
    let why = ops
        .no_flops_reason(Some(STEP), "gemm")
        .expect("two launches");
    assert!(why.contains("launched 2.000 times per instance"), "{why}");
}
