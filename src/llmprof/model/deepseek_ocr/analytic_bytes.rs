//! Parameter counts and bytes of DeepSeek-OCR (docs/deepseek-ocr.md §6, §7.3): parameters and weight bytes by
//! module (they sum to the checkpoint's tensor list, `weights::expected_tensors`), KV-cache bytes,
//! and the bytes one decode step moves.

use super::analytic::moe_layers;
use super::arch::ArchConfig;
use super::arch_ocr2::{QueryEncoderConfig, TokenLayout};
use serde::Serialize;

/// Parameters of one routed expert (gate, up, down).
pub fn expert_params(cfg: &ArchConfig) -> u64 {
    3 * (cfg.decoder.hidden_size * cfg.decoder.moe_intermediate_size) as u64
}

/// Parameters of one decoder layer, by module.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct DecoderLayerParams {
    pub attention: u64,
    /// input_layernorm + post_attention_layernorm.
    pub norms: u64,
    pub dense_mlp: u64,
    /// All routed experts of the layer.
    pub routed_experts: u64,
    pub shared_experts: u64,
    pub router: u64,
}

impl DecoderLayerParams {
    pub fn total(&self) -> u64 {
        self.attention
            + self.norms
            + self.dense_mlp
            + self.routed_experts
            + self.shared_experts
            + self.router
    }
}

/// Parameter counts by module (docs/deepseek-ocr.md §6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ParamCounts {
    /// Incl. pos_embed, neck and compressor.
    pub sam: u64,
    /// The encoder after SAM: CLIP-L incl. its unused patch_embedding, or DeepSeek-OCR-2's
    /// query encoder incl. its query tables.
    pub clip: u64,
    /// Name of the encoder after SAM in reports (`clip`, `query_encoder`).
    pub encoder_name: &'static str,
    /// Projector linear + image_newline (DeepSeek-OCR only) + view_seperator.
    pub projector: u64,
    pub embedding: u64,
    pub layers: Vec<DecoderLayerParams>,
    pub final_norm: u64,
    pub lm_head: u64,
}

impl ParamCounts {
    pub fn decoder(&self) -> u64 {
        self.embedding
            + self
                .layers
                .iter()
                .map(DecoderLayerParams::total)
                .sum::<u64>()
            + self.final_norm
            + self.lm_head
    }
    pub fn total(&self) -> u64 {
        self.sam + self.clip + self.projector + self.decoder()
    }
    /// (module, params) rows; decoder layers as `decoder.layers.{i}.{module}`, zero rows left out.
    pub fn rows(&self) -> Vec<(String, u64)> {
        let mut v = vec![
            ("sam".to_string(), self.sam),
            (self.encoder_name.to_string(), self.clip),
            ("projector".into(), self.projector),
            ("embed_tokens".into(), self.embedding),
        ];
        for (i, l) in self.layers.iter().enumerate() {
            for (name, n) in [
                ("attention", l.attention),
                ("norms", l.norms),
                ("dense_mlp", l.dense_mlp),
                ("router", l.router),
                ("routed_experts", l.routed_experts),
                ("shared_experts", l.shared_experts),
            ] {
                if n > 0 {
                    v.push((format!("decoder.layers.{i}.{name}"), n));
                }
            }
        }
        v.push(("decoder.norm".into(), self.final_norm));
        v.push(("lm_head".into(), self.lm_head));
        v
    }
}

/// Parameters of the encoder after SAM: CLIP-L (with its unused patch embedding), or the query
/// encoder's layers, final norm and query tables.
fn encoder_params(cfg: &ArchConfig) -> i64 {
    if let Some(c) = &cfg.clip {
        let cw = c.width;
        return cw
            + cw * 3 * c.patch_size * c.patch_size
            + c.num_positions * cw
            + 2 * cw
            + c.layers
                * (4 * cw
                    + (3 * cw * cw + 3 * cw)
                    + (cw * cw + cw)
                    + 2 * cw * c.mlp_dim
                    + c.mlp_dim
                    + cw);
    }
    let Some(q) = &cfg.query_encoder else {
        return 0;
    };
    let h = q.hidden_size;
    let (qd, kv) = (
        q.num_attention_heads * q.head_dim,
        q.num_key_value_heads * q.head_dim,
    );
    let layer = 2 * h + (qd * h + qd) + 2 * (kv * h + kv) + h * qd + 3 * h * q.intermediate_size;
    let queries: i64 = q
        .query_views
        .iter()
        .map(|&side| QueryEncoderConfig::queries(side, cfg.pixels_per_token()) * h)
        .sum();
    q.num_hidden_layers * layer + h + queries
}

