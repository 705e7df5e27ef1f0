//! GPU-only tests of the RoPE + KV-write kernel (decode steps and prefill) and the decode
//! attention kernel against the libtorch ops they replace; run with
//! `cargo test -- --ignored on_a_gpu` on the GPU machine.
use super::{apply_rope, apply_rope_fma, Rope};
use crate::ffi::kernels;
use tch::{Device, Kind, Tensor};

/// MHA (DeepSeek-OCR: 10 heads, the addcmul formula) and GQA (8 query heads on 2 K/V heads, the
/// mul + add formula), fp32 and bf16, two rows at different positions, one token per row (a
/// decode step) and 40 (a prefill), head_dim 128 and 72 (the vector and the element kernel):
/// q and the written cache slots must equal libtorch's RoPE and cache write bit for bit; every
/// other slot stays untouched.
#[test]
#[ignore = "needs a CUDA GPU and a build with llmprof's kernels: cargo test -- --ignored on the GPU machine"]
fn rope_kv_kernel_equals_libtorch_on_a_gpu() {
    assert!(tch::Cuda::is_available(), "no CUDA device");
    let dev = Device::Cuda(0);
    let (b, slots, slot) = (2i64, 64i64, 5i64);
    // 1 token per row: the element kernel; 40 (80 rows): 16-byte vectors at head_dim 128, at 72
    // in fp32 only (36 channels are not a multiple of 8 bf16) and the element kernel in bf16.
    let cases = [
        (128i64, (10i64, 10i64), 1i64),
        (128, (8, 2), 1),
        (128, (10, 10), 40),
        (128, (8, 2), 40),
        (72, (4, 4), 40),
    ];
    for kind in [Kind::Float, Kind::BFloat16] {
        for (hd, (nh, nkv), t) in cases {
            let rope = Rope::new(hd, 10_000.0, dev).unwrap();
            let qkv = Tensor::randn([b, t, (nh + 2 * nkv) * hd], (kind, dev));
            let positions = Tensor::arange(t, (Kind::Int64, dev)).view([1, t])
                + Tensor::from_slice(&[900i64, 37])
                    .to_device(dev)
                    .view([b, 1]);
            let (cos, sin) = rope.cos_sin(&positions, kind).unwrap(); // (b, 1, t, hd)
            let k_cache = Tensor::randn([b, nkv, slots, hd], (kind, dev));
            let v_cache = Tensor::randn([b, nkv, slots, hd], (kind, dev));
            let (k0, v0) = (k_cache.copy(), v_cache.copy());
            let slot_t = Tensor::from_slice(&[slot]).to_device(dev);
            let mha = nh == nkv;
            let q = kernels::rope_kv(
                &qkv,
                (&cos, &sin),
                &slot_t,
                (nh, nkv),
                mha,
                &k_cache,
                &v_cache,
            )
            .unwrap();
            let heads = |from: i64, n: i64| {
                qkv.narrow(2, from * hd, n * hd)
                    .view([b, t, n, hd])
                    .transpose(1, 2)
            }; // (b, n, t, hd)
            let rot = |x: &Tensor| {
                if mha {
                    apply_rope_fma(x, &cos, &sin).unwrap()
                } else {
                    apply_rope(x, &cos, &sin).unwrap()
                }
            };
            let what = format!("{kind:?} {nh}/{nkv} heads of {hd}, {t} tokens");
            assert!(q.equal(&rot(&heads(0, nh))), "{what}: q differs");
            assert!(
                q.transpose(1, 2).is_contiguous(),
                "{what}: q is not token-major [B, T, heads, hd] memory"
            );
            assert!(
                k_cache.narrow(2, slot, t).equal(&rot(&heads(nh, nkv))),
                "{what}: k slots differ"
            );
            assert!(
                v_cache.narrow(2, slot, t).equal(&heads(nh + nkv, nkv)),
                "{what}: v slots differ"
            );
            let written = Tensor::arange_start(slot, slot + t, (Kind::Int64, dev));
            let others = Tensor::ones([slots], (Kind::Bool, dev))
                .index_fill(0, &written, 0)
                .nonzero()
                .squeeze_dim(1);
            let kept = |t: &Tensor, t0: &Tensor| {
                t.index_select(2, &others)
                    .equal(&t0.index_select(2, &others))
            };
            assert!(
                kept(&k_cache, &k0) && kept(&v_cache, &v0),
                "{what}: other slots changed"
            );
        }
    }
}

