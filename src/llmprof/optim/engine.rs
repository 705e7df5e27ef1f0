//! `runtime.optim`: the fast path of the engine (CUDA-graph decode steps and prefills, the KV
//! cache, the sync-free loop) and of the decoder layers every family shares (fused projections,
//! SDPA, RMSNorm, RoPE, SwiGLU). A family's own switches are `model.optim`, typed by the family
//! (`crate::model::FamilyOptim`, each family's type implementing
//! [`super::FamilyOptions`]). Presets: conf/runtime/fast.yaml (the default) and eager.yaml
//! (docs/fast-path.md).
use serde::{Deserialize, Serialize};

/// `runtime.optim.*`; each is reported in metrics.json (`optim.switches`).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EngineOptim {
    /// Capture one decode step per batch size and KV window as a CUDA graph and replay it.
    pub cuda_graph: bool,
    /// KV slots per captured window: attention reads whole windows, one graph per window.
    pub graph_kv_bucket: u32,
    /// One matmul for q/k/v and one for gate/up.
    pub fused_projections: bool,
    /// libtorch's fused SDPA kernels instead of explicit matmul + softmax.
    pub sdpa: bool,
    /// Preallocated KV cache instead of concatenation per step.
    pub static_kv_cache: bool,
    /// One-kernel RMSNorm instead of HF's eight elementwise ops.
    pub fused_rms_norm: bool,
    /// Tokens stay on the GPU between steps; EOS checked every `eos_check_interval` steps.
    pub sync_free_decode: bool,
    pub eos_check_interval: u32,
    /// On a CUDA device with a static KV cache (and, for a model with experts, grouped MoE in
    /// bf16), the text decoder's prefill into a KV cache used before (as graph decode reuses
    /// them) is captured as a CUDA graph per prompt shape, left padding and KV cache after its
    /// first, eager run and replayed after (its kernels then run without the GPU's gaps between
    /// separately launched kernels). DeepSeek-OCR and the dense family; a tensor-parallel rank
    /// runs its prefill op by op. Absent: off.
    #[serde(default)]
    pub prefill_cuda_graph: bool,
    /// With `prefill_cuda_graph`: the most rows a prefill may have to be captured (0: any).
    /// Absent: 0.
    #[serde(default)]
    pub prefill_cuda_graph_max_batch: u64,
    /// On a CUDA device with `fused_projections`, the RoPE on q and k and the K/V cache write of
    /// each decode step and prefill in llmprof's one CUDA kernel per layer, instead of six to
    /// eight libtorch kernels (RoPE ops, the cache writes and the copies of their strided
    /// inputs). Absent: off.
    #[serde(default)]
    pub rope_kv_kernel: bool,
    /// On a CUDA device with `fused_projections`, SwiGLU's activation (silu of the gate half
    /// times the up half of the fused projection's output) in llmprof's one CUDA kernel,
    /// instead of silu and a multiply over strided halves. Absent: off.
    #[serde(default)]
    pub swiglu_kernel: bool,
    /// On a CUDA device with `fused_rms_norm`, each residual add and the RMSNorm after it in
    /// llmprof's one CUDA kernel, instead of an add and the norm. Absent: off.
    #[serde(default)]
    pub add_rms_norm_kernel: bool,
    /// On a CUDA device, the fixed-shape (graph) decode step attends over each row's written
    /// KV slots only, in llmprof's split-over-slots kernel (head_dim 64 or 128), instead of
    /// SDPA over the whole KV window with a mask. No effect on eager decode steps. Absent: off.
    #[serde(default)]
    pub decode_attention_kernel: bool,
    /// With `decode_attention_kernel`: the smallest KV window (graph_kv_bucket multiples) whose
    /// decode steps use the kernel; shorter windows keep SDPA (the kernel's first version was
    /// slower than SDPA at windows of 1024 slots; since session 9 it is not,
    /// reports/performance-history.md). 0: every window.
    /// Absent: 0.
    #[serde(default)]
    pub decode_attention_min_window: u64,
    /// With `decode_attention_kernel` (alone it has no effect, so turning the kernel off needs
    /// nothing else), in bf16/fp16 with at most 16 query heads per kv head: the kernel's split
    /// pass on tensor cores, each kv head's key and value rows read once for all
    /// its query heads (the probabilities rounded to the element type before the value sum, as
    /// libtorch's fused attention does), instead of once per query head on CUDA cores. Absent:
    /// off.
    #[serde(default)]
    pub decode_attention_tensor_cores: bool,
    /// On a CUDA device in bf16/fp16, the decoder's projections of one row (decode steps at
    /// batch 1: q/k/v, o_proj, gate/up, down, shared experts, lm_head; inputs at most 32,768 wide) in
    /// llmprof's GEMV kernel (the weight streamed once in 16-byte loads, fp32 sums, one rounding)
    /// instead of cuBLAS's choice for those shapes, and the routed experts of a MoE step of at
    /// most 16 token slots in its grouped form (each slot's expert read once) instead of
    /// libtorch's grouped GEMM. Absent: off.
    #[serde(default)]
    pub gemv_kernel: bool,
    /// With `gemv_kernel` and `add_rms_norm_kernel`: in one-row decode steps (batch 1) on a GPU,
    /// each residual add + RMSNorm is folded into the GEMV of the projection after it (q/k/v
    /// where RoPE and the K/V write run in llmprof's kernel, the fused gate/up of a dense MLP):
    /// every block of the GEMV computes the normed row into shared memory after its first weight
    /// loads went out, block 0 writes the sum; the same bits as the two kernels, one launch
    /// fewer. The first layer's input norm (no residual add: libtorch's RMSNorm kernel
    /// otherwise) folds in with a zero delta, so it takes the add + RMSNorm kernel's rounding
    /// (within a few places of libtorch's). The projection's module then holds the norm's time.
    /// Absent: off.
    #[serde(default)]
    pub gemv_add_rms_norm: bool,
    /// With `gemv_kernel` and `swiglu_kernel`, on a GPU: in one-row decode steps (batch 1) a
    /// SwiGLU MLP's activation (dense layers, shared experts) is computed in the GEMV of its
    /// fused gate/up projection, and in a MoE step the grouped GEMV takes (at most 16 token
    /// slots: batch 1-2 for DeepSeek's experts) the routed experts' in that GEMV: each
    /// warp reads an output's gate and up rows and writes silu(gate)·up, rounded where the two
    /// kernels round (the same bits), one launch fewer a MLP. The gate/up module then holds the
    /// activation's time. Absent: off.
    #[serde(default)]
    pub gemv_swiglu: bool,
    /// On a GPU, each decode step's greedy choice (the argmax of the fp32 logits, after the
    /// n-gram rule) in llmprof's kernel, each row over many blocks, instead of libtorch's argmax,
    /// which reduces a row in one block (27.6 µs for 128,256 logits on an H200): the same
    /// choice. Absent: off.
    #[serde(default)]
    pub argmax_kernel: bool,
    /// On a GPU of compute capability 9.0 or newer, llmprof's decode-step kernels (add +
    /// RMSNorm, RoPE + KV write, decode attention, the GEMV, SwiGLU, MoE routing and combine)
    /// launch with programmatic dependent launch: each may be scheduled while the kernel before
    /// it finishes and waits on the GPU for that kernel's results (the GEMV's first weight loads
    /// go out before the wait), so a CUDA-graph step pays less of each kernel's start. Process
    /// wide, set when the model is built. Absent: off.
    #[serde(default)]
    pub programmatic_launch: bool,
}

