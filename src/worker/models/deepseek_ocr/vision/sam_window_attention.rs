//! SAM's windowed attention in one llmprof kernel (`model.optim.sam_window_attention_kernel`,
//! `csrc/kernels/sam_window_attention.cu`): q, k and v read where the qkv Linear wrote them, the
//! decomposed relative-position bias folded into q·k inside the kernel (the products gathered
//! into q′'s extra columns per strip of queries, k′'s one-hot columns built per block), so no
//! q′/k′ is packed in memory. The bias comes from each token's q times both resized tables (√d folded
//! in, as [`super::sam_attention_cuda`]'s one-GEMM path computes them): one batched GEMM over the
//! heads that reads q in place. The output, [B·windows, win_h·win_w, C], is projected in its
//! windows, for the add + LayerNorm kernel to read there.
use super::rel_pos::products_per_head;
use crate::ffi::kernels_vision;
use crate::models::layers::basic::Linear;
use anyhow::Result;
use tch::Tensor;

/// Windowed attention of `qkv` [B,H,W,3C] (contiguous bf16, `heads` of 64 channels:
/// [`kernels_vision::sam_window_attention_fits`]) in `win` windows, projected by `proj`:
/// [B·windows, win_h·win_w, C]. `bias`: the qkv Linear's, the value of padded tokens;
/// `tables_t` [head_dim, cols]: both resized tables, √head_dim folded in, transposed.
pub fn forward(
    qkv: &Tensor,
    bias: &Tensor,
    tables_t: &Tensor,
    heads: i64,
    proj: &Linear,
    win: (i64, i64),
) -> Result<Tensor> {
    let prod = products_per_head(qkv, tables_t, heads)?;
    let o = kernels_vision::sam_window_attention(qkv, bias, &prod, heads, win)?;
    proj.forward(&o)
}

#[cfg(test)]
mod tests {
    use super::super::sam_attention::tests::{
        attention_on, kernels_gpu, rel_err, weights, FOLDED_KERNELS,
    };
    use super::super::sam_attention::SamOptim;
    use crate::ffi::kernels_vision::sam_window_attention_fits;
    use tch::{Kind, Tensor};

    /// What the kernel takes: bf16, heads of 64, windows of 14×14 and 4×4.
    #[test]
    fn the_kernel_takes_bf16_heads_of_64_and_its_windows() {
        assert!(sam_window_attention_fits(Kind::BFloat16, 64, (14, 14)));
        assert!(sam_window_attention_fits(Kind::BFloat16, 64, (4, 4)));
        assert!(!sam_window_attention_fits(Kind::BFloat16, 64, (16, 16)));
        assert!(!sam_window_attention_fits(Kind::BFloat16, 64, (14, 4)));
        assert!(!sam_window_attention_fits(Kind::Float, 64, (14, 14)));
        assert!(!sam_window_attention_fits(Kind::BFloat16, 12, (14, 14)));
    }

    /// The kernel against the fp32 reference: no further from it than the folded-bias kernels
    /// in bf16 (cuDNN's attention over q′·k′), doubled; SAM's own shape (768 channels, 12 heads,
    /// windows of 14 on a 30×30 grid padded to 42, padded tokens attended with the Linear's
    /// bias) and a 9×7 grid in windows of 4 with 2 heads; global attention and shapes the kernel
    /// does not take (heads of 12, fp32) give what the folded path gives, bit for bit.
    #[test]
    #[ignore = "needs a CUDA GPU and a build with llmprof's kernels: cargo test -- --ignored on the GPU machine"]
    fn window_kernel_is_as_accurate_as_the_folded_path_on_a_gpu() {
        let dev = kernels_gpu();
        let folded = SamOptim {
            proj_in_windows: true,
            add_layer_norm_kernel: true,
            ..FOLDED_KERNELS
        };
        let kernel = SamOptim {
            window_kernel: true,
            ..folded
        };
        for (b, grid, c, heads, window, table) in [
            (2i64, (30i64, 30i64), 768i64, 12i64, 14i64, 27i64),
            (2, (9, 7), 128, 2, 4, 13),
        ] {
            let y = Tensor::randn([b, grid.0, grid.1, c], (Kind::Float, dev));
            let yb = y.to_kind(Kind::BFloat16);
            let w = weights(c, heads, table);
            let reference = attention_on(&w, heads, SamOptim::default(), Kind::Float, dev);
            let want = reference.forward_block(&y, window).unwrap();
            let old = attention_on(&w, heads, folded, Kind::BFloat16, dev);
            let new = attention_on(&w, heads, kernel, Kind::BFloat16, dev);
            let got = new.forward_block(&yb, window).unwrap();
            assert_eq!(got.size(), vec![b, grid.0, grid.1, c]);
            let e_old = rel_err(&old.forward_block(&yb, window).unwrap(), &want);
            let e_new = rel_err(&got, &want);
            assert!(
                e_old > 1e-4 && e_new <= 2.0 * e_old,
                "c {c} window {window}: kernel {e_new:.3e}, folded {e_old:.3e}"
            );
            // Global attention is not the kernel's: same result as the folded path.
            let global = new.forward_block(&yb, 0).unwrap();
            assert!(global.equal(&old.forward_block(&yb, 0).unwrap()));
        }
        // Heads of 12 channels and fp32 keep the folded path.
        let w = weights(24, 2, 13);
        for kind in [Kind::BFloat16, Kind::Float] {
            let y = Tensor::randn([2, 9, 7, 24], (kind, dev));
            let got = attention_on(&w, 2, kernel, kind, dev)
                .forward_block(&y, 4)
                .unwrap();
            let want = attention_on(&w, 2, folded, kind, dev)
                .forward_block(&y, 4)
                .unwrap();
            assert!(got.equal(&want), "{kind:?}: differs from the folded path");
        }
    }
}
