//! The linear layers of a transformer decoder step as weights (`in × out`), shared by the model
//! families: attention projections (q, k, v and their fused qkv form, o), SwiGLU MLPs (gate, up,
//! their fused gate_up form, down) and the LM head. Stage 2 maps profiled kernels to these by the
//! bytes they read ([`crate::roofline::useful`]).
use crate::roofline::useful::LinearShape;

/// Widths of one decoder layer's linears.
pub struct DecoderWidths {
    pub hidden: u64,
    /// Query width (heads × head_dim).
    pub q: u64,
    /// Key (= value) width (kv heads × head_dim).
    pub kv: u64,
    /// SwiGLU MLPs of the step, by name (`mlp`, `shared_experts`) and intermediate size.
    pub mlps: Vec<(&'static str, u64)>,
    pub vocab: u64,
}

/// Every linear of one decode step, fused forms listed beside the separate ones.
pub fn decoder_linears(w: &DecoderWidths) -> Vec<LinearShape> {
    let lin = |op: &str, i: u64, o: u64| LinearShape {
        op: op.to_string(),
        in_features: i,
        out_features: o,
    };
    let h = w.hidden;
    let mut out = vec![
        lin("q_proj", h, w.q),
        lin("k_proj", h, w.kv),
        lin("v_proj", h, w.kv),
        lin("qkv_proj", h, w.q + 2 * w.kv),
        lin("o_proj", w.q, h),
    ];
    for (name, inter) in &w.mlps {
        out.push(lin(&format!("{name}.gate_proj"), h, *inter));
        out.push(lin(&format!("{name}.up_proj"), h, *inter));
        out.push(lin(&format!("{name}.gate_up_proj"), h, 2 * inter));
        out.push(lin(&format!("{name}.down_proj"), *inter, h));
    }
    out.push(lin("lm_head", h, w.vocab));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gqa_widths_and_fused_forms() {
        // Llama 3.1 8B: hidden 4096, 32 q heads and 8 kv heads of 128, MLP 14336, vocab 128256.
        let l = decoder_linears(&DecoderWidths {
            hidden: 4096,
            q: 32 * 128,
            kv: 8 * 128,
            mlps: vec![("mlp", 14336)],
            vocab: 128_256,
        });
        let get = |op: &str| l.iter().find(|x| x.op == op).expect(op);
        assert_eq!(get("qkv_proj").out_features, 4096 + 2 * 1024);
        assert_eq!(get("k_proj").out_features, 1024);
        assert_eq!(get("mlp.gate_up_proj").out_features, 2 * 14336);
        assert_eq!(get("mlp.down_proj").in_features, 14336);
        assert_eq!(get("lm_head").out_features, 128_256);
        assert_eq!(l.len(), 10);
    }
}
