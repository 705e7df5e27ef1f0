//! The modules of a transformer decoder that every family shares (the names the shared layers
//! mark, region/modules.rs) and the analytic work of each in one decode step: FLOPs and the bytes
//! it must move (weights read, KV cache read and written, activations), so that each module has a
//! floor (bytes at peak bandwidth or FLOPs at peak compute, whichever is larger) to set its time
//! against (#41, docs/design/module-attribution.md §4). FLOP = 2 × multiply-accumulate.
use crate::region::Module;
use serde::{Deserialize, Serialize};

/// The token embedding lookup.
pub const EMBED: Module = Module::root("embed");
/// One decoder layer, indexed by its position.
pub const LAYER: Module = Module::indexed("layer", None);
pub const ATTENTION: Module = Module::within("attention", LAYER);
/// The RMSNorm before attention (with the residual add of the layer before, when fused).
pub const ATTENTION_NORM: Module = Module::within("input_norm", ATTENTION);
/// The q, k, v projections (fused or not).
pub const QKV: Module = Module::within("qkv", ATTENTION);
/// RoPE on q and k, and the new token's K/V written to the cache.
pub const ROPE_KV: Module = Module::within("rope_kv", ATTENTION);
/// Softmax(q·kᵀ)·v over the cache.
pub const CORE: Module = Module::within("core", ATTENTION);
pub const O_PROJ: Module = Module::within("o_proj", ATTENTION);
pub const MLP: Module = Module::within("mlp", LAYER);
/// The RMSNorm after attention (with attention's residual add).
pub const MLP_NORM: Module = Module::within("post_norm", MLP);
pub const GATE_UP: Module = Module::within("gate_up", MLP);
/// SiLU(gate) · up.
pub const ACT: Module = Module::within("act", MLP);
pub const DOWN: Module = Module::within("down", MLP);
/// The RMSNorm after the last layer.
pub const FINAL_NORM: Module = Module::root("final_norm");
pub const LM_HEAD: Module = Module::root("lm_head");

/// The shared decoder's modules, parents first (a family appends its own list after it).
pub const DECODER_MODULES: &[Module] = &[
    EMBED,
    LAYER,
    ATTENTION,
    ATTENTION_NORM,
    QKV,
    ROPE_KV,
    CORE,
    O_PROJ,
    MLP,
    MLP_NORM,
    GATE_UP,
    ACT,
    DOWN,
    FINAL_NORM,
    LM_HEAD,
];

/// A layer's mixture of experts (where it replaces the MLP).
pub const MOE: Module = Module::within("moe", LAYER);
/// The RMSNorm after attention (with attention's residual add).
pub const MOE_NORM: Module = Module::within("moe_norm", MOE);
/// The gate's logits over the routed experts.
pub const ROUTER: Module = Module::within("router", MOE);
/// Softmax, top-k and the sort of rows by expert.
pub const ROUTING: Module = Module::within("routing", MOE);
pub const EXPERTS_GATE_UP: Module = Module::within("experts_gate_up", MOE);
pub const EXPERTS_ACT: Module = Module::within("experts_act", MOE);
pub const EXPERTS_DOWN: Module = Module::within("experts_down", MOE);
/// The routed experts' outputs weighted and summed per row.
pub const COMBINE: Module = Module::within("combine", MOE);
pub const SHARED_EXPERTS: Module = Module::within("shared_experts", MOE);

/// A mixture of experts in place of a layer's MLP (DeepSeek, Mixtral, Qwen3-MoE), after the
/// shared decoder's modules in a family's list.
pub const MOE_MODULES: &[Module] = &[
    MOE,
    MOE_NORM,
    ROUTER,
    ROUTING,
    EXPERTS_GATE_UP,
    EXPERTS_ACT,
    EXPERTS_DOWN,
    COMBINE,
    SHARED_EXPERTS,
];

/// What one module instance does in one decode step of the whole batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModuleWork {
    /// The module path (`layer.attention.qkv`, `lm_head`).
    pub module: String,
    /// The layer, for modules inside an indexed one.
    pub index: Option<u32>,
    pub flops: f64,
    /// Weights read (each once per step, whatever the batch).
    pub weight_bytes: f64,
    /// Activations read and written (the step's rows through the module).
    pub activation_bytes: f64,
    /// KV cache read (attention's core) and written (rope_kv).
    pub kv_bytes: f64,
}

impl ModuleWork {
    /// Bytes that count against the step's bandwidth floor: weights and KV cache. Activations
    /// are listed for the module's own floor but stay out of the step's (the step's analytic
    /// bytes never counted them: they mostly live in L2 between kernels).
    pub fn step_bytes(&self) -> f64 {
        self.weight_bytes + self.kv_bytes
    }

    /// The shortest time at `peak_flops` (FLOP/s) and `bandwidth` (B/s), in seconds: the larger
    /// of compute and all the bytes it moves.
    pub fn floor_s(&self, peak_flops: f64, bandwidth: f64) -> f64 {
        let bytes = self.weight_bytes + self.kv_bytes + self.activation_bytes;
        (self.flops / peak_flops).max(bytes / bandwidth)
    }
}

