//! Which fast-path implementations the decoder is built with (`runtime.optim.*` minus the decode
//! loop switches, which live in [`crate::models::common::graph_decode::StepPath`] and `GenerateConfig`). Every switch has an eager
//! counterpart so both can be profiled; tests check each against the eager path.

/// Implementation choices (decoder, and vision where a model has it), fixed when the weights are
/// loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelOptim {
    /// One matmul for q/k/v and one for gate/up (weights concatenated at load time).
    pub fused_projections: bool,
    /// Routed experts as grouped GEMMs over expert-sorted tokens (`torch._grouped_mm`), with no
    /// host sync; off: per-expert loop (one host sync per MoE layer) or gathered weights for a
    /// few tokens, as the MoE dispatch `Auto` picks.
    pub grouped_moe: bool,
    /// libtorch's fused scaled-dot-product attention (flash / cuDNN / memory-efficient, chosen by
    /// libtorch); off: explicit matmul + fp32 softmax + matmul, like HF's eager attention.
    pub sdpa: bool,
    /// Preallocated KV cache written in place; off: grows by concatenation every step (HF
    /// `DynamicCache`).
    pub static_kv_cache: bool,
    /// libtorch's one-kernel RMSNorm (`_fused_rms_norm`, fp32 accumulation, one rounding);
    /// off: HF's eight-op version (fp32 normalise, round, scale in the model dtype).
    pub fused_rms_norm: bool,
    /// Vision (SAM): the decomposed relative-position bias folded into q·k as extra channels
    /// instead of a materialised [B, heads, N, N] bias.
    pub sam_fused_rel_pos: bool,
    /// Vision (SAM): windowed blocks project on the whole grid and split into windows and heads
    /// with one copy each way.
    pub sam_fused_windows: bool,
    /// MoE (CUDA only, with `grouped_moe`, up to 4,096 token slots): routing softmax, top-k and
    /// the expert sort in one llmprof CUDA kernel.
    pub moe_routing_kernel: bool,
    /// Vision (SAM, CUDA only): q′/k′/v packing and window merging by llmprof's CUDA kernels.
    pub sam_cuda_kernels: bool,
    /// Vision (SAM, with `sam_cuda_kernels`): the relative-position products as one GEMM with
    /// both axes' resized tables, gathered into q′ by an llmprof kernel.
    pub sam_rel_pos_gemm: bool,
    /// Vision (SAM, with `sam_cuda_kernels`): windowed blocks project on the windows; the
    /// add + LayerNorm kernel reads them in place.
    pub sam_proj_in_windows: bool,
    /// Vision (SAM): the patch embedding as one GEMM over unfolded patches.
    pub sam_patch_gemm: bool,
    /// Vision (CUDA only): pixels uploaded as uint8 from pinned memory, normalised on the GPU.
    pub vision_uint8_upload: bool,
    /// Vision (CUDA only, with `vision_uint8_upload`): each call uploads its pinned views
    /// itself, inside its CUDA graph where there is one.
    pub vision_graph_uploads: bool,
    /// Vision (CUDA only): each stage captured as a CUDA graph per input shape and replayed.
    pub vision_cuda_graph: bool,
    /// ... for prefills of at most this many pages (0: all).
    pub vision_cuda_graph_max_pages: usize,
    /// Vision (CUDA only, with `vision_cuda_graph`): a pass's calls overlapped on two streams
    /// in one graph.
    pub vision_streams: bool,
    /// The decoder's prefill (CUDA only, static cache, grouped MoE) as a CUDA graph per shape.
    pub prefill_cuda_graph: bool,
    /// ... for prefills of at most this many rows (0: all).
    pub prefill_cuda_graph_max_batch: usize,
    /// Decode steps (CUDA only, with `fused_projections`): RoPE and the K/V cache write in one
    /// llmprof CUDA kernel per layer.
    pub rope_kv_kernel: bool,
    /// MoE (CUDA only, with `moe_routing_kernel`): the combine in one llmprof CUDA kernel.
    pub moe_combine_kernel: bool,
    /// SwiGLU MLPs (CUDA only, with `fused_projections`): the activation in one llmprof kernel.
    pub swiglu_kernel: bool,
    /// Decoders (CUDA only, with `fused_rms_norm`): each residual add and the RMSNorm after it
    /// in one llmprof kernel.
    pub add_rms_norm_kernel: bool,
    /// Vision encoders (CUDA only): each residual add and the LayerNorm after it in one llmprof
    /// kernel.
    pub add_layer_norm_kernel: bool,
    /// CLIP (CUDA only): quickGELU in one llmprof kernel.
    pub quick_gelu_kernel: bool,
    /// SAM (Hopper, bf16): the MLP's first Linear and its GELU in one CUTLASS GEMM.
    pub sam_gelu_epilogue: bool,
    /// CLIP (Hopper, bf16): the MLP's first Linear and its quickGELU in one CUTLASS GEMM.
    pub clip_gelu_epilogue: bool,
    /// SAM (bf16, CUDA kernels): windowed attention in one llmprof kernel.
    pub sam_window_attention_kernel: bool,
    /// SAM (bf16, CUDA kernels, Hopper): global attention in one flash-attention kernel with
    /// the relative-position bias inside.
    pub sam_global_attention_kernel: bool,
    /// SAM (bf16, CUDA kernels, Hopper): windowed attention in one flash-attention kernel that
    /// reads and writes the grid.
    pub sam_window_fmha_kernel: bool,
    /// Graph decode steps (CUDA only): attention over the written KV slots in llmprof's kernel.
    pub decode_attention_kernel: bool,
    /// ... for KV windows of at least this many slots (0: all).
    pub decode_attention_min_window: i64,
}

