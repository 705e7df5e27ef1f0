//! The modules the vision encoders mark below their stage regions (#41): SAM, CLIP and the
//! DeepSeek-OCR-2 query encoder are stacks of blocks, each an attention half and a feed-forward
//! half, between an embedding and an output part. The stage (sam, clip, query_encoder,
//! projector) tells the encoders apart, so they share these names. As in the decoder, a
//! residual add is charged to the half whose norm it is fused with.
use crate::region::Module;

/// Patches (SAM: the patch GEMM or convolution; CLIP: the class token) with their positions,
/// and CLIP's pre-LayerNorm; the query encoder's token and query concatenation and RoPE table.
pub const PATCH_EMBED: Module = Module::root("patch_embed");
/// One transformer block of a vision encoder, indexed by its position.
pub const BLOCK: Module = Module::indexed("block", None);
/// Its attention half: the input norm (for block 0; later blocks get it fused with the previous
/// block's residual add), q/k/v, attention, the output projection and the residual add fused
/// with the feed-forward half's norm.
pub const BLOCK_ATTENTION: Module = Module::within("attn", BLOCK);
/// Its feed-forward half: fc1 with the activation, fc2, and the residual add fused with the
/// next block's input norm.
pub const BLOCK_FFN: Module = Module::within("ffn", BLOCK);
/// SAM's neck (1×1 and 3×3 convolutions with LayerNorm2d) and compressor convolutions.
pub const NECK: Module = Module::root("neck");
/// The projector's linear layer (the arrangement of pages after it is outside the stage's
/// graphs and marked by no module).
pub const PROJECTION: Module = Module::root("projection");

/// The vision encoders' modules (the query encoder's final norm is the decoder's `final_norm`).
pub const VISION_MODULES: &[Module] = &[
    PATCH_EMBED,
    BLOCK,
    BLOCK_ATTENTION,
    BLOCK_FFN,
    NECK,
    PROJECTION,
];
