//! Static compute report (`static_compute.json` / `static_compute.md`): per-module parameters,
//! FLOPs, weight bytes, largest transient and KV cache for one mode, tile grid and prompt length.

use super::analytic::{
    decode_step_bytes, decode_step_flops, encoder_flops, kv_bytes_per_token, params_by_module,
    prefill_flops, token_grid, DecodeBytes, DecodeFlops, DecoderLinearFlops, EncoderFlops,
    PrefillFlops, RegionFlops,
};
use super::arch::ArchConfig;
use super::prompt::image_token_count;
use super::views::{PreprocessConfig, TileGrid};
use anyhow::{ensure, Result};
use serde::Serialize;
use std::fmt::Write;

/// What the report is computed for; `batch` identical requests.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StaticInputs {
    pub preprocess: PreprocessConfig,
    pub grid: TileGrid,
    /// Prompt tokens per request (BOS + image tokens + text).
    pub prompt_len: i64,
    /// Positions whose logits prefill computes (ours: 1).
    pub logits_positions: i64,
    /// Context (keys incl. the new token) of the decode step reported.
    pub decode_context_len: i64,
    pub batch: i64,
    /// Bytes per stored element of weights, activations and KV (2 for bf16).
    pub dtype_bytes: u64,
}

/// One module. FLOPs and bytes cover all `batch` requests.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ModuleRow {
    pub module: String,
    pub params: u64,
    /// Vision (for vision modules) or decoder prefill FLOPs.
    pub flops: f64,
    /// FLOPs of one decode step (all rows).
    pub decode_step_flops: f64,
    pub weight_bytes: u64,
    /// Bytes one decode step reads/writes (routed experts: expected distinct ones; KV on attention).
    pub decode_step_bytes: f64,
    /// Largest single tensor the module creates during vision/prefill.
    pub activation_bytes: u64,
    /// KV cache at `decode_context_len` (attention row only).
    pub kv_cache_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StaticReport {
    pub inputs: StaticInputs,
    /// `<image>` tokens per request.
    pub image_tokens: usize,
    pub rows: Vec<ModuleRow>,
    /// Sums of the rows; `activation_bytes` is the max.
    pub total: ModuleRow,
    /// Per request.
    pub encoder: EncoderFlops,
    /// Per request.
    pub prefill: PrefillFlops,
    /// Per sequence.
    pub decode_flops: DecodeFlops,
    /// Whole batch.
    pub decode_bytes: DecodeBytes,
}

/// Largest SAM/CLIP/projector tensors for `views` views of side `view`: SAM global rel-pos bias
/// [views,heads,N,N], windowed bias per window, MLP hidden [views,N,mlp]; CLIP MLP hidden
/// [views,T+1,mlp]; projector input [views,T,input_dim]. Elements, not bytes.
fn vision_activation_elems(cfg: &ArchConfig, views: i64, view: i64) -> [i64; 3] {
    let s = &cfg.sam;
    let g = view / s.patch_size;
    let n = g * g;
    let ws = s.window_size;
    let padded = (g + ws - 1) / ws * ws;
    let global_bias = if s.global_attn_indexes.is_empty() {
        0
    } else {
        s.heads * n * n
    };
    let window_bias = s.heads * padded * padded * ws * ws;
    let sam = views
        * [global_bias, window_bias, n * s.mlp_dim]
            .into_iter()
            .max()
            .unwrap_or(0);
    let t = token_grid(cfg, view).pow(2);
    let clip = match (&cfg.clip, &cfg.query_encoder) {
        (Some(c), _) => views * (t + 1) * c.mlp_dim,
        (None, Some(q)) => views * 2 * t * q.intermediate_size,
        (None, None) => 0,
    };
    let projector = views * t * cfg.projector.input_dim;
    [sam, clip, projector]
}

fn check(cfg: &ArchConfig, i: &StaticInputs) -> Result<()> {
    ensure!(i.prompt_len >= 1, "prompt_len must be >= 1");
    ensure!(i.batch >= 1, "batch must be >= 1");
    ensure!(i.dtype_bytes >= 1, "dtype_bytes must be >= 1");
    ensure!(
        i.logits_positions >= 0 && i.logits_positions <= i.prompt_len,
        "logits_positions {} not in 0..={}",
        i.logits_positions,
        i.prompt_len
    );
    ensure!(i.decode_context_len >= 1, "decode_context_len must be >= 1");
    let p = cfg.pixels_per_token() as u32;
    for v in [i.preprocess.base_size, i.preprocess.image_size] {
        ensure!(v % p == 0, "view size {v} is not a multiple of {p} px");
    }
    Ok(())
}

