//! SAM ViT-B image encoder with windowed/global attention, decomposed relative-position bias,
//! neck and the 16x stride-2 compressor (docs/deepseek-ocr.md §3.1): pixels [B,3,S,S] → [B,1024,S/64,S/64].

use crate::models::common::layers::{LayerNorm, Linear};
use crate::models::common::tensors::WeightPath;
use anyhow::{ensure, Result};
use llmprof::model::deepseek_ocr::arch::SamConfig;
use tch::{Kind, Tensor};

/// Resizes a relative-position table [len, C] to [2·l−1, C] with 1-D linear interpolation
/// (fp32, align_corners=false) when needed, then gathers R[i,j] = table[i−j+l−1] → [l, l, C].
pub fn rel_pos_table(table: &Tensor, l: i64) -> Result<Tensor> {
    let (len, _) = table.size2()?;
    let want = 2 * l - 1;
    let resized = if len != want {
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
    };
    let dev = table.device();
    let q = Tensor::f_arange(l, (Kind::Int64, dev))?.f_unsqueeze(1)?;
    let k = Tensor::f_arange(l, (Kind::Int64, dev))?.f_unsqueeze(0)?;
    let idx = q.f_sub(&k)?.f_add_scalar(l - 1)?; // (l, l)
    Ok(resized
        .f_index_select(0, &idx.f_flatten(0, 1)?)?
        .f_view([l, l, -1])?) // (l, l, c)
}

/// Decomposed relative-position bias for q [B', h·w, C] (unscaled) on an h×w grid:
/// bias[b, (qh,qw), (kh,kw)] = Σ_c q·Rh[qh,kh] + Σ_c q·Rw[qw,kw]. Returns [B', h·w, h·w].
pub fn rel_pos_bias(q: &Tensor, rel_h: &Tensor, rel_w: &Tensor, h: i64, w: i64) -> Result<Tensor> {
    let (b, n, c) = q.size3()?;
    ensure!(n == h * w, "rel-pos: {n} tokens for a {h}x{w} grid");
    let rh = rel_pos_table(rel_h, h)?; // (h, h, c)
    let rw = rel_pos_table(rel_w, w)?; // (w, w, c)
    let r_q = q.f_view([b, h, w, c])?;
    let bh = Tensor::f_einsum("bhwc,hkc->bhwk", &[&r_q, &rh], None::<i64>)?; // (b, h, w, kh)
    let bw = Tensor::f_einsum("bhwc,wkc->bhwk", &[&r_q, &rw], None::<i64>)?; // (b, h, w, kw)
    let bias = bh.f_unsqueeze(-1)?.f_add(&bw.f_unsqueeze(-2)?)?; // (b, h, w, kh, kw)
    Ok(bias.f_reshape([b, n, h * w])?)
}

/// Zero-pads [B,H,W,C] at the bottom/right to multiples of `ws` and cuts row-major windows.
/// Returns ([B·nW, ws, ws, C], (Hp, Wp)).
pub fn window_partition(x: &Tensor, ws: i64) -> Result<(Tensor, (i64, i64))> {
    let (b, h, w, c) = x.size4()?;
    let pad_h = (ws - h % ws) % ws;
    let pad_w = (ws - w % ws) % ws;
    let x = if pad_h > 0 || pad_w > 0 {
        x.f_constant_pad_nd([0, 0, 0, pad_w, 0, pad_h])?
    } else {
        x.shallow_clone()
    };
    let (hp, wp) = (h + pad_h, w + pad_w);
    let x = x.f_view([b, hp / ws, ws, wp / ws, ws, c])?;
    let win = x
        .f_permute([0, 1, 3, 2, 4, 5])?
        .f_contiguous()?
        .f_view([-1, ws, ws, c])?; // (b·nW, ws, ws, c)
    Ok((win, (hp, wp)))
}

/// Inverse of [`window_partition`], cropping the padding: → [B,H,W,C].
pub fn window_unpartition(
    win: &Tensor,
    ws: i64,
    (hp, wp): (i64, i64),
    (h, w): (i64, i64),
) -> Result<Tensor> {
    let (nb, _, _, c) = win.size4()?;
    let b = nb / (hp * wp / ws / ws);
    let x = win.f_view([b, hp / ws, wp / ws, ws, ws, c])?;
    let x = x
        .f_permute([0, 1, 3, 2, 4, 5])?
        .f_contiguous()?
        .f_view([b, hp, wp, c])?; // (b, hp, wp, c)
    if hp > h || wp > w {
        Ok(x.f_narrow(1, 0, h)?.f_narrow(2, 0, w)?.f_contiguous()?)
    } else {
        Ok(x)
    }
}