/// Parameter counts from the config dims (the tensor list of docs/deepseek-ocr.md §6 / `weights::expected_tensors`).
pub fn params_by_module(cfg: &ArchConfig) -> ParamCounts {
    let s = &cfg.sam;
    let (w, m, hd) = (s.width, s.mlp_dim, s.width / s.heads);
    let g = cfg.sam_pos_grid();
    let block = |l: i64| {
        4 * w + (3 * w * w + 3 * w) + (w * w + w) + 2 * (2 * l - 1) * hd + 2 * w * m + m + w
    };
    let blocks: i64 = (0..s.depth)
        .map(|i| {
            block(if s.global_attn_indexes.contains(&i) {
                g
            } else {
                s.window_size
            })
        })
        .sum();
    let o = s.out_chans;
    let (compressor, _) = s
        .downsample_channels
        .iter()
        .fold((0, o), |(acc, cin), &cout| (acc + cout * cin * 9, cout));
    let sam = (w * 3 * s.patch_size * s.patch_size + w)
        + g * g * w
        + blocks
        + (o * w + 2 * o + o * o * 9 + 2 * o)
        + compressor;
    let clip = encoder_params(cfg);
    let p = &cfg.projector;
    let newline = match cfg.token_layout() {
        TokenLayout::RowsWithNewlines => p.n_embed,
        TokenLayout::Queries => 0,
    };
    let projector = p.n_embed * p.input_dim + p.n_embed + newline + p.n_embed;
    let d = &cfg.decoder;
    let h = d.hidden_size;
    let (q, kv) = (
        d.num_attention_heads * d.head_dim,
        d.num_key_value_heads * d.head_dim,
    );
    let layers = (0..d.num_hidden_layers)
        .map(|i| {
            let dense = i < d.first_k_dense_replace;
            let moe = |x: i64| if dense { 0 } else { x as u64 };
            DecoderLayerParams {
                attention: (2 * h * q + 2 * h * kv) as u64,
                norms: 2 * h as u64,
                dense_mlp: if dense {
                    (3 * h * d.intermediate_size) as u64
                } else {
                    0
                },
                routed_experts: moe(d.n_routed_experts) * expert_params(cfg),
                shared_experts: moe(3 * h * cfg.shared_intermediate()),
                router: moe(d.n_routed_experts * h),
            }
        })
        .collect();
    ParamCounts {
        sam: sam as u64,
        clip: clip as u64,
        encoder_name: cfg.encoder_name(),
        projector: projector as u64,
        embedding: (d.vocab_size * h) as u64,
        layers,
        final_norm: h as u64,
        lm_head: (d.vocab_size * h) as u64,
    }
}

/// (module, bytes) for every row of [`ParamCounts::rows`], all weights stored as `dtype_bytes`.
pub fn weight_bytes(cfg: &ArchConfig, dtype_bytes: u64) -> Vec<(String, u64)> {
    params_by_module(cfg)
        .rows()
        .into_iter()
        .map(|(name, n)| (name, n * dtype_bytes))
        .collect()
}

/// KV-cache bytes per token: 2 (K,V) · layers · kv_heads · head_dim · dtype_bytes.
pub fn kv_bytes_per_token(cfg: &ArchConfig, dtype_bytes: u64) -> u64 {
    let d = &cfg.decoder;
    2 * (d.num_hidden_layers * d.num_key_value_heads * d.head_dim) as u64 * dtype_bytes
}

/// Expected number of distinct routed experts one MoE layer uses for `batch` tokens under uniform
/// routing: E·(1 − ((E−k)/E)^B) (docs/deepseek-ocr.md §7.3).
pub fn expected_distinct_experts(cfg: &ArchConfig, batch: i64) -> f64 {
    crate::model::module_work::expected_distinct_experts(
        cfg.decoder.n_routed_experts as f64,
        cfg.decoder.num_experts_per_tok as f64,
        batch,
    )
}

