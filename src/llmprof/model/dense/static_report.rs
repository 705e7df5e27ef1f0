//! Static compute report of a dense decoder (`static_compute.json` / `.md`): per-module
//! parameters, prefill and decode-step FLOPs, weight bytes, decode-step bytes and KV cache for
//! one prompt length, batch and decode context.
use super::analytic::{
    decode_step_bytes, decode_step_flops, kv_bytes_per_token, params, prefill_flops,
};
use super::arch::DenseArch;
use serde::Serialize;
use std::fmt::Write;

/// What the report is computed for: `batch` rows of `prompt_len` tokens, decoding until
/// `decode_context_len` keys.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StaticInputs {
    pub prompt_len: i64,
    pub decode_context_len: i64,
    pub batch: i64,
    pub dtype_bytes: u64,
}

/// One module; FLOPs and bytes over all `batch` rows.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ModuleRow {
    pub module: String,
    pub params: u64,
    pub prefill_flops: f64,
    pub decode_step_flops: f64,
    pub weight_bytes: u64,
    pub decode_step_bytes: f64,
    pub kv_cache_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StaticReport {
    pub family: &'static str,
    pub inputs: StaticInputs,
    pub rows: Vec<ModuleRow>,
    pub total: ModuleRow,
}

pub fn static_report(a: &DenseArch, i: &StaticInputs) -> StaticReport {
    let p = params(a);
    let b = i.batch as f64;
    let pf = prefill_flops(a, i.prompt_len, 1);
    let df = decode_step_flops(a, i.decode_context_len);
    let db = decode_step_bytes(a, i.decode_context_len, i.batch, i.dtype_bytes);
    let wb = |n: u64| n * i.dtype_bytes;
    let kv = kv_bytes_per_token(a, i.dtype_bytes) * (i.decode_context_len * i.batch) as u64;
    let norm_bytes = (p.norms * i.dtype_bytes) as f64;
    let rows = vec![
        ModuleRow {
            module: if a.tie_word_embeddings {
                "embed_tokens (= lm_head, tied)".into()
            } else {
                "embed_tokens".into()
            },
            params: p.embed_tokens,
            weight_bytes: wb(p.embed_tokens),
            decode_step_bytes: db.embedding_rows,
            ..Default::default()
        },
        ModuleRow {
            module: "attention projections (q/k/v/o)".into(),
            params: p.attention,
            prefill_flops: b * pf.linear.attention_proj,
            decode_step_flops: b * df.linear.attention_proj,
            weight_bytes: wb(p.attention),
            decode_step_bytes: wb(p.attention) as f64,
            ..Default::default()
        },
        ModuleRow {
            module: "attention core (q·kᵀ, p·v)".into(),
            prefill_flops: b * pf.attention,
            decode_step_flops: b * df.attention,
            decode_step_bytes: db.kv_read + db.kv_write,
            kv_cache_bytes: kv,
            ..Default::default()
        },
        ModuleRow {
            module: match a.moe {
                Some(_) => {
                    "mlp (router and SwiGLU experts; a step reads the experts its rows reach)"
                        .into()
                }
                None => "mlp (SwiGLU)".into(),
            },
            params: p.mlp,
            prefill_flops: b * pf.linear.mlp,
            decode_step_flops: b * df.linear.mlp,
            weight_bytes: wb(p.mlp),
            decode_step_bytes: db.layer_weights - (wb(p.attention) + wb(p.norms)) as f64,
            ..Default::default()
        },
        ModuleRow {
            module: "norms".into(),
            params: p.norms,
            weight_bytes: wb(p.norms),
            decode_step_bytes: norm_bytes,
            ..Default::default()
        },
        ModuleRow {
            module: "lm_head".into(),
            params: p.lm_head,
            prefill_flops: b * pf.lm_head,
            decode_step_flops: b * df.lm_head,
            weight_bytes: wb(p.lm_head),
            decode_step_bytes: db.lm_head,
            ..Default::default()
        },
    ];
    let mut total = ModuleRow {
        module: "total".into(),
        ..Default::default()
    };
    for r in &rows {
        total.params += r.params;
        total.prefill_flops += r.prefill_flops;
        total.decode_step_flops += r.decode_step_flops;
        total.weight_bytes += r.weight_bytes;
        total.decode_step_bytes += r.decode_step_bytes;
        total.kv_cache_bytes += r.kv_cache_bytes;
    }
    StaticReport {
        family: "dense_decoder",
        inputs: i.clone(),
        rows,
        total,
    }
}

pub fn render_markdown(r: &StaticReport) -> String {
    let i = &r.inputs;
    let mut s = format!(
        "# Static compute (dense decoder)\n\nBatch {}, prompt {} tokens, decode step at {} keys, {} bytes per element. FLOPs = 2 × MAC; prefill computes logits for the last position only.\n\n| module | params | prefill GFLOP | decode step GFLOP | weights MB | decode step MB | KV cache MB |\n|---|---:|---:|---:|---:|---:|---:|\n",
        i.batch, i.prompt_len, i.decode_context_len, i.dtype_bytes
    );
    for row in r.rows.iter().chain(std::iter::once(&r.total)) {
        let _ = writeln!(
            s,
            "| {} | {} | {:.3} | {:.3} | {:.1} | {:.1} | {:.1} |",
            row.module,
            row.params,
            row.prefill_flops / 1e9,
            row.decode_step_flops / 1e9,
            row.weight_bytes as f64 / 1e6,
            row.decode_step_bytes / 1e6,
            row.kv_cache_bytes as f64 / 1e6
        );
    }
    s
}