/// Multi-head attention with decomposed rel-pos bias on a [B,H,W,C] grid.
#[derive(Debug)]
pub struct SamAttention {
    qkv: Linear,
    proj: Linear,
    rel_pos_h: Tensor,
    rel_pos_w: Tensor,
    heads: i64,
}

impl SamAttention {
    pub fn load(vs: &WeightPath, cfg: &SamConfig) -> Result<Self> {
        Ok(SamAttention {
            qkv: Linear::load(&vs.sub("qkv"), true)?,
            proj: Linear::load(&vs.sub("proj"), true)?,
            rel_pos_h: vs.get("rel_pos_h")?,
            rel_pos_w: vs.get("rel_pos_w")?,
            heads: cfg.heads,
        })
    }

    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let (b, h, w, c) = x.size4()?;
        let nh = self.heads;
        let hd = c / nh;
        let qkv = self
            .qkv
            .forward(x)?
            .f_reshape([b, h * w, 3, nh, hd])?
            .f_permute([2, 0, 3, 1, 4])?; // (3, b, nh, hw, hd)
        let qkv = qkv.f_reshape([3, b * nh, h * w, hd])?;
        let (q, k, v) = (qkv.f_get(0)?, qkv.f_get(1)?, qkv.f_get(2)?); // (b·nh, hw, hd)
        let bias = rel_pos_bias(&q, &self.rel_pos_h, &self.rel_pos_w, h, w)?; // (b·nh, hw, hw)
        let bias = bias.f_view([b, nh, h * w, h * w])?;
        let q = q.f_view([b, nh, h * w, hd])?;
        let k = k.f_view([b, nh, h * w, hd])?;
        let v = v.f_view([b, nh, h * w, hd])?;
        // SDPA scales only q·kᵀ (1/√hd) and adds the bias unscaled.
        let o = Tensor::f_scaled_dot_product_attention(
            &q,
            &k,
            &v,
            Some(&bias),
            0.0,
            false,
            None,
            false,
        )?; // (b, nh, hw, hd)
        let o = o
            .f_view([b, nh, h, w, hd])?
            .f_permute([0, 2, 3, 1, 4])?
            .f_reshape([b, h, w, c])?; // (b, h, w, c)
        self.proj.forward(&o)
    }
}

/// Pre-norm ViT block; `window == 0` means global attention.
#[derive(Debug)]
pub struct SamBlock {
    norm1: LayerNorm,
    attn: SamAttention,
    norm2: LayerNorm,
    lin1: Linear,
    lin2: Linear,
    window: i64,
}

impl SamBlock {
    pub fn load(vs: &WeightPath, cfg: &SamConfig, window: i64) -> Result<Self> {
        Ok(SamBlock {
            norm1: LayerNorm::load(&vs.sub("norm1"), cfg.layer_norm_eps)?,
            attn: SamAttention::load(&vs.sub("attn"), cfg)?,
            norm2: LayerNorm::load(&vs.sub("norm2"), cfg.layer_norm_eps)?,
            lin1: Linear::load(&vs.sub("mlp").sub("lin1"), true)?,
            lin2: Linear::load(&vs.sub("mlp").sub("lin2"), true)?,
            window,
        })
    }

    /// x [B,H,W,C] → [B,H,W,C].
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let (_, h, w, _) = x.size4()?;
        let y = self.norm1.forward(x)?;
        let y = if self.window > 0 {
            // Pad after norm1; padded zero tokens are not masked (docs/deepseek-ocr.md §3.1).
            let (win, pad_hw) = window_partition(&y, self.window)?;
            let o = self.attn.forward(&win)?;
            window_unpartition(&o, self.window, pad_hw, (h, w))?
        } else {
            self.attn.forward(&y)?
        };
        let x = x.f_add(&y)?;
        let m = self.lin2.forward(
            &self
                .lin1
                .forward(&self.norm2.forward(&x)?)?
                .f_gelu("none")?,
        )?;
        Ok(x.f_add(&m)?)
    }
}

/// LayerNorm over channels of an NCHW map (LayerNorm2d).
fn layer_norm_2d(x: &Tensor, ln: &LayerNorm) -> Result<Tensor> {
    let y = ln.forward(&x.f_permute([0, 2, 3, 1])?)?; // (b, h, w, c)
    Ok(y.f_permute([0, 3, 1, 2])?) // (b, c, h, w)
}