/// Bytes one decode step moves (all `batch` rows together).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DecodeBytes {
    pub batch: i64,
    pub context_len: i64,
    pub expected_experts_per_layer: f64,
    /// `batch` rows of `embed_tokens` (gather, not the whole table).
    pub embedding_rows: f64,
    pub attention: f64,
    pub norms: f64,
    pub dense_mlp: f64,
    pub shared_experts: f64,
    pub routers: f64,
    /// Expected distinct routed experts × MoE layers.
    pub routed_experts: f64,
    pub lm_head: f64,
    /// batch · kv_bytes_per_token · context.
    pub kv_read: f64,
    /// batch · kv_bytes_per_token.
    pub kv_write: f64,
}

impl DecodeBytes {
    /// Weight bytes read (everything but the KV cache).
    pub fn weights(&self) -> f64 {
        self.embedding_rows
            + self.attention
            + self.norms
            + self.dense_mlp
            + self.shared_experts
            + self.routers
            + self.routed_experts
            + self.lm_head
    }
    pub fn total(&self) -> f64 {
        self.weights() + self.kv_read + self.kv_write
    }
}

/// Bytes per decode step (docs/deepseek-ocr.md §7.3): each weight read once per step, routed experts by the
/// expected distinct count for `batch` rows, KV read for `context_len` positions and written once.
pub fn decode_step_bytes(
    cfg: &ArchConfig,
    context_len: i64,
    batch: i64,
    dtype_bytes: u64,
) -> DecodeBytes {
    let p = params_by_module(cfg);
    let b = dtype_bytes as f64;
    let sum = |f: fn(&DecoderLayerParams) -> u64| p.layers.iter().map(f).sum::<u64>() as f64 * b;
    let d = &cfg.decoder;
    let experts = expected_distinct_experts(cfg, batch);
    let kv = kv_bytes_per_token(cfg, dtype_bytes) as f64 * batch as f64;
    DecodeBytes {
        batch,
        context_len,
        expected_experts_per_layer: experts,
        embedding_rows: batch.min(d.vocab_size) as f64 * d.hidden_size as f64 * b,
        attention: sum(|l| l.attention),
        norms: sum(|l| l.norms) + p.final_norm as f64 * b,
        dense_mlp: sum(|l| l.dense_mlp),
        shared_experts: sum(|l| l.shared_experts),
        routers: sum(|l| l.router),
        routed_experts: moe_layers(cfg) * experts * expert_params(cfg) as f64 * b,
        lm_head: p.lm_head as f64 * b,
        kv_read: kv * context_len as f64,
        kv_write: kv,
    }
}

#[cfg(test)]
mod tests {
    use super::super::analytic::spec_check::{near, GF, MF};
    use super::*;

    #[test]
    fn real_config_matches_spec_6() {
        let cfg = ArchConfig::deepseek_ocr();
        let p = params_by_module(&cfg);
        assert_eq!(p.total(), 3_336_106_240);
        assert_eq!(p.decoder(), 2_934_734_080);
        assert_eq!(p.sam, 95_569_152);
        assert_eq!(p.clip, 303_177_728);
        assert_eq!(p.projector, 2_625_280);
        assert_eq!(p.embedding, 165_478_400);
        assert_eq!(p.lm_head, 165_478_400);
        let sum = |f: fn(&DecoderLayerParams) -> u64| p.layers.iter().map(f).sum::<u64>();
        assert_eq!(sum(|l| l.attention), 78_643_200);
        assert_eq!(sum(|l| l.dense_mlp), 26_296_320);
        assert_eq!(sum(|l| l.routed_experts), 2_422_210_560);
        assert_eq!(sum(|l| l.shared_experts), 75_694_080);
        assert_eq!(sum(|l| l.router), 901_120);
        // Active per token excl. embed/head: docs/deepseek-ocr.md §6 says 408,648,960 (incl. norms).
        let active = sum(|l| l.attention + l.dense_mlp + l.shared_experts + l.router + l.norms)
            + 11 * 6 * expert_params(&cfg)
            + p.final_norm;
        assert_eq!(active, 408_648_960);
        assert_eq!(active + p.lm_head, 574_127_360);
        let bytes: u64 = weight_bytes(&cfg, 2).iter().map(|(_, b)| b).sum();
        assert_eq!(bytes, 6_672_212_480);
    }

