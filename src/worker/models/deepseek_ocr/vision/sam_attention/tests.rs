//! Tests of SAM attention's formulations against the reference, on the CPU; the helpers are
//! shared with the CUDA-kernel path's GPU test (`sam_attention_cuda`).
use super::*;
use crate::checkpoint::tensors::WeightPath;
use crate::test_util::gpu_ms_per_call;
use std::collections::HashMap;

#[test]
fn rel_pos_index_hand_case() {
    // l = 2: table rows 0,1,2; R[i,j] = table[i - j + 1] → [[1,0],[2,1]].
    let table = Tensor::from_slice(&[10f32, 11., 12.]).view([3, 1]);
    let r = rel_pos_table(&table, 2).unwrap().view([4]);
    assert_eq!(Vec::<f32>::try_from(&r).unwrap(), vec![11., 10., 12., 11.]);
}

#[test]
fn rel_pos_linear_resize() {
    // [3,1] table → l=3 needs 5 rows; align_corners=false linear: src = (i+0.5)·3/5 − 0.5.
    let table = Tensor::from_slice(&[0f32, 1., 2.]).view([3, 1]);
    let r = rel_pos_table(&table, 3).unwrap(); // (3,3,1)
                                               // Row 0 of R: indices 2,1,0 into the resized table [0, 0.4, 1.0, 1.6, 2.0].
    let row0 = Vec::<f32>::try_from(&r.get(0).view([3])).unwrap();
    let want = [1.0f32, 0.4, 0.0];
    for (a, b) in row0.iter().zip(want) {
        assert!((a - b).abs() < 1e-6, "{row0:?}");
    }
}

#[test]
fn rel_pos_bias_hand_case() {
    // 1 batch, 2x1 grid, C=1, q = [1, 2]. Rh over l=2 from table [a0,a1,a2]=[1,10,100]:
    // Rh = [[10,1],[100,10]]; Rw (l=1) = [[t1]] with table_w = [5] (len 1 = 2·1−1).
    let q = Tensor::from_slice(&[1f32, 2.]).view([1, 2, 1]);
    let th = Tensor::from_slice(&[1f32, 10., 100.]).view([3, 1]);
    let tw = Tensor::from_slice(&[5f32]).view([1, 1]);
    let bias = rel_pos_bias(&q, &th, &tw, 2, 1).unwrap().view([4]);
    // q0=1: [1·10 + 1·5, 1·1 + 1·5] ; q1=2: [2·100 + 2·5, 2·10 + 2·5]
    assert_eq!(
        Vec::<f32>::try_from(&bias).unwrap(),
        vec![15., 6., 210., 30.]
    );
}

#[test]
fn window_partition_hand_case() {
    // 1x3x3x1 grid 0..9, window 2 → pad to 4x4, 4 windows in row-major order.
    let x = Tensor::arange(9, (Kind::Float, Device::Cpu))
        .view([1, 3, 3, 1])
        .f_add_scalar(1.0)
        .unwrap();
    let (win, pad) = window_partition(&x, 2).unwrap();
    assert_eq!(pad, (4, 4));
    assert_eq!(win.size(), vec![4, 2, 2, 1]);
    let flat = Vec::<f32>::try_from(&win.view([-1])).unwrap();
    assert_eq!(
        flat,
        vec![1., 2., 4., 5., 3., 0., 6., 0., 7., 8., 0., 0., 9., 0., 0., 0.]
    );
    let back = window_unpartition(&win, 2, pad, (3, 3)).unwrap();
    assert!(back.equal(&x));
}

/// Random attention weights of width `c` with rel-pos tables of `table_len` rows (a length
/// other than 2·l−1 exercises the resize). Drawn once and shared by every attention a test
/// compares: tests run in parallel and reseed libtorch's global generator, so drawing again
/// with the same seed would not give the same weights.
pub(crate) fn weights(c: i64, heads: i64, table_len: i64) -> HashMap<String, Tensor> {
    let r = |s: &[i64]| Tensor::randn(s, (Kind::Float, Device::Cpu)) * 0.3;
    let hd = c / heads;
    let mut m = HashMap::new();
    m.insert("qkv.weight".to_string(), r(&[3 * c, c]));
    m.insert("qkv.bias".to_string(), r(&[3 * c]));
    m.insert("proj.weight".to_string(), r(&[c, c]));
    m.insert("proj.bias".to_string(), r(&[c]));
    m.insert("rel_pos_h".to_string(), r(&[table_len, hd]));
    m.insert("rel_pos_w".to_string(), r(&[table_len, hd]));
    m
}

/// An attention of `heads` heads over `w` rounded to `kind`.
pub(crate) fn attention(
    w: &HashMap<String, Tensor>,
    heads: i64,
    optim: SamOptim,
    kind: Kind,
) -> SamAttention {
    attention_on(w, heads, optim, kind, Device::Cpu)
}

/// [`attention`] on `dev`.
pub(crate) fn attention_on(
    w: &HashMap<String, Tensor>,
    heads: i64,
    optim: SamOptim,
    kind: Kind,
    dev: Device,
) -> SamAttention {
    let m: HashMap<String, Tensor> = w
        .iter()
        .map(|(n, t)| (n.clone(), t.to_kind(kind).to_device(dev)))
        .collect();
    let vs = WeightPath::root(&m, dev, kind);
    let cfg = SamConfig {
        heads,
        ..llmprof::model::deepseek_ocr::ArchConfig::tiny().sam
    };
    SamAttention::load(&vs, &cfg, optim).unwrap()
}