/// Builds the report; rows: sam, clip, projector, embed_tokens, decoder.{attention, norms,
/// dense_mlp, router, routed_experts, shared_experts} (all layers), lm_head.
pub fn static_report(cfg: &ArchConfig, inputs: &StaticInputs) -> Result<StaticReport> {
    check(cfg, inputs)?;
    let i = inputs;
    let (b, bf) = (i.batch, i.batch as f64);
    let eb = i.dtype_bytes;
    let p = params_by_module(cfg);
    let enc = encoder_flops(cfg, &i.preprocess, i.grid);
    let pre = prefill_flops(cfg, i.prompt_len, i.logits_positions);
    let dfl = decode_step_flops(cfg, i.decode_context_len);
    let dby = decode_step_bytes(cfg, i.decode_context_len, b, eb);

    let mut act = vision_activation_elems(cfg, b, enc.global.view_size);
    if let Some(t) = &enc.tile {
        let a = vision_activation_elems(cfg, b * enc.n_tiles, t.view_size);
        act = [act[0].max(a[0]), act[1].max(a[1]), act[2].max(a[2])];
    }
    let d = &cfg.decoder;
    let tokens = b * i.prompt_len; // prefill rows × positions
    let h = d.hidden_size;
    let f32b = 4u64; // fp32 upcasts: norms, router, expert accumulation, logits
    let act_b = |elems: i64| elems as u64 * eb;
    let act_f32 = |elems: i64| elems as u64 * f32b;

    let layer_sum = |f: fn(&super::analytic::DecoderLayerParams) -> u64| -> u64 {
        p.layers.iter().map(f).sum()
    };
    let lin = |f: fn(&DecoderLinearFlops) -> f64| (f(&pre.linear) * bf, f(&dfl.linear) * bf);
    let row = |module: &str, params: u64, flops: (f64, f64), step_bytes: f64, act: u64| ModuleRow {
        module: module.to_string(),
        params,
        flops: flops.0,
        decode_step_flops: flops.1,
        weight_bytes: params * eb,
        decode_step_bytes: step_bytes,
        activation_bytes: act,
        kv_cache_bytes: 0,
    };
    let vision = |f: f64| (f * bf, 0.0);
    let (ap, ad) = lin(|l| l.attention_proj);
    let mut attention = row(
        "decoder.attention",
        layer_sum(|l| l.attention),
        (ap + pre.attention * bf, ad + dfl.attention * bf),
        dby.attention + dby.kv_read + dby.kv_write,
        act_b(tokens * d.num_attention_heads * d.head_dim),
    );
    attention.kv_cache_bytes = kv_bytes_per_token(cfg, eb) * (b * i.decode_context_len) as u64;
    let rows = vec![
        row("sam", p.sam, vision(enc.sam()), 0.0, act_b(act[0])),
        row(
            cfg.encoder_name(),
            p.clip,
            vision(enc.clip()),
            0.0,
            act_b(act[1]),
        ),
        row(
            "projector",
            p.projector,
            vision(enc.projector()),
            0.0,
            act_b(act[2]),
        ),
        row(
            "embed_tokens",
            p.embedding,
            (0.0, 0.0),
            dby.embedding_rows,
            act_b(tokens * h),
        ),
        attention,
        row(
            "decoder.norms",
            layer_sum(|l| l.norms) + p.final_norm,
            (0.0, 0.0),
            dby.norms,
            act_f32(tokens * h),
        ),
        row(
            "decoder.dense_mlp",
            layer_sum(|l| l.dense_mlp),
            lin(|l| l.dense_mlp),
            dby.dense_mlp,
            act_b(tokens * d.intermediate_size),
        ),
        row(
            "decoder.router",
            layer_sum(|l| l.router),
            lin(|l| l.router),
            dby.routers,
            act_f32(tokens * h.max(d.n_routed_experts)),
        ),
        row(
            "decoder.routed_experts",
            layer_sum(|l| l.routed_experts),
            lin(|l| l.routed_experts),
            dby.routed_experts,
            act_b(tokens * d.num_experts_per_tok * h.max(d.moe_intermediate_size))
                .max(act_f32(tokens * h)),
        ),
        row(
            "decoder.shared_experts",
            layer_sum(|l| l.shared_experts),
            lin(|l| l.shared_experts),
            dby.shared_experts,
            act_b(tokens * cfg.shared_intermediate()),
        ),
        row(
            "lm_head",
            p.lm_head,
            (pre.lm_head * bf, dfl.lm_head * bf),
            dby.lm_head,
            act_f32(b * i.logits_positions.max(1) * d.vocab_size),
        ),
    ];
    let mut total = ModuleRow {
        module: "total".into(),
        ..ModuleRow::default()
    };
    for r in &rows {
        total.params += r.params;
        total.flops += r.flops;
        total.decode_step_flops += r.decode_step_flops;
        total.weight_bytes += r.weight_bytes;
        total.decode_step_bytes += r.decode_step_bytes;
        total.activation_bytes = total.activation_bytes.max(r.activation_bytes);
        total.kv_cache_bytes += r.kv_cache_bytes;
    }
    Ok(StaticReport {
        inputs: inputs.clone(),
        image_tokens: image_token_count(cfg.token_layout(), &i.preprocess, i.grid),
        rows,
        total,
        encoder: enc,
        prefill: pre,
        decode_flops: dfl,
        decode_bytes: dby,
    })
}