/// The shapes one decode step of a decoder layer works on.
#[derive(Debug, Clone, Copy)]
pub struct LayerShape {
    pub hidden: f64,
    /// Query width (heads × head_dim) and key (= value) width (kv heads × head_dim).
    pub q: f64,
    pub kv: f64,
    /// Rows of the batch (one new token each) and keys each row attends to (itself included).
    pub rows: f64,
    pub context: f64,
    /// Bytes per element of weights, activations and the KV cache.
    pub dtype_bytes: f64,
    /// q/k/v biases present (Qwen2).
    pub qkv_bias: bool,
}

/// The attention modules of one layer in one decode step (the MLP is the family's: dense SwiGLU
/// or mixture of experts).
pub fn attention_work(s: &LayerShape, layer: u32) -> Vec<ModuleWork> {
    let (h, q, kv, t, b) = (s.hidden, s.q, s.kv, s.rows, s.dtype_bytes);
    let qkv_out = q + 2.0 * kv;
    let bias = if s.qkv_bias { qkv_out } else { 0.0 };
    let kv_per_token = 2.0 * kv * b;
    let w = |module: &str, flops: f64, weights: f64, act: f64, kv_bytes: f64| ModuleWork {
        module: module.to_string(),
        index: Some(layer),
        flops,
        weight_bytes: weights * b,
        activation_bytes: act * b,
        kv_bytes,
    };
    vec![
        // x read twice (residual add fused) and written once; the norm's weight.
        w("layer.attention.input_norm", 0.0, h, 3.0 * t * h, 0.0),
        w(
            "layer.attention.qkv",
            2.0 * t * h * qkv_out,
            h * qkv_out + bias,
            t * (h + qkv_out),
            0.0,
        ),
        // q and k rotated in place, the new K/V written to the cache.
        w(
            "layer.attention.rope_kv",
            0.0,
            0.0,
            t * 2.0 * (q + kv),
            t * kv_per_token,
        ),
        // q·kᵀ and p·v over the context, for every query head; the cache read.
        w(
            "layer.attention.core",
            4.0 * t * q * s.context,
            0.0,
            2.0 * t * q,
            t * s.context * kv_per_token,
        ),
        w(
            "layer.attention.o_proj",
            2.0 * t * q * h,
            q * h,
            t * (q + h),
            0.0,
        ),
    ]
}

/// A SwiGLU MLP of intermediate size `f` over `s.rows` tokens, named under `prefix` (`layer.mlp`).
pub fn swiglu_work(s: &LayerShape, f: f64, prefix: &str, layer: u32) -> Vec<ModuleWork> {
    let (h, t, b) = (s.hidden, s.rows, s.dtype_bytes);
    let w = |name: &str, flops: f64, weights: f64, act: f64| ModuleWork {
        module: format!("{prefix}.{name}"),
        index: Some(layer),
        flops,
        weight_bytes: weights * b,
        activation_bytes: act * b,
        kv_bytes: 0.0,
    };
    vec![
        w("post_norm", 0.0, h, 3.0 * t * h),
        w(
            "gate_up",
            2.0 * t * h * 2.0 * f,
            2.0 * h * f,
            t * (h + 2.0 * f),
        ),
        w("act", 0.0, 0.0, 3.0 * t * f),
        w("down", 2.0 * t * f * h, f * h, t * (f + h)),
    ]
}

/// A mixture of experts' shape for its module work: routed experts, experts per token, each
/// expert's FFN width, how many distinct experts the step's rows reach, and the shared experts'
/// FFN width where there are some.
#[derive(Debug, Clone, Copy)]
pub struct MoeDims {
    pub experts: f64,
    pub top_k: f64,
    pub expert_ffn: f64,
    pub distinct: f64,
    pub shared_ffn: Option<f64>,
    /// The shared experts run as `shared_ffn / expert_ffn` more experts of the grouped GEMMs
    /// (DeepSeek-OCR's `model.optim.moe_shared_experts_fused`): their work is the routed
    /// experts' modules', every row reads their weights, and `shared_experts` has none.
    pub shared_as_experts: bool,
}

/// Expected distinct experts `batch` rows reach when each picks `top_k` of `experts` uniformly:
/// E·(1 − ((E − k)/E)^B) (the routed experts' weights a step reads).
pub fn expected_distinct_experts(experts: f64, top_k: f64, batch: i64) -> f64 {
    experts * (1.0 - ((experts - top_k) / experts).powi(batch.max(0) as i32))
}

