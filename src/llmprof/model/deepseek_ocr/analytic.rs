//! Analytic FLOPs of DeepSeek-OCR per region (docs/deepseek-ocr.md §7), derived from `ArchConfig` and the actual
//! shapes. 1 FLOP = 1 multiply or 1 add (matmul = 2·M·N·K); only matmuls, convolutions and einsums
//! are counted (norms, activations, softmax and adds are not). Parameters and bytes: `analytic_bytes`.

use super::arch::ArchConfig;
use super::views::{PreprocessConfig, TileGrid};
use serde::Serialize;

pub use super::analytic_bytes::{
    decode_step_bytes, expected_distinct_experts, expert_params, kv_bytes_per_token,
    params_by_module, weight_bytes, DecodeBytes, DecoderLayerParams, ParamCounts,
};

/// FLOPs of a stack of transformer blocks, summed over the blocks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct BlockFlops {
    /// qkv and output projections.
    pub qkv_proj: f64,
    /// q·kᵀ and p·v.
    pub attention: f64,
    /// Decomposed relative-position einsums (SAM only).
    pub rel_pos: f64,
    pub mlp: f64,
}

impl BlockFlops {
    pub fn total(&self) -> f64 {
        self.qkv_proj + self.attention + self.rel_pos + self.mlp
    }

    fn scale(self, k: f64) -> BlockFlops {
        BlockFlops {
            qkv_proj: self.qkv_proj * k,
            attention: self.attention * k,
            rel_pos: self.rel_pos * k,
            mlp: self.mlp * k,
        }
    }
}

/// SAM FLOPs of one view (docs/deepseek-ocr.md §7.1).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct SamFlops {
    pub patch_embed: f64,
    /// All windowed blocks (attention over padded windows, qkv/proj on padded tokens).
    pub windowed: BlockFlops,
    /// All global-attention blocks.
    pub global: BlockFlops,
    pub neck: f64,
    /// Stride-2 convs `net_2`, `net_3`, ….
    pub compressor: f64,
}

impl SamFlops {
    pub fn total(&self) -> f64 {
        self.patch_embed + self.windowed.total() + self.global.total() + self.neck + self.compressor
    }
}

/// Vision FLOPs of ONE view of side `view_size` px: SAM → CLIP (or the query encoder) →
/// projector.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RegionFlops {
    pub view_size: i64,
    /// Vision tokens of the view (grid side², before newline/separator vectors).
    pub tokens: i64,
    pub sam: SamFlops,
    /// The encoder after SAM: CLIP-L, or DeepSeek-OCR-2's query encoder
    /// ([`ArchConfig::encoder_name`]).
    pub clip: BlockFlops,
    pub projector: f64,
}

impl RegionFlops {
    pub fn total(&self) -> f64 {
        self.sam.total() + self.clip.total() + self.projector
    }
}

/// `ceil(a / b)` for positive b.
fn ceil_div(a: i64, b: i64) -> i64 {
    (a + b - 1) / b
}

/// Side of the SAM token grid for a view (view / patch).
pub fn sam_grid(cfg: &ArchConfig, view_size: i64) -> i64 {
    view_size / cfg.sam.patch_size
}

/// Side of the vision-token grid after the stride-2 compressor (k3, s2, p1 halves, rounding up).
pub fn token_grid(cfg: &ArchConfig, view_size: i64) -> i64 {
    cfg.sam
        .downsample_channels
        .iter()
        .fold(sam_grid(cfg, view_size), |side, _| ceil_div(side, 2))
}

/// Per-view vision FLOPs (docs/deepseek-ocr.md §7.1 formulas, from the config dims). `view_size` in px.
pub fn vision_flops(cfg: &ArchConfig, view_size: i64) -> RegionFlops {
    let s = &cfg.sam;
    let (w, m, ws) = (s.width as f64, s.mlp_dim as f64, s.window_size);
    let g = sam_grid(cfg, view_size);
    let n = (g * g) as f64;
    let padded = ceil_div(g, ws) * ws;
    let np = (padded * padded) as f64;
    let n_global = s.global_attn_indexes.len() as f64;
    let n_windowed = s.depth as f64 - n_global;
    // Rel-pos: two einsums (h and w) of Q [tokens, head_dim] with [L, head_dim] tables per head;
    // heads·head_dim = width, so 2·2·tokens·L·width.
    let windowed = BlockFlops {
        qkv_proj: 2.0 * np * w * (3.0 * w + w),
        attention: 4.0 * np * (ws * ws) as f64 * w,
        rel_pos: 4.0 * w * ws as f64 * np,
        mlp: 4.0 * n * w * m,
    };
    let global = BlockFlops {
        qkv_proj: 2.0 * n * w * (3.0 * w + w),
        attention: 4.0 * n * n * w,
        rel_pos: 4.0 * w * g as f64 * n,
        mlp: 4.0 * n * w * m,
    };
    let o = s.out_chans as f64;
    let mut compressor = 0.0;
    let (mut side, mut cin) = (g, s.out_chans);
    for &cout in &s.downsample_channels {
        side = ceil_div(side, 2);
        compressor += 2.0 * (side * side) as f64 * (cout * cin * 9) as f64;
        cin = cout;
    }
    let sam = SamFlops {
        patch_embed: 2.0 * n * w * (3 * s.patch_size * s.patch_size) as f64,
        windowed: windowed.scale(n_windowed),
        global: global.scale(n_global),
        neck: 2.0 * n * w * o + 2.0 * n * o * o * 9.0,
        compressor,
    };
    let tokens = side * side;
    let clip = encoder_block_flops(cfg, tokens);
    let p = &cfg.projector;
    RegionFlops {
        view_size,
        tokens,
        sam,
        clip,
        projector: 2.0 * tokens as f64 * (p.input_dim * p.n_embed) as f64,
    }
}

