use super::super::views::Mode;
use super::spec_check::{near, GF, MF};
use super::*;

#[test]
fn vision_matches_spec_7_1() {
    let cfg = ArchConfig::deepseek_ocr();
    let v = vision_flops(&cfg, 1024);
    near(v.sam.total(), GF, 976.9, 0.05);
    near(v.sam.global.attention, GF, 206.2, 0.05);
    near(v.clip.total(), GF, 161.7, 0.05);
    near(v.projector, GF, 1.34, 0.005);
    near(v.total(), GF, 1140.0, 0.05);
    assert_eq!(v.tokens, 256);
    // Breakdown at 1024.
    near(v.sam.windowed.total(), GF, 519.5, 0.05);
    near(v.sam.windowed.attention, GF, 23.6, 0.05);
    near(v.sam.global.total(), GF, 441.3, 0.05);
    near(v.sam.neck, GF, 6.4, 0.05);
    near(v.sam.compressor, GF, 4.8, 0.05);
    near(v.sam.patch_embed, GF, 4.8, 0.05);
    // Other view sizes: (size, SAM, global QK/AV, CLIP, projector, total).
    for (s, sam, qk, clip, proj, total) in [
        (512, 228.3, 12.9, 39.7, 0.34, 268.3),
        (640, 325.6, 31.5, 62.0, 0.52, 388.1),
        (1280, 1683.1, 503.3, 258.0, 2.10, 1943.2),
    ] {
        let v = vision_flops(&cfg, s);
        near(v.sam.total(), GF, sam, 0.05);
        near(v.sam.global.attention, GF, qk, 0.05);
        near(v.clip.total(), GF, clip, 0.05);
        near(v.projector, GF, proj, 0.005);
        near(v.total(), GF, total, 0.05);
    }
}

#[test]
fn encoder_per_mode_and_grid() {
    let cfg = ArchConfig::deepseek_ocr();
    let gundam = PreprocessConfig::from_mode(Mode::Gundam);
    let enc = |cols, rows| encoder_flops(&cfg, &gundam, TileGrid { cols, rows }).total() / GF;
    // Spec §7.1: 2 tiles → 1916, 4 → 2693, 6 → 3469, 9 → 4633 (within 0.5 %).
    for ((c, r), want) in [
        ((2, 1), 1916.0),
        ((2, 2), 2693.0),
        ((2, 3), 3469.0),
        ((3, 3), 4633.0),
    ] {
        let got = enc(c, r);
        assert!((got / want - 1.0).abs() < 0.005, "{c}x{r}: {got} vs {want}");
    }
    near(enc(1, 1) * GF, GF, 1140.0, 0.05); // no tiles: global view only
    let e = encoder_flops(&cfg, &gundam, TileGrid { cols: 2, rows: 3 });
    assert_eq!(e.n_tiles, 6);
    assert!((e.sam() + e.clip() + e.projector() - e.total()).abs() < 1.0);
    // Non-crop modes use one image_size view (docs/deepseek-ocr.md §7.2 table: 268, 388, 1140, 1943).
    for (m, want) in [
        (Mode::Tiny, 268.0),
        (Mode::Small, 388.0),
        (Mode::Base, 1140.0),
        (Mode::Large, 1943.0),
    ] {
        let e = encoder_flops(
            &cfg,
            &PreprocessConfig::from_mode(m),
            TileGrid { cols: 3, rows: 3 },
        );
        assert!(e.tile.is_none());
        near(e.total(), GF, want, 0.5);
    }
}