impl EngineOptim {
    /// A preset of conf/runtime/ (`fast` or `eager`), read from the YAML that runs use, so the
    /// debug checks and the tests mean by "fast" and "eager" what `runtime=fast|eager` means.
    pub fn preset(name: &str) -> Result<Self, String> {
        super::preset::read(
            "conf/runtime",
            include_str!("../../../conf/runtime/fast.yaml"),
            include_str!("../../../conf/runtime/eager.yaml"),
            Some("optim"),
            name,
        )
    }

    /// Every switch off, as `runtime=eager`.
    pub fn eager() -> Self {
        Self::preset("eager").expect("conf/runtime/eager.yaml is checked by a test")
    }

    /// The defaults, as `runtime=fast`.
    pub fn fast() -> Self {
        Self::preset("fast").expect("conf/runtime/fast.yaml is checked by a test")
    }

    /// The rules between these switches: (switch, the switch it needs, why).
    pub fn check(&self) -> Result<(), String> {
        for (key, value) in [
            ("graph_kv_bucket", u64::from(self.graph_kv_bucket)),
            ("eos_check_interval", u64::from(self.eos_check_interval)),
        ] {
            crate::ranges::at_least(&format!("runtime.optim.{key}"), value as i64, 1)?;
        }
        let rules = [
            (
                "rope_kv_kernel",
                self.rope_kv_kernel,
                "fused_projections",
                self.fused_projections,
                "the kernel reads q, k and v from the one fused projection's output",
            ),
            (
                "swiglu_kernel",
                self.swiglu_kernel,
                "fused_projections",
                self.fused_projections,
                "the kernel reads gate and up from the one fused projection's output",
            ),
            (
                "add_rms_norm_kernel",
                self.add_rms_norm_kernel,
                "fused_rms_norm",
                self.fused_rms_norm,
                "the kernel computes the fused norm's form (one rounding), not HF's eight-op norm",
            ),
            (
                "gemv_add_rms_norm",
                self.gemv_add_rms_norm,
                "gemv_kernel",
                self.gemv_kernel,
                "the norm is folded into llmprof's GEMV",
            ),
            (
                "gemv_add_rms_norm",
                self.gemv_add_rms_norm,
                "add_rms_norm_kernel",
                self.add_rms_norm_kernel,
                "the folded norm is the add + RMSNorm kernel's, row for row",
            ),
            (
                "gemv_swiglu",
                self.gemv_swiglu,
                "gemv_kernel",
                self.gemv_kernel,
                "the activation is folded into llmprof's GEMV",
            ),
            (
                "gemv_swiglu",
                self.gemv_swiglu,
                "swiglu_kernel",
                self.swiglu_kernel,
                "the folded activation is the SwiGLU kernel's, value for value",
            ),
            (
                "cuda_graph",
                self.cuda_graph,
                "static_kv_cache",
                self.static_kv_cache,
                "a graph replays fixed addresses, and a growing cache reallocates every step",
            ),
        ];
        crate::optim::check_needs("runtime.optim", &rules)?;
        Ok(())
    }
}