/// FLOPs of the encoder after SAM over one view of `tokens` SAM tokens: CLIP-L over the tokens
/// and CLS, or DeepSeek-OCR-2's query encoder over the tokens and as many queries (all 2N×2N
/// scores computed, as SDPA with a mask does).
fn encoder_block_flops(cfg: &ArchConfig, tokens: i64) -> BlockFlops {
    if let Some(c) = &cfg.clip {
        let t1 = (tokens + 1) as f64; // + CLS
        let cw = c.width as f64;
        return BlockFlops {
            qkv_proj: 2.0 * t1 * (cw * 3.0 * cw + cw * cw),
            attention: 4.0 * t1 * t1 * cw,
            rel_pos: 0.0,
            mlp: 2.0 * t1 * 2.0 * cw * c.mlp_dim as f64,
        }
        .scale(c.layers as f64);
    }
    let Some(q) = &cfg.query_encoder else {
        return BlockFlops::default();
    };
    let t = (2 * tokens) as f64;
    let h = q.hidden_size as f64;
    let qd = (q.num_attention_heads * q.head_dim) as f64;
    let kv = (q.num_key_value_heads * q.head_dim) as f64;
    BlockFlops {
        qkv_proj: 2.0 * t * h * (qd + 2.0 * kv) + 2.0 * t * qd * h,
        attention: 4.0 * t * t * qd,
        rel_pos: 0.0,
        mlp: 2.0 * t * 3.0 * h * q.intermediate_size as f64,
    }
    .scale(q.num_hidden_layers as f64)
}

/// Vision FLOPs of one image: the global (or single) view plus `n_tiles` tiles.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct EncoderFlops {
    pub global: RegionFlops,
    /// Per-tile FLOPs; None without tiles.
    pub tile: Option<RegionFlops>,
    pub n_tiles: i64,
}

impl EncoderFlops {
    fn sum(&self, f: impl Fn(&RegionFlops) -> f64) -> f64 {
        f(&self.global)
            + self
                .tile
                .as_ref()
                .map_or(0.0, |t| self.n_tiles as f64 * f(t))
    }
    pub fn sam(&self) -> f64 {
        self.sum(|r| r.sam.total())
    }
    pub fn clip(&self) -> f64 {
        self.sum(|r| r.clip.total())
    }
    pub fn projector(&self) -> f64 {
        self.sum(|r| r.projector)
    }
    pub fn total(&self) -> f64 {
        self.sum(RegionFlops::total)
    }
}

/// Views of one image (docs/deepseek-ocr.md §3.5, §4): crop mode = global `base_size` view + cols·rows tiles of
/// `image_size` (none when the grid is 1×1); otherwise one `image_size` view.
pub fn encoder_flops(cfg: &ArchConfig, pre: &PreprocessConfig, grid: TileGrid) -> EncoderFlops {
    if pre.crop_mode {
        let n_tiles = if grid.has_tiles() {
            (grid.cols * grid.rows) as i64
        } else {
            0
        };
        EncoderFlops {
            global: vision_flops(cfg, pre.base_size as i64),
            tile: (n_tiles > 0).then(|| vision_flops(cfg, pre.image_size as i64)),
            n_tiles,
        }
    } else {
        EncoderFlops {
            global: vision_flops(cfg, pre.image_size as i64),
            tile: None,
            n_tiles: 0,
        }
    }
}

/// Decoder matmul FLOPs (lm_head excluded), summed over layers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct DecoderLinearFlops {
    /// q, k, v, o projections.
    pub attention_proj: f64,
    /// Dense SwiGLU of the first `first_k_dense_replace` layers.
    pub dense_mlp: f64,
    /// `num_experts_per_tok` routed SwiGLU experts per MoE layer.
    pub routed_experts: f64,
    pub shared_experts: f64,
    pub router: f64,
}

impl DecoderLinearFlops {
    pub fn total(&self) -> f64 {
        self.attention_proj
            + self.dense_mlp
            + self.routed_experts
            + self.shared_experts
            + self.router
    }