/// The decode-attention kernel against softmax(q·kᵀ/√d)·v in fp32 over exactly the visible slots
/// (each row's padding ..= the current slot), MHA and GQA (1 to 16 query heads per kv head),
/// head_dim 64 and 128, fp32, bf16 and fp16, on the CUDA-core and the tensor-core split pass,
/// a window larger than the written slots with garbage beyond them: the kernel must read the
/// visible slots only, and splits with no visible slot must not use their (NaN-poisoned)
/// scratch. fp32 within 1e-5 of the largest output; bf16/fp16 within 1 % of it (the output is
/// rounded once; the tensor-core pass also rounds the probabilities; the reference sees the same
/// inputs).
#[test]
#[ignore = "needs a CUDA GPU and a build with llmprof's kernels: cargo test -- --ignored on the GPU machine"]
fn decode_attention_kernel_matches_the_reference_on_a_gpu() {
    crate::ffi::kernels::with_each_launch_policy(|| {
        assert!(tch::Cuda::is_available(), "no CUDA device");
        let small = Rows {
            slots: 320,
            window: 256,
            len: 200,
            pads: vec![0, 17, 150],
        };
        // Many rows over a long window that is not a multiple of 64 slots: the tensor-core pass
        // then walks several splits per block, and its last split reaches past the cache's slots.
        let many = Rows {
            slots: 1100,
            window: 1100,
            len: 1050,
            pads: (0..48).map(|i| (i * 37) % 700).collect(),
        };
        for (kind, tol) in [
            (Kind::Float, 1e-5),
            (Kind::BFloat16, 1e-2),
            (Kind::Half, 1e-2),
        ] {
            for tensor_cores in [false, true] {
                // Query heads per kv head 1, 2, 3, 4, 7 and 16: every block shape of the CUDA-core
                // pass (groups of 1, 2, 4 and 8 heads, a group not filled, a kv head split over two
                // blocks) and of the tensor-core pass (1 to 16 of its 16 rows filled).
                for (nh, nkv, hd) in [
                    (10i64, 10i64, 128i64),
                    (4, 2, 128),
                    (6, 2, 64),
                    (8, 2, 64),
                    (14, 2, 128),
                    (32, 2, 64),
                ] {
                    check_decode_attention(&small, (nh, nkv, hd), kind, tol, tensor_cores);
                }
                check_decode_attention(&many, (32, 8, 128), kind, tol, tensor_cores);
            }
        }
    });
}

/// The rows of a decode-attention case: cache slots, the window attended over, the slot written
/// this step and each row's left padding.
struct Rows {
    slots: i64,
    window: i64,
    len: i64,
    pads: Vec<i64>,
}

fn check_decode_attention(
    rows: &Rows,
    (nh, nkv, hd): (i64, i64, i64),
    kind: Kind,
    tol: f64,
    tensor_cores: bool,
) {
    let dev = Device::Cuda(0);
    let b = rows.pads.len() as i64;
    let q = Tensor::randn([b, nh, 1, hd], (kind, dev));
    let k = Tensor::randn([b, nkv, rows.slots, hd], (kind, dev)) * 2.0;
    let v = Tensor::randn([b, nkv, rows.slots, hd], (kind, dev));
    let pad = Tensor::from_slice(&rows.pads).to_device(dev);
    let len_t = Tensor::from_slice(&[rows.len]).to_device(dev);
    // The kernel's scratch comes from the caching allocator: leave a NaN-filled block of its
    // partial-output size behind, so splits that see no slot must not read theirs.
    let splits = (rows.window + 63) / 64;
    drop(Tensor::full(
        [b * nh, splits, hd],
        f64::NAN,
        (Kind::Float, dev),
    ));
    let got = kernels::decode_attention(&q, (&k, &v), (&pad, &len_t), rows.window, tensor_cores)
        .unwrap()
        .to_kind(Kind::Float);
    let what =
        format!("{kind:?} {nh}/{nkv} heads, hd {hd}, batch {b}, tensor cores {tensor_cores}");
    let g = nh / nkv;
    for (row, &p) in rows.pads.iter().enumerate() {
        let row = row as i64;
        let n = rows.len + 1 - p; // visible slots p ..= len
        let kr = k.get(row).narrow(1, p, n).to_kind(Kind::Float); // (nkv, n, hd)
        let vr = v.get(row).narrow(1, p, n).to_kind(Kind::Float);
        let kr = kr.repeat_interleave_self_int(g, 0, None);
        let vr = vr.repeat_interleave_self_int(g, 0, None);
        let qr = q.get(row).to_kind(Kind::Float); // (nh, 1, hd)
        let scores = qr.matmul(&kr.transpose(1, 2)) / (hd as f64).sqrt();
        let want = scores.softmax(-1, Kind::Float).matmul(&vr); // (nh, 1, hd)
        let err = (got.get(row) - &want).abs().max().double_value(&[]);
        let scale = want.abs().max().double_value(&[]);
        assert!(
            err <= tol * scale,
            "{what}, row {row}: max error {err} (scale {scale})"
        );
    }
}
