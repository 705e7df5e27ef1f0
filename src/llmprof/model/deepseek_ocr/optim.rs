//! `model.optim` of the deepseek_ocr family: its own fast-path switches, for its vision encoders
//! (SAM, CLIP, the query encoder, the projector) and its MoE decoder layers. Presets:
//! conf/model/deepseek_ocr/optim/{fast,eager}.yaml, picked by the runtime preset's name.
use crate::optim::{preset, EngineOptim, FamilyOptions};
use serde::{Deserialize, Serialize};

/// `model.optim.*` of DeepSeek-OCR and OCR-2; each is reported in metrics.json
/// (`optim.model_switches`). Runs recorded before a switch existed read it as off.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DeepseekOcrOptim {
    /// Routed experts as grouped GEMMs (torch._grouped_mm) instead of a per-expert loop.
    pub grouped_moe: bool,
    /// The vision views of every row of a batch (and every crop of a page) go through SAM and
    /// CLIP together, grouped by size, at most `vision_max_views` views per call; off: one page
    /// at a time (its crops batched, its global view alone). Absent from runs recorded before
    /// the switch existed: read as off.
    #[serde(default)]
    pub batched_vision: bool,
    #[serde(default)]
    pub vision_max_views: u32,
    /// SAM's decomposed relative-position bias folded into q·k as extra channels (fused
    /// attention, no mask) instead of a materialised [B, heads, N, N] bias. Absent: off.
    #[serde(default)]
    pub sam_fused_rel_pos: bool,
    /// SAM's windowed blocks project on the whole grid and split into windows and heads with one
    /// copy each way instead of partition/unpartition copies. Absent: off.
    #[serde(default)]
    pub sam_fused_windows: bool,
    /// On a CUDA device, SAM's folded-bias attention packs q′/k′/v and merges windows with
    /// llmprof's own CUDA kernels instead of pad, partition and concatenation copies (needs
    /// `sam_fused_rel_pos`; no effect on the CPU). Absent: off.
    #[serde(default)]
    pub sam_cuda_kernels: bool,
    /// With `sam_cuda_kernels`, SAM's relative-position products as one GEMM of q with both
    /// axes' resized tables (each relative offset once) and one llmprof kernel gathering them
    /// into q′, instead of two batched GEMMs over copies of q per window row and column and
    /// strided copies into q′. Absent: off.
    #[serde(default)]
    pub sam_rel_pos_gemm: bool,
    /// With `sam_cuda_kernels`, SAM's windowed blocks run the attention's output projection on
    /// the windows and the add + LayerNorm kernel (`add_layer_norm_kernel`) reads each token's
    /// row where its window put it, instead of a merge copy back to the grid before the
    /// projection. Without the add + LayerNorm kernel it has no effect (the windows are merged
    /// before the projection, as with the switch off). Absent: off.
    #[serde(default)]
    pub sam_proj_in_windows: bool,
    /// Page pixels go to the GPU as uint8 from pinned memory and are normalised there, instead
    /// of normalised to fp32 on the CPU and copied from pageable memory (4x the bytes). Absent:
    /// off.
    #[serde(default)]
    pub vision_uint8_upload: bool,
    /// With `vision_uint8_upload` on a CUDA device, for batches whose pages have the same views, a
    /// vision call copies its page-locked uint8 views to the GPU itself (inside its CUDA graph
    /// where there is one, each replay pointing the captured copies at its pages), instead of
    /// every view being copied first and a call's views concatenated after (as batches of
    /// mixed tile grids still do). Absent: off.
    #[serde(default)]
    pub vision_graph_uploads: bool,
    /// On a CUDA device with `grouped_moe`, MoE routing (the router logits in one CUDA kernel,
    /// then softmax, top-k, the stable sort of token slots by expert and the group ends in
    /// another, or three over many blocks for a prefill) by llmprof's kernels, instead of about a
    /// dozen libtorch kernels. Absent: off.
    #[serde(default)]
    pub moe_routing_kernel: bool,
    /// SAM's patch embedding (16×16 convolution, stride 16, 3 input channels) as one GEMM over
    /// unfolded patches, on tensor cores. Absent: off.
    #[serde(default)]
    pub sam_patch_gemm: bool,
    /// On a CUDA device, each vision stage (SAM, the encoder after it, the projector) is
    /// captured as a CUDA graph per input shape on first use and replayed after, so the vision
    /// pass costs a few launches instead of thousands. Absent: off.
    #[serde(default)]
    pub vision_cuda_graph: bool,
    /// With `vision_cuda_graph`: the most pages a prefill may hold for its vision stages to
    /// replay graphs; larger batches launch op by op (their launches are amortised, and graphs
    /// at batch 32 slowed the decode steps after them, reports/performance-history.md). 0: every
    /// batch. Absent: 0.
    #[serde(default)]
    pub vision_cuda_graph_max_pages: u64,
    /// With `vision_cuda_graph` on a CUDA device, when the views of a prefill make several vision
    /// calls (views of one size per call), the whole vision pass is one CUDA graph whose capture
    /// runs every second call (SAM, the encoder, the projector) on a second stream, so the calls
    /// overlap in its replays. The vision sub-stages then get no times of their own and Kineto
    /// attributes their kernels to the vision stage. Where vision runs op by op it has no
    /// effect (eager work on a second stream slows later graph replays). Absent: off.
    #[serde(default)]
    pub vision_streams: bool,
    /// On a CUDA device with `moe_routing_kernel`, the MoE combine (the weighted sum of each
    /// token's expert outputs read from the expert-sorted rows, plus the shared experts) in
    /// llmprof's one CUDA kernel per layer, instead of the unsort copy, casts, multiply, sum and
    /// add. Absent: off.
    #[serde(default)]
    pub moe_combine_kernel: bool,
    /// With `moe_combine_kernel` and `runtime.optim.gemv_kernel` (both required), at decode steps
    /// whose routed slots and shared-expert slots fit the GEMV kernel's grouped form (batch 1-2
    /// for DeepSeek-OCR):
    /// the shared experts run as experts of the grouped GEMVs (their intermediate split into
    /// experts of the routed experts' width, weight 1, stacked after the routed experts at
    /// load), three launches per layer fewer; their time is then in the experts' modules.
    /// Elsewhere they run as their own MLP. Absent: off.
    #[serde(default)]
    pub moe_shared_experts_fused: bool,
    /// On a CUDA device, each residual add and the LayerNorm after it in the vision encoders'
    /// blocks (SAM, CLIP) in llmprof's one CUDA kernel, instead of an add and the norm. Row
    /// widths the kernel does not take fall back to the two ops. Absent: off.
    #[serde(default)]
    pub add_layer_norm_kernel: bool,
    /// On a CUDA device, CLIP's quickGELU (x·sigmoid(1.702·x)) in llmprof's one CUDA kernel,
    /// instead of a multiply by the scalar, a sigmoid and a multiply. Absent: off.
    #[serde(default)]
    pub quick_gelu_kernel: bool,
    /// On a Hopper GPU (compute capability 9.0) with bf16 weights, the first Linear of SAM's MLP
    /// and its erf-form GELU (erf within 1.5e-7) in one CUTLASS GEMM whose epilogue adds the
    /// bias and applies GELU to the fp32 accumulator, instead of the GEMM and a separate GELU
    /// pass over the 3,072-wide activations. Elsewhere (other GPUs, fp32, a build without the CUTLASS
    /// headers) the two ops run as with the switch off. Absent: off.
    #[serde(default)]
    pub sam_gelu_epilogue: bool,
    /// On a Hopper GPU (compute capability 9.0) with bf16 weights, the first Linear of CLIP's
    /// MLP and its quickGELU in one CUTLASS GEMM whose epilogue adds the bias and applies
    /// quickGELU to the fp32 accumulator, instead of the GEMM and a quickGELU pass over the
    /// 4,096-wide activations. Elsewhere the two ops run as with the switch off. Absent: off.
    #[serde(default)]
    pub clip_gelu_epilogue: bool,
    /// With `sam_proj_in_windows` (and so `sam_cuda_kernels`), in bf16 on a GPU: SAM's windowed
    /// attention in one llmprof kernel that reads q, k and v from the qkv Linear's output and
    /// folds the decomposed relative-position bias into q·k inside the kernel (96 wide, no q′/k′
    /// in memory), instead of packing q′/k′ for cuDNN's attention (which runs them 128 wide).
    /// fp32, other head sizes and windows other than 14×14 (SAM's) and 4×4 keep the folded path.
    /// Absent: off.
    #[serde(default)]
    pub sam_window_attention_kernel: bool,
    /// With `sam_cuda_kernels`, in bf16 on a Hopper GPU (compute capability 9.0) and a build
    /// with the CUTLASS headers: SAM's global attention in one flash-attention kernel (CUTLASS's
    /// Hopper FMHA) that reads q, k and v from the qkv Linear's output and adds the decomposed
    /// relative-position bias to each score inside it (q·k 64 wide), instead of packing q′/k′
    /// for cuDNN's attention (192 wide). Grids of 32, 40, 64 and 80 tokens a side (SAM at 512,
    /// 640, 1024 and 1280 pixels); others, fp32 and other GPUs keep the folded path. Absent: off.
    #[serde(default)]
    pub sam_global_attention_kernel: bool,
    /// With `sam_cuda_kernels`, in bf16 on a Hopper GPU and a build with the CUTLASS headers:
    /// SAM's windowed attention (14×14 windows) in one flash-attention kernel (CUTLASS's Hopper
    /// FMHA) that reads the windows by TMA from the qkv Linear's output on the grid, adds the
    /// decomposed bias to each score and writes its output back on the grid: no pack, no q′/k′,
    /// no windowed copy. Ahead of `sam_window_attention_kernel` where both are on. fp32, other
    /// windows and other GPUs keep the other paths. Absent: off.
    #[serde(default)]
    pub sam_window_fmha_kernel: bool,
}