/// A layer's mixture of experts in one decode step: its norm, the router, the routing, the
/// routed experts' gate/up, activation and down (top-k per row, weights of the distinct experts
/// reached), the weighted combine, and the shared experts.
pub fn moe_work(s: &LayerShape, layer: u32, m: &MoeDims) -> Vec<ModuleWork> {
    let (h, t, b) = (s.hidden, s.rows, s.dtype_bytes);
    let (e, k, f, distinct) = (m.experts, m.top_k, m.expert_ffn, m.distinct);
    let i = Some(layer);
    let work = |module: &str, flops: f64, weights: f64, act: f64| ModuleWork {
        module: module.to_string(),
        index: i,
        flops,
        weight_bytes: weights * b,
        activation_bytes: act * b,
        kv_bytes: 0.0,
    };
    // Shared experts as experts: that many more slots a row, each reading all their weights.
    let as_experts = match m.shared_ffn {
        Some(ffn) if m.shared_as_experts => ffn / f,
        _ => 0.0,
    };
    let (k, distinct) = (k + as_experts, distinct + as_experts);
    let mut out = vec![
        work("layer.moe.moe_norm", 0.0, h, 3.0 * t * h),
        work("layer.moe.router", 2.0 * t * h * e, e * h, t * (h + e)),
        // fp32 scores in, top-k ids and weights out (no weights).
        work("layer.moe.routing", 0.0, 0.0, t * e * 2.0 + t * k * 2.0),
        work(
            "layer.moe.experts_gate_up",
            2.0 * t * k * h * 2.0 * f,
            distinct * 2.0 * h * f,
            t * k * (h + 2.0 * f),
        ),
        work("layer.moe.experts_act", 0.0, 0.0, 3.0 * t * k * f),
        work(
            "layer.moe.experts_down",
            2.0 * t * k * f * h,
            distinct * f * h,
            t * k * (f + h),
        ),
        work("layer.moe.combine", 0.0, 0.0, t * (k + 1.0) * h),
    ];
    if let Some(shared) = m.shared_ffn.filter(|_| !m.shared_as_experts) {
        let mut s = swiglu_work(s, shared, "layer.moe.shared_experts", layer);
        // The shared experts' norm is the MoE's (above): keep its MLP parts only, under one name.
        s.retain(|w| !w.module.ends_with("post_norm"));
        out.push(ModuleWork {
            module: "layer.moe.shared_experts".into(),
            index: i,
            flops: s.iter().map(|w| w.flops).sum(),
            weight_bytes: s.iter().map(|w| w.weight_bytes).sum(),
            activation_bytes: s.iter().map(|w| w.activation_bytes).sum(),
            kv_bytes: 0.0,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shared_tree_is_valid_and_disjoint_from_the_stages() {
        crate::region::check_modules(&[DECODER_MODULES]).unwrap();
        crate::model::dense::REGIONS.check().unwrap();
    }

    /// Shared experts run as experts move their work into the routed experts' modules: the
    /// layer's FLOPs and weight bytes stay, `shared_experts` goes.
    #[test]
    fn shared_experts_as_experts_keep_the_layer_total() {
        let s = LayerShape {
            hidden: 1280.0,
            q: 1280.0,
            kv: 1280.0,
            rows: 2.0,
            context: 500.0,
            dtype_bytes: 2.0,
            qkv_bias: false,
        };
        let dims = |fused| MoeDims {
            experts: 64.0,
            top_k: 6.0,
            expert_ffn: 896.0,
            distinct: 11.0,
            shared_ffn: Some(1792.0),
            shared_as_experts: fused,
        };
        let total = |w: &[ModuleWork]| {
            (
                w.iter().map(|m| m.flops).sum::<f64>(),
                w.iter().map(|m| m.weight_bytes).sum::<f64>(),
            )
        };
        let (apart, fused) = (moe_work(&s, 3, &dims(false)), moe_work(&s, 3, &dims(true)));
        let ((f0, w0), (f1, w1)) = (total(&apart), total(&fused));
        assert!((f0 - f1).abs() <= 1e-9 * f0 && (w0 - w1).abs() <= 1e-9 * w0);
        assert!(apart.iter().any(|m| m.module == "layer.moe.shared_experts"));
        assert!(!fused.iter().any(|m| m.module == "layer.moe.shared_experts"));
        let down = |w: &[ModuleWork]| {
            w.iter()
                .find(|m| m.module == "layer.moe.experts_down")
                .map(|m| m.weight_bytes)
                .unwrap()
        };
        assert_eq!(down(&fused), down(&apart) * 13.0 / 11.0);
    }

    #[test]
    fn a_module_floor_is_its_larger_bound() {
        let m = ModuleWork {
            module: "layer.attention.qkv".into(),
            index: Some(0),
            flops: 2e9,
            weight_bytes: 3e6,
            activation_bytes: 1e6,
            kv_bytes: 0.0,
        };
        // 2 GFLOP at 1 TFLOP/s = 2 ms; 4 MB at 1 TB/s = 4 µs: compute-bound.
        assert!((m.floor_s(1e12, 1e12) - 2e-3).abs() < 1e-15);
        // At 1 GB/s the bytes win: 4 ms.
        assert!((m.floor_s(1e12, 1e9) - 4e-3).abs() < 1e-15);
        assert_eq!(m.step_bytes(), 3e6);
    }
}