    fn scale(self, k: f64) -> Self {
        DecoderLinearFlops {
            attention_proj: self.attention_proj * k,
            dense_mlp: self.dense_mlp * k,
            routed_experts: self.routed_experts * k,
            shared_experts: self.shared_experts * k,
            router: self.router * k,
        }
    }
}

fn dense_layers(cfg: &ArchConfig) -> f64 {
    cfg.decoder.first_k_dense_replace as f64
}

pub(super) fn moe_layers(cfg: &ArchConfig) -> f64 {
    (cfg.decoder.num_hidden_layers - cfg.decoder.first_k_dense_replace) as f64
}

/// Width of q (= of k and v: no GQA) = heads · head_dim.
fn attn_width(cfg: &ArchConfig) -> f64 {
    (cfg.decoder.num_attention_heads * cfg.decoder.head_dim) as f64
}

/// Decoder matmul FLOPs for ONE token (docs/deepseek-ocr.md §7.2: 817.2 MFLOP for the real config).
pub fn decoder_linear_flops_per_token(cfg: &ArchConfig) -> DecoderLinearFlops {
    let d = &cfg.decoder;
    let h = d.hidden_size as f64;
    let kv = (d.num_key_value_heads * d.head_dim) as f64;
    let swiglu = |f: i64| 2.0 * 3.0 * h * f as f64;
    DecoderLinearFlops {
        attention_proj: d.num_hidden_layers as f64 * 2.0 * h * (2.0 * attn_width(cfg) + 2.0 * kv),
        dense_mlp: dense_layers(cfg) * swiglu(d.intermediate_size),
        routed_experts: moe_layers(cfg)
            * d.num_experts_per_tok as f64
            * swiglu(d.moe_intermediate_size),
        shared_experts: moe_layers(cfg) * swiglu(cfg.shared_intermediate()),
        router: moe_layers(cfg) * 2.0 * h * d.n_routed_experts as f64,
    }
}

/// FLOPs of lm_head for one position (2·hidden·vocab).
pub fn lm_head_flops_per_position(cfg: &ArchConfig) -> f64 {
    2.0 * (cfg.decoder.hidden_size * cfg.decoder.vocab_size) as f64
}

/// Decoder prefill FLOPs of one prompt of `prompt_len` tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PrefillFlops {
    pub prompt_len: i64,
    pub logits_positions: i64,
    /// Matmuls over all `prompt_len` tokens.
    pub linear: DecoderLinearFlops,
    /// Causal q·kᵀ and p·v over all layers: layers·2·2·width·S(S+1)/2.
    pub attention: f64,
    pub lm_head: f64,
}

impl PrefillFlops {
    pub fn total(&self) -> f64 {
        self.linear.total() + self.attention + self.lm_head
    }
}

/// Prefill FLOPs (docs/deepseek-ocr.md §7.2); `logits_positions` = positions whose logits are computed (our
/// implementation: 1, the last; HF: all `prompt_len`).
pub fn prefill_flops(cfg: &ArchConfig, prompt_len: i64, logits_positions: i64) -> PrefillFlops {
    let s = prompt_len as f64;
    PrefillFlops {
        prompt_len,
        logits_positions,
        linear: decoder_linear_flops_per_token(cfg).scale(s),
        attention: cfg.decoder.num_hidden_layers as f64 * 4.0 * attn_width(cfg) * s * (s + 1.0)
            / 2.0,
        lm_head: logits_positions as f64 * lm_head_flops_per_position(cfg),
    }
}

/// FLOPs of one decode step of one sequence (one new token, `context_len` keys incl. itself).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DecodeFlops {
    pub context_len: i64,
    pub linear: DecoderLinearFlops,
    /// layers·4·width·context.
    pub attention: f64,
    pub lm_head: f64,
}

impl DecodeFlops {
    pub fn total(&self) -> f64 {
        self.linear.total() + self.attention + self.lm_head
    }
}

/// Spec §7.3: 1.148 GFLOP + 61,440·c for the real config.
pub fn decode_step_flops(cfg: &ArchConfig, context_len: i64) -> DecodeFlops {
    DecodeFlops {
        context_len,
        linear: decoder_linear_flops_per_token(cfg),
        attention: cfg.decoder.num_hidden_layers as f64
            * 4.0
            * attn_width(cfg)
            * context_len as f64,
        lm_head: lm_head_flops_per_position(cfg),
    }
}

/// Comparison against the spec's printed numbers, shared by the analytic test modules.
#[cfg(test)]
pub(crate) mod spec_check {
    /// `got` (in `unit`s) equals a spec value printed with precision `half` (half its last digit).
    pub fn near(got: f64, unit: f64, want: f64, half: f64) {
        let g = got / unit;
        assert!((g - want).abs() <= half, "got {g}, spec {want} ± {half}");
    }
    pub const GF: f64 = 1e9;
    pub const MF: f64 = 1e6;
}

#[cfg(test)]
mod tests;