impl FamilyOptions for DeepseekOcrOptim {
    fn preset(name: &str) -> Result<Self, String> {
        preset::read(
            "conf/model/deepseek_ocr/optim",
            include_str!("../../../../conf/model/deepseek_ocr/optim/fast.yaml"),
            include_str!("../../../../conf/model/deepseek_ocr/optim/eager.yaml"),
            None,
            name,
        )
    }

    fn check(&self, engine: &EngineOptim) -> Result<(), String> {
        let o = self;
        // (switch, on, the switch it needs, that one on, why): each a switch that only works on
        // top of another.
        let rules = [
            ("sam_cuda_kernels", o.sam_cuda_kernels, "sam_fused_rel_pos", o.sam_fused_rel_pos,
             "the kernels pack the folded relative-position bias, which the materialised-bias attention does not use"),
            ("sam_rel_pos_gemm", o.sam_rel_pos_gemm, "sam_cuda_kernels", o.sam_cuda_kernels,
             "the products are gathered into the q′ that the kernels pack"),
            ("sam_proj_in_windows", o.sam_proj_in_windows, "sam_cuda_kernels", o.sam_cuda_kernels,
             "the projection runs on the windows that the kernels' attention writes"),
            ("sam_window_attention_kernel", o.sam_window_attention_kernel, "sam_proj_in_windows",
             o.sam_proj_in_windows, "the kernel writes its output in the windows, projected there"),
            ("sam_global_attention_kernel", o.sam_global_attention_kernel, "sam_cuda_kernels",
             o.sam_cuda_kernels, "the kernel replaces the kernels' global attention, on their products of q with the tables"),
            ("sam_window_fmha_kernel", o.sam_window_fmha_kernel, "sam_cuda_kernels",
             o.sam_cuda_kernels, "the kernel replaces the kernels' windowed attention, on their products of q with the tables"),
            ("vision_graph_uploads", o.vision_graph_uploads, "vision_uint8_upload", o.vision_uint8_upload,
             "the calls copy the page-locked uint8 views; fp32 views are normalised and copied before"),
            ("moe_routing_kernel", o.moe_routing_kernel, "grouped_moe", o.grouped_moe,
             "the kernel sorts token slots for the grouped GEMMs"),
            ("moe_combine_kernel", o.moe_combine_kernel, "moe_routing_kernel", o.moe_routing_kernel,
             "the combine reads the routing kernel's slot order"),
            ("moe_shared_experts_fused", o.moe_shared_experts_fused, "moe_combine_kernel",
             o.moe_combine_kernel, "the combine sums the shared experts' slots with the routed ones"),
        ];
        crate::optim::check_needs("model.optim", &rules)?;
        if o.moe_shared_experts_fused && !engine.gemv_kernel {
            return Err("model.optim.moe_shared_experts_fused=true needs runtime.optim.gemv_kernel=true: the shared experts run as slots of the GEMV kernel's grouped form\n  fix: set runtime.optim.gemv_kernel=true, or model.optim.moe_shared_experts_fused=false".into());
        }
        if engine.cuda_graph && !o.grouped_moe {
            return Err("runtime.optim.cuda_graph=true needs model.optim.grouped_moe=true: the per-expert loop reads expert counts on the host, which a CUDA graph cannot capture\n  fix: set model.optim.grouped_moe=true, or runtime.optim.cuda_graph=false".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_presets_read_and_pass_their_own_checks() {
        let fast = DeepseekOcrOptim::preset("fast").unwrap();
        let eager = DeepseekOcrOptim::preset("eager").unwrap();
        fast.check(&EngineOptim::fast()).unwrap();
        eager.check(&EngineOptim::eager()).unwrap();
        assert!(fast.sam_cuda_kernels && !eager.sam_cuda_kernels);
        // eager.yaml keeps fast.yaml's counts and turns every switch off.
        assert_eq!(eager.vision_max_views, fast.vision_max_views);
        let on: Vec<String> = crate::optim::switches_on(&eager);
        assert!(on.is_empty(), "on in eager.yaml: {on:?}");
    }

    #[test]
    fn a_switch_without_its_prerequisite_names_the_fix() {
        let mut o = DeepseekOcrOptim::preset("fast").unwrap();
        o.sam_fused_rel_pos = false;
        let e = o.check(&EngineOptim::fast()).unwrap_err();
        assert!(
            e.contains(
                "model.optim.sam_cuda_kernels=true needs model.optim.sam_fused_rel_pos=true"
            ),
            "{e}"
        );
        let mut o = DeepseekOcrOptim::preset("fast").unwrap();
        (o.grouped_moe, o.moe_routing_kernel, o.moe_combine_kernel) = (false, false, false);
        o.moe_shared_experts_fused = false;
        let e = o.check(&EngineOptim::fast()).unwrap_err();
        assert!(
            e.contains("runtime.optim.cuda_graph=true needs model.optim.grouped_moe=true"),
            "{e}"
        );
        let o = DeepseekOcrOptim::preset("fast").unwrap();
        let mut engine = EngineOptim::fast();
        engine.gemv_kernel = false;
        let e = o.check(&engine).unwrap_err();
        assert!(
            e.contains(
                "model.optim.moe_shared_experts_fused=true needs runtime.optim.gemv_kernel=true"
            ),
            "{e}"
        );
    }
}
