//! SAM's decomposed relative-position tables (docs/deepseek-ocr.md §3.1): a learned table per
//! axis, resized to the side it is used at, gathered into R[i, j] = table[i − j + l − 1].
use anyhow::Result;
use tch::{Kind, Tensor};

/// Resizes a relative-position table [len, C] to [2·l−1, C] with 1-D linear interpolation
/// (fp32, align_corners=false) when needed, then gathers R[i,j] = table[i−j+l−1] → [l, l, C].
pub fn rel_pos_table(table: &Tensor, l: i64) -> Result<Tensor> {
    gather_rel_table(&resized_rel_table(table, l)?, l)
}

/// R[i,j] = `resized`[i−j+l−1] from a table already at [2·l−1, C] → [l, l, C].
pub fn gather_rel_table(resized: &Tensor, l: i64) -> Result<Tensor> {
    let dev = resized.device();
    let q = Tensor::f_arange(l, (Kind::Int64, dev))?.f_unsqueeze(1)?;
    let k = Tensor::f_arange(l, (Kind::Int64, dev))?.f_unsqueeze(0)?;
    let idx = q.f_sub(&k)?.f_add_scalar(l - 1)?; // (l, l)
    Ok(resized
        .f_index_select(0, &idx.f_flatten(0, 1)?)?
        .f_view([l, l, -1])?) // (l, l, c)
}

/// Each token's q times both resized tables, per head: `qkv` [B,H,W,3C] (the qkv Linear's output,
/// q read in place) and `tables_t` [head_dim, cols] (both resized tables transposed, side by
/// side) → [heads, B·H·W, cols], one batched GEMM over the heads. The kernels that add the
/// decomposed bias inside attention gather each score's two terms from it.
pub fn products_per_head(qkv: &Tensor, tables_t: &Tensor, heads: i64) -> Result<Tensor> {
    let (b, h, w, c3) = qkv.size4()?;
    let (hd, cols) = tables_t.size2()?;
    // q of every grid token per head: [heads, tokens, hd], rows 3C apart in qkv.
    let q = qkv
        .f_view([b * h * w, 3, heads, c3 / 3 / heads])?
        .f_select(1, 0)?
        .f_transpose(0, 1)?;
    Ok(q.f_bmm(&tables_t.f_expand([heads, hd, cols], false)?)?
        .f_contiguous()?)
}

/// A relative-position table [len, C] at the length a side of `l` tokens needs, [2·l−1, C]:
/// itself, or resized with 1-D linear interpolation (fp32, align_corners=false).
pub fn resized_rel_table(table: &Tensor, l: i64) -> Result<Tensor> {
    let (len, _) = table.size2()?;
    let want = 2 * l - 1;
    Ok(if len != want {
        let kind = table.kind();
        table
            .f_to_kind(Kind::Float)?
            .f_transpose(0, 1)?
            .f_unsqueeze(0)? // (1, c, len)
            .f_upsample_linear1d([want], false, None)? // (1, c, want)
            .f_squeeze_dim(0)?
            .f_transpose(0, 1)? // (want, c)
            .f_to_kind(kind)?
    } else {
        table.shallow_clone()
    })
}