    /// Hand-computed decoder params of `ArchConfig::tiny()`.
    #[test]
    fn tiny_decoder_by_hand() {
        let p = params_by_module(&ArchConfig::tiny());
        assert_eq!(p.embedding, 20_480); // 320·64
        assert_eq!(p.layers[0].attention, 16_384); // 4·64²
        assert_eq!(p.layers[0].dense_mlp, 18_432); // 3·64·96
        assert_eq!(p.layers[1].routed_experts, 49_152); // 8·3·64·32
        assert_eq!(p.layers[1].shared_experts, 6_144); // 3·64·32
        assert_eq!(p.layers[1].router, 512); // 8·64
        assert_eq!(p.decoder(), 148_288);
    }

    #[test]
    fn decode_bytes_match_spec_7_3() {
        let cfg = ArchConfig::deepseek_ocr();
        assert_eq!(kv_bytes_per_token(&cfg, 2), 61_440);
        let b1 = decode_step_bytes(&cfg, 1000, 1, 2);
        near(b1.weights(), GF, 1.148, 0.0005);
        near(
            b1.weights() - b1.routed_experts - b1.embedding_rows - b1.norms,
            MF,
            694.0,
            0.5,
        );
        near(b1.attention, MF, 157.0, 0.5);
        near(b1.dense_mlp, MF, 53.0, 0.5);
        near(b1.shared_experts, MF, 151.0, 0.5);
        near(b1.routers, MF, 2.0, 0.5);
        near(b1.lm_head, MF, 331.0, 0.5);
        near(b1.routed_experts, MF, 454.0, 0.5);
        near(b1.kv_read, MF, 61.44, 0.005);
        assert_eq!(b1.kv_write, 61_440.0);
        // Batch table: (B, distinct experts, routed GB).
        for (b, experts, gb) in [
            (1, 6.0, 0.45),
            (2, 11.4, 0.87),
            (4, 20.8, 1.58),
            (8, 34.9, 2.64),
            (16, 50.8, 3.84),
            (32, 61.3, 4.64),
        ] {
            let x = decode_step_bytes(&cfg, 1, b, 2);
            near(x.expected_experts_per_layer, 1.0, experts, 0.05);
            near(x.routed_experts, GF, gb, 0.005);
            assert_eq!(x.kv_write, 61_440.0 * b as f64);
        }
        near(
            decode_step_bytes(&cfg, 1, 1024, 2).routed_experts,
            GF,
            4.84,
            0.005,
        );
    }

    /// Hand-computed for `ArchConfig::tiny()`: 2 layers (1 MoE), 8 experts, top-2, hidden 64.
    #[test]
    fn tiny_decode_bytes_by_hand() {
        let cfg = ArchConfig::tiny();
        assert_eq!(kv_bytes_per_token(&cfg, 2), 512); // 2·2·4·16·2
        assert_eq!(expected_distinct_experts(&cfg, 2), 3.5); // 8·(1 − (6/8)²)
        let b = decode_step_bytes(&cfg, 10, 2, 2);
        assert_eq!(b.routed_experts, 43_008.0); // 1 layer · 3.5 · 6144 · 2
                                                // embed rows 2·64·2 + attention 2·4·64²·2 + norms 5·64·2 + dense 3·64·96·2 + shared
                                                // 3·64·32·2 + router 8·64·2 + routed 43,008 + lm_head 320·64·2.
        assert_eq!(b.weights(), 200_576.0);
        assert_eq!(b.kv_read, 10_240.0); // 2 rows · 512 · 10
        assert_eq!(b.total(), 211_840.0);
    }

    #[test]
    fn ocr2_parameters_match_the_released_checkpoint() {
        // transformers' DeepseekOcr2ForConditionalGeneration at the released config counts
        // 3,389,119,360 parameters: SAM 94,979,328; query encoder 357,897,216 + norm 896 +
        // queries 129,024 + 229,376; projector 1,148,160 + separator 1,280; decoder as v1.
        let p = params_by_module(&ArchConfig::deepseek_ocr2());
        assert_eq!(p.sam, 94_979_328);
        assert_eq!(p.clip, 357_897_216 + 896 + 129_024 + 229_376);
        assert_eq!(p.encoder_name, "query_encoder");
        assert_eq!(p.projector, 1_148_160 + 1_280);
        assert_eq!(
            p.decoder(),
            params_by_module(&ArchConfig::deepseek_ocr()).decoder()
        );
        assert_eq!(p.total(), 3_389_119_360);
    }
}
