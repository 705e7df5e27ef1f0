//! Each released configuration's analytic counts and parameters computed by hand (the
//! tests' reference, tests/fixtures/released_configs).

/// Hand computation, per token and layer (H hidden, q = heads·head_dim, kv = kv_heads·head_dim,
/// F intermediate, V vocab, L layers):
///   proj = 2·H·(q + 2·kv) + 2·q·H,   mlp = 6·H·F,   lm_head = 2·H·V,   attention = 4·q·c·L.
pub(crate) struct Hand {
    pub(crate) linear_per_token: f64,
    pub(crate) lm_head: f64,
    pub(crate) attention_per_key: f64,
    pub(crate) params: u64,
    /// Sliding window and the layers that slide (their queries see at most the window).
    pub(crate) window: Option<(f64, f64)>,
}

pub(crate) fn hand(name: &str) -> Hand {
    match name {
        // H 896, q 14·64 = 896, kv 2·64 = 128, F 4864, V 151936, L 24.
        // proj = 2·896·(896+256) + 2·896·896 = 2,064,384 + 1,605,632 = 3,670,016
        // mlp = 6·896·4864 = 26,148,864; per layer 29,818,880; ×24 = 715,653,120
        // lm_head = 2·896·151936 = 272,269,312; attention = 4·896·24 = 86,016 per key
        // params: embed 151936·896 = 136,134,656 (tied: lm_head adds nothing);
        //   per layer 896·1152 + 896·896 + 1152 (q/k/v bias) + 3·896·4864 + 2·896 = 14,912,384;
        //   ×24 = 357,897,216; + final norm 896 → 494,032,768 (the published 0.49 B).
        "qwen2_5_0_5b" => Hand {
            linear_per_token: 715_653_120.0,
            lm_head: 272_269_312.0,
            attention_per_key: 86_016.0,
            params: 494_032_768,
            window: None,
        },
        // H 3584, q 28·128 = 3584, kv 4·128 = 512, F 18944, V 152064, L 28.
        // proj = 2·3584·4608 + 2·3584·3584 = 33,030,144 + 25,690,112 = 58,720,256
        // mlp = 6·3584·18944 = 407,371,776; per layer 466,092,032; ×28 = 13,050,576,896
        // lm_head = 2·3584·152064 = 1,089,994,752; attention = 4·3584·28 = 401,408 per key
        // params: embed + lm_head 2·152064·3584 = 1,089,994,752;
        //   per layer 3584·4608 + 3584·3584 + 4608 + 3·3584·18944 + 2·3584 = 233,057,792;
        //   ×28 = 6,525,618,176; + 3584 → 7,615,616,512 (the published 7.61 B).
        "qwen2_5_7b" => Hand {
            linear_per_token: 13_050_576_896.0,
            lm_head: 1_089_994_752.0,
            attention_per_key: 401_408.0,
            params: 7_615_616_512,
            window: None,
        },
        // H 4096, q 32·128 = 4096, kv 8·128 = 1024, F 14336, V 128256, L 32.
        // proj = 2·4096·6144 + 2·4096·4096 = 50,331,648 + 33,554,432 = 83,886,080
        // mlp = 6·4096·14336 = 352,321,536; per layer 436,207,616; ×32 = 13,958,643,712
        // lm_head = 2·4096·128256 = 1,050,673,152; attention = 4·4096·32 = 524,288 per key
        // params: embed + lm_head 2·128256·4096 = 1,050,673,152;
        //   per layer 4096·6144 + 4096·4096 + 3·4096·14336 + 2·4096 = 218,112,000;
        //   ×32 = 6,979,584,000; + 4096 → 8,030,261,248 (the published 8.03 B).
        "llama3_1_8b" => Hand {
            linear_per_token: 13_958_643_712.0,
            lm_head: 1_050_673_152.0,
            attention_per_key: 524_288.0,
            params: 8_030_261_248,
            window: None,
        },
        // H 1024, q 16·128 = 2048, kv 8·128 = 1024 (head_dim 128, not H ÷ heads), F 3072,
        // V 151936, L 28.
        // proj = 2·1024·(2048+2048) + 2·2048·1024 = 8,388,608 + 4,194,304 = 12,582,912
        // mlp = 6·1024·3072 = 18,874,368; per layer 31,457,280; ×28 = 880,803,840
        // lm_head = 2·1024·151936 = 311,164,928; attention = 4·2048·28 = 229,376 per key
        // params: embed 151936·1024 = 155,582,464 (tied);
        //   per layer 1024·4096 + 2048·1024 + 3·1024·3072 + 2·1024 + 2·128 (q/k norms)
        //   = 15,731,968; ×28 = 440,495,104; + 1024 → 596,049,920 (the published 0.6 B:
        //   0.44 B without the embedding).
        // Llama-3.1-8B's layers (H 4096, q 4096, kv 1024, F 14336, L 32) with V 32768:
        // lm_head = 2·4096·32768 = 268,435,456; params: embed + lm_head 2·32768·4096 =
        // 268,435,456; layers 6,979,584,000; + 4096 → 7,248,023,552 (the published 7.25 B).
        "mistral_7b_v0_3" => Hand {
            linear_per_token: 13_958_643_712.0,
            lm_head: 268_435_456.0,
            attention_per_key: 524_288.0,
            params: 7_248_023_552,
            window: None,
        },
        // Llama-3.1-8B's attention (83,886,080 per layer) and 8 SwiGLU experts of F 14336, top-2:
        // mlp = router 2·4096·8 + 2·6·4096·14336 = 65,536 + 704,643,072 = 704,708,608 per layer;
        // linear (83,886,080 + 704,708,608)·32 = 25,235,030,016; lm_head 2·4096·32000 =
        // 262,144,000; attention 4·4096·32 = 524,288 per key. params: embed + lm_head
        // 262,144,000; per layer 41,943,040 + router 32,768 + 8·3·4096·14336 (1,409,286,144)
        // + 8192 = 1,451,270,144, ×32 = 46,440,644,608; + 4096 → 46,702,792,704 (the published
        // 46.7 B).
        "mixtral_8x7b" => Hand {
            linear_per_token: 25_235_030_016.0,
            lm_head: 262_144_000.0,
            attention_per_key: 524_288.0,
            params: 46_702_792_704,
            window: None,
        },
        // H 2048, q 32·128 = 4096, kv 4·128 = 512, 128 experts of 768, top-8, L 48.
        // proj = 2·2048·5120 + 2·4096·2048 = 37,748,736; mlp = router 2·2048·128 + 8·6·2048·768
        // = 524,288 + 75,497,472 = 76,021,760; linear 113,770,496·48 = 5,460,983,808; lm_head
        // 2·2048·151936 = 622,329,856; attention 4·4096·48 = 786,432 per key. params: embed +
        // lm_head 622,329,856; per layer 18,874,368 + 256 (q/k norms) + 4096 + router 262,144 +
        // 128·3·2048·768 (603,979,776) = 623,120,640, ×48 = 29,909,790,720; + 2048 →
        // 30,532,122,624 (the published 30.5 B).
        "qwen3_30b_a3b" => Hand {
            linear_per_token: 5_460_983_808.0,
            lm_head: 622_329_856.0,
            attention_per_key: 786_432.0,
            params: 30_532_122_624,
            window: None,
        },
        // H 3072, q = kv = 32·96 = 3072 (no GQA), F 8192, V 32064, L 32; q/k/v in one qkv_proj,
        // gate/up in one gate_up_proj (the same math).
        // proj = 2·3072·9216 + 2·3072·3072 = 75,497,472; mlp = 6·3072·8192 = 150,994,944;
        // linear 226,492,416·32 = 7,247,757,312; lm_head 2·3072·32064 = 197,001,216;
        // attention 4·3072·32 = 393,216 per key. params: embed + lm_head 197,001,216; per layer
        // 37,748,736 + 75,497,472 + 6144 = 113,252,352, ×32 = 3,624,075,264; + 3072 →
        // 3,821,079,552 (the published 3.8 B).
        "phi3_mini_4k" => Hand {
            linear_per_token: 7_247_757_312.0,
            lm_head: 197_001_216.0,
            attention_per_key: 393_216.0,
            params: 3_821_079_552,
            // Every layer slides over 2047 keys.
            window: Some((2047.0, 32.0)),
        },
        // H 1152, q 4·256 = 1024, kv 1·256 = 256, F 6912 (GeGLU: the same FLOPs as SwiGLU),
        // V 262144, L 26. proj = 2·1152·1536 + 2·1024·1152 = 5,898,240; mlp = 6·1152·6912 =
        // 47,775,744; linear 53,673,984·26 = 1,395,523,584; lm_head 2·1152·262144 =
        // 603,979,776; attention 4·1024·26 = 106,496 per key. params: embed 301,989,888 (tied);
        // per layer 2,949,120 + 23,887,872 + 4 norms 4608 + q/k norms 512 = 26,842,112, ×26 =
        // 697,894,912; + 1152 → 999,885,952 (the published 1 B).
        "gemma3_1b" => Hand {
            linear_per_token: 1_395_523_584.0,
            lm_head: 603_979_776.0,
            attention_per_key: 106_496.0,
            params: 999_885_952,
            // Window 512 on the local layers: 5 local to each global (5, 11, 17, 23): 22 slide.
            window: Some((512.0, 22.0)),
        },
        // MLA, absorbed (model/dense/mla.rs), H 2048, 16 heads, latent 512 + RoPE 64, nope 128,
        // v 128, no q bottleneck, V 102400, L 27 (layer 0 dense F 10944; 26 MoE layers of 64
        // experts of 1408, top-6, 2 shared experts = one SwiGLU of 2816).
        // attention weights: q 2048·16·192 = 6,291,456; kv_a 2048·576 = 1,179,648; kv_b
        // 512·16·256 = 2,097,152; o 16·128·2048 = 4,194,304 → 13,762,560 per layer; its FLOPs
        // 2× that (the absorbed W_UK and W_UV are kv_b's weights) = 27,525,120.
        // mlp: dense 6·2048·10944 = 134,479,872; MoE router 2·2048·64 = 262,144 + 6·6·2048·1408
        // (103,809,024) + shared 6·2048·2816 (34,603,008) = 138,674,176.
        // linear 27·27,525,120 + 134,479,872 + 26·138,674,176 = 4,483,186,688; lm_head
        // 2·2048·102400 = 419,430,400; core per key 2·16·(576 + 512)·27 = 940,032.
        // params: embed + lm_head 419,430,400; attention 27·13,762,560 = 371,589,120; norms
        // 27·(2·2048 + 512) + 2048 = 126,464; dense MLP 3·2048·10944 = 67,239,936; MoE layers
        // 26·(64·2048 + 64·3·2048·1408 + 3·2048·2816) = 26·571,080,704 = 14,848,098,304
        // → 15,706,484,224 (the published 15.7 B).
        "deepseek_v2_lite" => Hand {
            linear_per_token: 4_483_186_688.0,
            lm_head: 419_430_400.0,
            attention_per_key: 940_032.0,
            params: 15_706_484_224,
            window: None,
        },
        // H 7168, 128 heads, q bottleneck 1536, latent 512 + 64, nope 128, v 128, V 129280,
        // L 61 (3 dense of F 18432, 58 MoE of 256 experts of 2048, top-8, 1 shared expert).
        // attention weights: q_a 7168·1536 = 11,010,048; q_b 1536·128·192 = 37,748,736; kv_a
        // 7168·576 = 4,128,768; kv_b 512·128·256 = 16,777,216; o 128·128·7168 = 117,440,512 →
        // 187,105,280 per layer (FLOPs 2×). mlp: dense 6·7168·18432 = 792,723,456; MoE router
        // 2·7168·256 = 3,670,016 + 8·6·7168·2048 (704,643,072) + shared 6·7168·2048
        // (88,080,384) = 796,393,472. linear 61·374,210,560 + 3·792,723,456 + 58·796,393,472 =
        // 71,395,835,904; lm_head 2·7168·129280 = 1,853,358,080; core per key
        // 2·128·1088·61 = 16,990,208. params: embed + lm_head 1,853,358,080; attention
        // 61·187,105,280 = 11,413,422,080; norms 61·(2·7168 + 512 + 1536) + 7168 = 1,006,592;
        // dense MLPs 3·396,361,728 = 1,189,085,184; MoE layers 58·(256·7168 + 256 bias +
        // 256·3·7168·2048 + 3·7168·2048) = 58·11,320,164,608 = 656,569,547,264 →
        // 671,026,419,200 (the published 671 B, without the multi-token-prediction layer).
        "deepseek_v3" => Hand {
            linear_per_token: 71_395_835_904.0,
            lm_head: 1_853_358_080.0,
            attention_per_key: 16_990_208.0,
            params: 671_026_419_200,
            window: None,
        },
        // H 8192, q 64·128 = 8192, kv 8·128 = 1024, F 28672, V 128256, L 80.
        // proj = 2·8192·10240 + 2·8192·8192 = 167,772,160 + 134,217,728 = 301,989,888
        // mlp = 6·8192·28672 = 1,409,286,144; per layer 1,711,276,032; ×80 = 136,902,082,560
        // lm_head = 2·8192·128256 = 2,101,346,304; attention = 4·8192·80 = 2,621,440 per key
        // params: embed + lm_head 2·128256·8192 = 2,101,346,304;
        //   per layer 8192·10240 + 8192·8192 + 3·8192·28672 + 2·8192 = 855,654,400;
        //   ×80 = 68,452,352,000; + 8192 → 70,553,706,496 (the published 70.6 B).
        "llama3_1_70b" => Hand {
            linear_per_token: 136_902_082_560.0,
            lm_head: 2_101_346_304.0,
            attention_per_key: 2_621_440.0,
            params: 70_553_706_496,
            window: None,
        },
        "qwen3_0_6b" => Hand {
            linear_per_token: 880_803_840.0,
            lm_head: 311_164_928.0,
            attention_per_key: 229_376.0,
            params: 596_049_920,
            window: None,
        },
        _ => panic!("{name}"),
    }
}