impl ModelOptim {
    /// Everything off: the HF-like eager implementation.
    pub const EAGER: ModelOptim = ModelOptim {
        fused_projections: false,
        grouped_moe: false,
        sdpa: false,
        static_kv_cache: false,
        fused_rms_norm: false,
        sam_fused_rel_pos: false,
        sam_fused_windows: false,
        sam_cuda_kernels: false,
        sam_rel_pos_gemm: false,
        sam_proj_in_windows: false,
        vision_uint8_upload: false,
        vision_graph_uploads: false,
        moe_routing_kernel: false,
        sam_patch_gemm: false,
        vision_cuda_graph: false,
        vision_cuda_graph_max_pages: 0,
        vision_streams: false,
        prefill_cuda_graph: false,
        prefill_cuda_graph_max_batch: 0,
        rope_kv_kernel: false,
        moe_combine_kernel: false,
        swiglu_kernel: false,
        add_rms_norm_kernel: false,
        add_layer_norm_kernel: false,
        quick_gelu_kernel: false,
        sam_gelu_epilogue: false,
        clip_gelu_epilogue: false,
        sam_window_attention_kernel: false,
        sam_global_attention_kernel: false,
        sam_window_fmha_kernel: false,
        decode_attention_kernel: false,
        decode_attention_min_window: 0,
    };

    /// Everything on.
    pub const FAST: ModelOptim = ModelOptim {
        fused_projections: true,
        grouped_moe: true,
        sdpa: true,
        static_kv_cache: true,
        fused_rms_norm: true,
        sam_fused_rel_pos: true,
        sam_fused_windows: true,
        sam_cuda_kernels: true,
        sam_rel_pos_gemm: true,
        sam_proj_in_windows: true,
        vision_uint8_upload: true,
        vision_graph_uploads: true,
        moe_routing_kernel: true,
        sam_patch_gemm: true,
        vision_cuda_graph: true,
        vision_cuda_graph_max_pages: 0,
        vision_streams: true,
        prefill_cuda_graph: true,
        prefill_cuda_graph_max_batch: 0,
        rope_kv_kernel: true,
        moe_combine_kernel: true,
        swiglu_kernel: true,
        add_rms_norm_kernel: true,
        add_layer_norm_kernel: true,
        quick_gelu_kernel: true,
        sam_gelu_epilogue: true,
        clip_gelu_epilogue: true,
        sam_window_attention_kernel: true,
        sam_global_attention_kernel: true,
        sam_window_fmha_kernel: true,
        decode_attention_kernel: true,
        decode_attention_min_window: 0,
    };
}

impl Default for ModelOptim {
    /// The configuration the model used before the switches existed: split projections,
    /// `MoeDispatch::Auto`, SDPA, static cache, HF's RMSNorm.
    fn default() -> Self {
        ModelOptim {
            sdpa: true,
            static_kv_cache: true,
            ..ModelOptim::EAGER
        }
    }
}

/// The decoder implementation choices of `runtime.optim`.
pub fn model_optim(spec: &llmprof::spec::RunSpec) -> ModelOptim {
    let o = &spec.runtime.optim;
    ModelOptim {
        fused_projections: o.fused_projections,
        grouped_moe: o.grouped_moe,
        sdpa: o.sdpa,
        static_kv_cache: o.static_kv_cache,
        fused_rms_norm: o.fused_rms_norm,
        sam_fused_rel_pos: o.sam_fused_rel_pos,
        sam_fused_windows: o.sam_fused_windows,
        sam_cuda_kernels: o.sam_cuda_kernels,
        sam_rel_pos_gemm: o.sam_rel_pos_gemm,
        sam_proj_in_windows: o.sam_proj_in_windows,
        vision_uint8_upload: o.vision_uint8_upload,
        vision_graph_uploads: o.vision_graph_uploads,
        moe_routing_kernel: o.moe_routing_kernel,
        sam_patch_gemm: o.sam_patch_gemm,
        vision_cuda_graph: o.vision_cuda_graph,
        vision_cuda_graph_max_pages: o.vision_cuda_graph_max_pages as usize,
        vision_streams: o.vision_streams,
        prefill_cuda_graph: o.prefill_cuda_graph,
        prefill_cuda_graph_max_batch: o.prefill_cuda_graph_max_batch as usize,
        rope_kv_kernel: o.rope_kv_kernel,
        moe_combine_kernel: o.moe_combine_kernel,
        swiglu_kernel: o.swiglu_kernel,
        add_rms_norm_kernel: o.add_rms_norm_kernel,
        add_layer_norm_kernel: o.add_layer_norm_kernel,
        quick_gelu_kernel: o.quick_gelu_kernel,
        sam_gelu_epilogue: o.sam_gelu_epilogue,
        clip_gelu_epilogue: o.clip_gelu_epilogue,
        sam_window_attention_kernel: o.sam_window_attention_kernel,
        sam_global_attention_kernel: o.sam_global_attention_kernel,
        sam_window_fmha_kernel: o.sam_window_fmha_kernel,
        decode_attention_kernel: o.decode_attention_kernel,
        decode_attention_min_window: o.decode_attention_min_window as i64,
    }
}