#[test]
fn prefill_matches_spec_7_2() {
    let cfg = ArchConfig::deepseek_ocr();
    let per_tok = decoder_linear_flops_per_token(&cfg);
    near(per_tok.total(), MF, 817.2, 0.05);
    near(per_tok.dense_mlp, MF, 65.7 - 13.1, 0.1); // dense layer 65.7 incl. 13.1 attention
    let moe = |x: f64| x / 11.0;
    near(moe(per_tok.routed_experts), MF, 41.3, 0.05);
    near(moe(per_tok.shared_experts), MF, 13.8, 0.05);
    near(moe(per_tok.router), MF, 0.16, 0.005);
    near(per_tok.attention_proj / 12.0, MF, 13.1, 0.05);
    near(lm_head_flops_per_position(&cfg), MF, 331.0, 0.5);
    // Spec §7.2 table, Gundam 2×3: S=913.
    let p = prefill_flops(&cfg, 913, 1);
    near(p.attention, GF, 25.6, 0.05);
    near(p.linear.total(), GF, 746.1, 0.05);
    near(p.lm_head, GF, 0.33, 0.005);
    near(prefill_flops(&cfg, 913, 913).lm_head, GF, 302.2, 0.05);
    // Other rows: (S, linear, attention, lm_head all positions).
    for (s, lin, att, head) in [
        (83, 67.8, 0.21, 27.5),
        (283, 231.3, 2.47, 93.7),
        (1213, 991.3, 45.2, 401.5),
    ] {
        let p = prefill_flops(&cfg, s, s);
        near(p.linear.total(), GF, lin, 0.05);
        near(p.attention, GF, att, if att < 1.0 { 0.005 } else { 0.05 });
        near(p.lm_head, GF, head, 0.05);
    }
}

#[test]
fn decode_matches_spec_7_3() {
    let cfg = ArchConfig::deepseek_ocr();
    let d = decode_step_flops(&cfg, 1000);
    near(d.linear.total() + d.lm_head, GF, 1.148, 0.0005);
    near(d.attention, MF, 61.44, 0.005);
    assert_eq!(decode_step_flops(&cfg, 1).attention, 61_440.0);
}

/// Hand-computed for `ArchConfig::tiny()` (128 px view: grid 8, two 4×4 windows per side).
#[test]
fn tiny_config_by_hand() {
    let cfg = ArchConfig::tiny();
    let v = vision_flops(&cfg, 128);
    assert_eq!(v.tokens, 4);
    assert_eq!(v.sam.patch_embed, 3_145_728.0); // 2·64·32·768
    assert_eq!(v.sam.windowed.qkv_proj, 524_288.0); // 2·64·32·128
    assert_eq!(v.sam.windowed.attention, 131_072.0); // 4·64·16·32
    assert_eq!(v.sam.windowed.rel_pos, 32_768.0); // 4·32·4·64
    assert_eq!(v.sam.windowed.mlp, 524_288.0); // 4·64·32·64
    assert_eq!(v.sam.global.attention, 524_288.0); // 4·64²·32
    assert_eq!(v.sam.global.rel_pos, 65_536.0); // 4·32·8·64
    assert_eq!(v.sam.neck, 360_448.0); // 2·64·32·16 + 2·64·16²·9
    assert_eq!(v.sam.compressor, 165_888.0); // 2·16·24·16·9 + 2·4·32·24·9
    assert_eq!(v.sam.total(), 6_522_880.0);
    assert_eq!(v.clip.total(), 170_240.0); // 2·(2·5·4096 + 4·25·32 + 2·5·2·32·64)
    assert_eq!(v.projector, 32_768.0); // 2·4·64·64
    assert_eq!(v.total(), 6_725_888.0);

    let l = decoder_linear_flops_per_token(&cfg);
    assert_eq!(l.attention_proj, 65_536.0); // 2 layers · 2·64·256
    assert_eq!(l.dense_mlp, 36_864.0); // 2·3·64·96
    assert_eq!(l.routed_experts, 24_576.0); // 2 experts · 2·3·64·32
    assert_eq!(l.shared_experts, 12_288.0);
    assert_eq!(l.router, 1_024.0); // 2·64·8
    assert_eq!(l.total(), 140_288.0);
    let p = prefill_flops(&cfg, 10, 1);
    assert_eq!(p.attention, 28_160.0); // 2 layers · 4·64·55
    assert_eq!(p.lm_head, 40_960.0); // 2·64·320
    assert_eq!(p.total(), 1_472_000.0);
    assert_eq!(decode_step_flops(&cfg, 10).total(), 186_368.0);
}