/// SAM's CUDA-kernel path with the folded bias (the products from one GEMM), no later switch:
/// what the window and global kernels' GPU tests compare against and build on.
pub(crate) const FOLDED_KERNELS: SamOptim = SamOptim {
    fused_rel_pos: true,
    fused_windows: true,
    cuda_kernels: true,
    rel_pos_gemm: true,
    proj_in_windows: false,
    patch_gemm: false,
    add_layer_norm_kernel: false,
    gelu_epilogue: false,
    window_kernel: false,
    global_kernel: false,
    window_fmha: false,
};

/// The folded path and `kernel` in bf16 on `y` (fp32, on a GPU) in `window` windows (0: global),
/// for the kernels' batch-8 GPU tests: their errors against `reference`'s fp32 output, (folded,
/// kernel). It also prints the milliseconds per attention block (qkv Linear, attention,
/// projection) of each, 20 calls after 3 warm-ups, as "`label` block b`B` grid `H` `name`".
pub(crate) fn folded_and_kernel_errors_timed(
    w: &HashMap<String, Tensor>,
    kernel: SamOptim,
    reference: &SamAttention,
    y: &Tensor,
    window: i64,
    label: &str,
) -> (f64, f64) {
    let (b, grid, _, _) = y.size4().unwrap();
    let heads = reference.heads;
    let yb = y.to_kind(Kind::BFloat16);
    let want = reference.forward_block(y, window).unwrap();
    let mut errors = Vec::new();
    for (name, optim) in [("folded", FOLDED_KERNELS), ("kernel", kernel)] {
        let a = attention_on(w, heads, optim, Kind::BFloat16, y.device());
        errors.push(rel_err(&a.forward_block(&yb, window).unwrap(), &want));
        let ms = gpu_ms_per_call(&|| a.forward_block(&yb, window).unwrap());
        eprintln!("{label} block b{b} grid {grid} {name}: {ms:.3} ms");
    }
    (errors[0], errors[1])
}

/// CUDA device 0 for the GPU tests of SAM's kernels, with TF32 off: panics when there is no
/// GPU or this build has no kernels.
pub(crate) fn kernels_gpu() -> Device {
    assert!(tch::Cuda::is_available(), "no CUDA device");
    assert!(
        crate::ffi::kernels::available(),
        "this build has no kernels"
    );
    crate::ffi::set_allow_tf32(false, false).unwrap();
    Device::Cuda(0)
}

pub(crate) fn rel_err(a: &Tensor, b: &Tensor) -> f64 {
    let a = a.to_kind(Kind::Double);
    let b = b.to_kind(Kind::Double);
    (&a - &b).norm().double_value(&[]) / b.norm().double_value(&[])
}

#[test]
fn fused_formulations_equal_the_reference_in_fp32() {
    // A 9×7 grid: windows of 4 need padding on both sides; global layers see 9×7 with tables
    // resized from 13 rows. Heads of 12 channels: q'·k' needs 12 + 9 + 7 = 28 → 32 columns.
    let y = Tensor::randn([2, 9, 7, 24], (Kind::Float, Device::Cpu));
    let w = weights(24, 2, 13);
    let reference = attention(&w, 2, SamOptim::default(), Kind::Float);
    for optim in [
        SamOptim {
            fused_rel_pos: true,
            ..SamOptim::default()
        },
        SamOptim {
            fused_windows: true,
            ..SamOptim::default()
        },
        // On the CPU the kernels are not used: the fused formulation runs.
        SamOptim {
            proj_in_windows: true,
            ..FOLDED_KERNELS
        },
    ] {
        let fast = attention(&w, 2, optim, Kind::Float);
        for window in [0, 4] {
            let want = reference.forward_block(&y, window).unwrap();
            let got = fast.forward_block(&y, window).unwrap();
            assert_eq!(got.size(), vec![2, 9, 7, 24]);
            let e = rel_err(&got, &want);
            assert!(e < 1e-6, "{optim:?} window {window}: {e}");
        }
    }
}

#[test]
fn folded_bias_is_no_less_accurate_in_bf16() {
    let y = Tensor::randn([1, 8, 8, 32], (Kind::Float, Device::Cpu));
    let w = weights(32, 2, 15);
    let exact = attention(&w, 2, SamOptim::default(), Kind::Float)
        .forward_block(&y, 0)
        .unwrap();
    let yb = y.to_kind(Kind::BFloat16);
    let eager = attention(&w, 2, SamOptim::default(), Kind::BFloat16)
        .forward_block(&yb, 0)
        .unwrap();
    let fused = SamOptim {
        fused_rel_pos: true,
        fused_windows: true,
        ..SamOptim::default()
    };
    let fast = attention(&w, 2, fused, Kind::BFloat16)
        .forward_block(&yb, 0)
        .unwrap();
    let (e_eager, e_fast) = (rel_err(&eager, &exact), rel_err(&fast, &exact));
    assert!(e_eager > 1e-4, "bf16 must really round: {e_eager}");
    assert!(e_fast <= 2.0 * e_eager, "{e_fast} vs eager {e_eager}");
}