fn g(flops: f64) -> String {
    format!("{:.3}", flops / 1e9)
}

fn mb(bytes: f64) -> String {
    format!("{:.1}", bytes / 1e6)
}

/// 1234567 → "1,234,567".
fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (k, ch) in s.chars().enumerate() {
        if k > 0 && (s.len() - k) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

fn view_line(md: &mut String, name: &str, r: &RegionFlops) {
    let s = &r.sam;
    let _ = writeln!(
        md,
        "| {name} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
        r.view_size,
        r.tokens,
        g(s.patch_embed),
        g(s.windowed.total()),
        g(s.global.total()),
        g(s.global.attention),
        g(s.neck + s.compressor),
        g(s.total()),
        g(r.clip.total()),
        g(r.projector),
        g(r.total()),
    );
}

/// Markdown for `static_compute.md`.
pub fn render_markdown(r: &StaticReport) -> String {
    let i = &r.inputs;
    let mut md = String::from("# Static compute (analytic)\n\n");
    let _ = writeln!(
        md,
        "Inputs: base_size {}, image_size {}, crop_mode {}, grid {}×{} (cols×rows), prompt {} tokens \
         ({} image tokens), logits at {} position(s), batch {}, decode context {}, {} B/element.\n",
        i.preprocess.base_size,
        i.preprocess.image_size,
        i.preprocess.crop_mode,
        i.grid.cols,
        i.grid.rows,
        i.prompt_len,
        r.image_tokens,
        i.logits_positions,
        i.batch,
        i.decode_context_len,
        i.dtype_bytes
    );
    md.push_str(
        "1 FLOP = 1 multiply or 1 add (FLOP = 2·MAC); only matmuls, convolutions and einsums are \
         counted. \"prefill\" = vision + decoder prefill for the whole batch; \"decode step\" = one \
         new token for every row at the given context. Routed-expert decode bytes use the expected \
         number of distinct experts under uniform routing.\n\n",
    );
    md.push_str(
        "| module | params | prefill GFLOP | decode-step GFLOP | weights MB | decode-step MB | \
         largest activation MB | KV cache MB |\n|---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for row in r.rows.iter().chain(std::iter::once(&r.total)) {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            row.module,
            thousands(row.params),
            g(row.flops),
            g(row.decode_step_flops),
            mb(row.weight_bytes as f64),
            mb(row.decode_step_bytes),
            mb(row.activation_bytes as f64),
            mb(row.kv_cache_bytes as f64),
        );
    }
    md.push_str(
        "\n## Vision per view (GFLOP)\n\n| view | px | tokens | SAM patch | SAM windowed | SAM global | \
         of which global QK/AV | neck+compressor | SAM | CLIP | projector | total |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    view_line(&mut md, "global", &r.encoder.global);
    if let Some(t) = &r.encoder.tile {
        view_line(&mut md, &format!("tile (×{})", r.encoder.n_tiles), t);
    }
    let _ = writeln!(
        md,
        "\nEncoder total per request: {} GFLOP.\n",
        g(r.encoder.total())
    );
    let (p, d, b) = (&r.prefill, &r.decode_flops, &r.decode_bytes);
    let _ = writeln!(
        md,
        "## Decoder (per request / sequence)\n\n\
         - Prefill of {} tokens: linear {} GFLOP ({} MFLOP/token), causal attention {} GFLOP, \
         lm_head {} GFLOP.\n\
         - Decode step at context {}: linear {} GFLOP, attention {} GFLOP, lm_head {} GFLOP, total {} GFLOP.\n\
         - Decode-step bytes at batch {}: weights {} MB (routed experts {} MB, {:.1} distinct experts \
         per MoE layer), KV read {} MB, KV write {} MB, total {} MB; {:.2} FLOP/byte.",
        p.prompt_len,
        g(p.linear.total()),
        format_args!("{:.1}", p.linear.total() / p.prompt_len as f64 / 1e6),
        g(p.attention),
        g(p.lm_head),
        d.context_len,
        g(d.linear.total()),
        g(d.attention),
        g(d.lm_head),
        g(d.total()),
        b.batch,
        mb(b.weights()),
        mb(b.routed_experts),
        b.expected_experts_per_layer,
        mb(b.kv_read),
        mb(b.kv_write),
        mb(b.total()),
        d.total() * b.batch as f64 / b.total(),
    );
    md
}

#[cfg(test)]
mod tests {
    use super::super::views::Mode;
    use super::*;

    fn inputs(mode: Mode, cols: u32, rows: u32, prompt_len: i64) -> StaticInputs {
        StaticInputs {
            preprocess: PreprocessConfig::from_mode(mode),
            grid: TileGrid { cols, rows },
            prompt_len,
            logits_positions: 1,
            decode_context_len: 1000,
            batch: 1,
            dtype_bytes: 2,
        }
    }

    fn row<'a>(r: &'a StaticReport, m: &str) -> &'a ModuleRow {
        r.rows.iter().find(|x| x.module == m).expect("row exists")
    }

    #[test]
    fn gundam_page_report() {
        let cfg = ArchConfig::deepseek_ocr();
        let r = static_report(&cfg, &inputs(Mode::Gundam, 2, 3, 913)).unwrap();
        assert_eq!(r.image_tokens, 903); // docs/deepseek-ocr.md §4
                                         // Spec §6 totals.
        assert_eq!(r.total.params, 3_336_106_240);
        assert_eq!(r.total.weight_bytes, 6_672_212_480);
        // Spec §7.1/7.2: encoder 3469 (±0.5 %), LM 746.1 + 25.6 + 0.33.
        let enc = r.rows[..3].iter().map(|x| x.flops).sum::<f64>() / 1e9;
        assert!((enc / 3469.0 - 1.0).abs() < 0.005, "{enc}");
        let lm = r.rows[3..].iter().map(|x| x.flops).sum::<f64>() / 1e9;
        assert!((lm - (746.1 + 25.6 + 0.33)).abs() < 0.1, "{lm}");
        // Spec §7.3 at c=1000: 1.148 GFLOP + 61.44 MFLOP; KV 61,440 B/token.
        assert!((r.total.decode_step_flops / 1e9 - (1.148 + 0.06144)).abs() < 0.0005);
        assert_eq!(r.total.kv_cache_bytes, 61_440 * 1000);
        assert_eq!(row(&r, "decoder.attention").kv_cache_bytes, 61_440 * 1000);
        // Weights 1.148 GB + KV read 61.44 MB + write.
        let step = r.total.decode_step_bytes / 1e9;
        assert!((step - (1.148 + 0.06144)).abs() < 0.001, "{step}");
        // SAM global rel-pos bias [1,12,4096,4096] bf16 = 403 MB (docs/deepseek-ocr.md §7.1).
        assert_eq!(row(&r, "sam").activation_bytes, 12 * 4096 * 4096 * 2);
        assert_eq!(r.total.activation_bytes, 12 * 4096 * 4096 * 2);
    }

    #[test]
    fn transients_per_mode() {
        let cfg = ArchConfig::deepseek_ocr();
        // 1280 view: 983 MB (docs/deepseek-ocr.md §7.1).
        let r = static_report(&cfg, &inputs(Mode::Large, 1, 1, 431)).unwrap();
        assert!((row(&r, "sam").activation_bytes as f64 / 1e6 - 983.0).abs() < 0.5);
        // 6 tiles at 640 alone: 369 MB; a smaller global view makes the tiles the largest.
        let mut i = inputs(Mode::Gundam, 2, 3, 913);
        i.preprocess.base_size = 512;
        let r = static_report(&cfg, &i).unwrap();
        assert!((row(&r, "sam").activation_bytes as f64 / 1e6 - 369.0).abs() < 0.5);
    }

    #[test]
    fn renders_and_serialises() {
        let r = static_report(&ArchConfig::tiny(), &inputs(Mode::Base, 1, 1, 10)).unwrap();
        let md = render_markdown(&r);
        assert!(md.starts_with("# Static compute"), "{md}");
        assert!(md.contains("| total |"), "{md}");
        assert!(md.contains("| lm_head | 20,480 |"), "{md}");
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["rows"].as_array().unwrap().len(), r.rows.len());
        assert_eq!(thousands(3_336_106_240), "3,336,106,240");
        assert_eq!(thousands(12), "12");
    }

    #[test]
    fn bad_inputs_are_errors() {
        let cfg = ArchConfig::deepseek_ocr();
        let mut i = inputs(Mode::Base, 1, 1, 283);
        i.batch = 0;
        assert!(static_report(&cfg, &i).is_err());
        let mut i = inputs(Mode::Base, 1, 1, 283);
        i.preprocess.image_size = 1000;
        assert!(static_report(&cfg, &i).is_err());
    }
}