/// Resizes a [1,G,G,C] position grid to [1,g,g,C]: bicubic, antialias, fp32, align_corners=false.
pub fn resize_pos_grid(pos: &Tensor, g: i64) -> Result<Tensor> {
    let (_, gh, gw, _) = pos.size4()?;
    if gh == g && gw == g {
        return Ok(pos.shallow_clone());
    }
    let kind = pos.kind();
    let p = pos.f_to_kind(Kind::Float)?.f_permute([0, 3, 1, 2])?; // (1, c, G, G)
    let p = p.f_internal_upsample_bicubic2d_aa([g, g], false, None, None)?; // (1, c, g, g)
    Ok(p.f_permute([0, 2, 3, 1])?.f_to_kind(kind)?) // (1, g, g, c)
}

/// The whole SAM encoder.
#[derive(Debug)]
pub struct Sam {
    patch_w: Tensor,
    patch_b: Tensor,
    pos_embed: Tensor,
    blocks: Vec<SamBlock>,
    neck0: Tensor,
    neck1: LayerNorm,
    neck2: Tensor,
    neck3: LayerNorm,
    downsample: Vec<Tensor>,
    patch: i64,
}

impl Sam {
    /// `vs` points at `model.sam_model`.
    pub fn load(vs: &WeightPath, cfg: &SamConfig) -> Result<Self> {
        let blocks = (0..cfg.depth)
            .map(|i| {
                let window = if cfg.global_attn_indexes.contains(&i) {
                    0
                } else {
                    cfg.window_size
                };
                SamBlock::load(&vs.sub("blocks").sub(i), cfg, window)
            })
            .collect::<Result<Vec<_>>>()?;
        let neck = vs.sub("neck");
        Ok(Sam {
            patch_w: vs.get("patch_embed.proj.weight")?,
            patch_b: vs.get("patch_embed.proj.bias")?,
            pos_embed: vs.get("pos_embed")?,
            blocks,
            neck0: neck.get("0.weight")?,
            neck1: LayerNorm::load(&neck.sub(1), cfg.layer_norm_eps)?,
            neck2: neck.get("2.weight")?,
            neck3: LayerNorm::load(&neck.sub(3), cfg.layer_norm_eps)?,
            downsample: (0..cfg.downsample_channels.len())
                .map(|k| vs.get(&format!("net_{}.weight", k + 2)))
                .collect::<Result<Vec<_>>>()?,
            patch: cfg.patch_size,
        })
    }

    /// pixels [B,3,S,S] (S a multiple of 64) → [B, C_out, S/64, S/64].
    pub fn forward(&self, pixels: &Tensor) -> Result<Tensor> {
        let (_, c, s, s2) = pixels.size4()?;
        ensure!(
            c == 3 && s == s2,
            "SAM expects [B,3,S,S], got {:?}",
            pixels.size()
        );
        ensure!(
            s % (self.patch << self.downsample.len()) == 0,
            "SAM view side {s} not a multiple of {}",
            self.patch << self.downsample.len()
        );
        let p = self.patch;
        let x = pixels.f_conv2d(
            &self.patch_w,
            Some(&self.patch_b),
            [p, p],
            [0, 0],
            [1, 1],
            1,
        )?; // (b, w, g, g)
        let x = x.f_permute([0, 2, 3, 1])?; // (b, g, g, w)
        let g = s / p;
        let mut x = x.f_add(&resize_pos_grid(&self.pos_embed, g)?)?;
        for blk in &self.blocks {
            x = blk.forward(&x)?;
        }
        let x = x.f_permute([0, 3, 1, 2])?; // (b, w, g, g)
        let x = x.f_conv2d::<Tensor>(&self.neck0, None, [1, 1], [0, 0], [1, 1], 1)?;
        let x = layer_norm_2d(&x, &self.neck1)?;
        let x = x.f_conv2d::<Tensor>(&self.neck2, None, [1, 1], [1, 1], [1, 1], 1)?;
        let mut x = layer_norm_2d(&x, &self.neck3)?; // (b, out_chans, g, g)
        for w in &self.downsample {
            x = x.f_conv2d::<Tensor>(w, None, [2, 2], [1, 1], [1, 1], 1)?; // stride 2, pad 1
        }
        Ok(x) // (b, c_out, s/64, s/64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::Device;

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
}
