/*
 * C launchers of llmprof's own CUDA kernels (compiled by nvcc, see build.rs). They take raw device
 * pointers, sizes and a stream, check nothing about tensors (csrc/kernels.cpp does that) and
 * return the cudaError_t of the launch (0 = success).
 */
#ifndef LLMPROF_KERNELS_LAUNCH_H
#define LLMPROF_KERNELS_LAUNCH_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* CUDA's largest grid y dimension: kernels that put tokens or splits on y take at most this many. */
#define LLMPROF_K_MAX_GRID_Y 65535

/* Whether the kernels below launch with programmatic dependent launch (pdl.cuh): `on` for the
 * process (runtime.optim.programmatic_launch), applied on compute capability 9.0+ only. */
void llmprof_k_set_programmatic_launch(int on);
/* 1 where the kernels launch with it now (policy on, current device 9.0+), 0 otherwise. */
int llmprof_k_programmatic_launch(void);

/* Element types the kernels are instantiated for. */
enum llmprof_k_dtype { LLMPROF_K_F32 = 0, LLMPROF_K_BF16 = 1, LLMPROF_K_F16 = 2 };

/* Shape of SAM's attention over a grid: the token grid of `batch` views of `grid_h`×`grid_w`
 * tokens, cut into windows of `win_h`×`win_w` (the whole grid for global attention), the grid
 * padded at the bottom/right to `pad_h`×`pad_w` (multiples of the window). */
typedef struct llmprof_k_sam_shape {
  int64_t batch, grid_h, grid_w, pad_h, pad_w, win_h, win_w, heads, head_dim;
  /* Width of q′ and k′: head_dim + win_h + win_w rounded up to a multiple of 8. */
  int64_t aug_dim;
} llmprof_k_sam_shape;

/* q′, k′ and v of SAM's attention with the relative-position bias folded into q·k
 * (worker/models/deepseek_ocr/vision/sam_attention_cuda.rs):
 *   qkv      [batch, grid_h, grid_w, 3, heads, head_dim], contiguous (the qkv Linear's output)
 *   bias     [3·heads·head_dim]: the qkv Linear's bias, the value of padded tokens
 *   q_aug, k_aug [batch·windows, win_h·win_w, heads, aug_dim]; v [.., head_dim] (outputs):
 *            q′ = [q, (left for the caller), …], k′ = [k, onehot(row), onehot(col), 0…]
 *   q_rows   [win_h, batch·windows·heads, win_w, head_dim] and q_cols [win_w, .., win_h,
 *            head_dim]: q again, batched by row and by column of the window, the layouts of the
 *            two batched relative-position GEMMs; q′'s columns after head_dim are then zeroed.
 *            Both NULL: neither is written and q′'s columns after head_dim are left for
 *            llmprof_k_sam_fill_rel_pos.
 * keys_ready: k_aug already holds its one-hot and zero columns (an earlier pack of this shape
 *            wrote them; they do not depend on the layer): only its first head_dim columns are
 *            written.
 * vec16: move 16-byte vectors (head_dim and aug_dim multiples of 16 / element size, every pointer
 * 16-byte aligned), else single elements. */
int llmprof_k_sam_pack_qkv(int dtype, const void* qkv, const void* bias, void* q_aug, void* k_aug,
                           void* v, void* q_rows, void* q_cols, llmprof_k_sam_shape shape,
                           int keys_ready, int vec16, void* stream);

/* SAM's windowed attention in one kernel, bf16, head_dim 64, windows of 14×14 (SAM's) or 4×4:
 *   qkv   [batch, grid_h, grid_w, 3, heads, 64] (the qkv Linear's output), 16-byte aligned
 *   bias  [3·heads·64]: the value of padded tokens (the Linear's bias)
 *   prod  [heads, batch·grid_h·grid_w, prod_cols]: each grid token's q times the √64-scaled
 *         resized tables, the 2·win_h − 1 row offsets then the 2·win_w − 1 column offsets
 *   out   [batch·windows, win_h·win_w, heads·64] (rows of padded tokens written too)
 * out = softmax((q·kᵀ + prod_h + prod_w)/√64)·v per window and head. */
int llmprof_k_sam_window_attention(const void* qkv, const void* bias, const void* prod,
                                   int64_t prod_cols, void* out, llmprof_k_sam_shape shape,
                                   void* stream);

/* Element strides of uint8 pixels [B,3,S,S]. */
typedef struct llmprof_k_pixel_strides {
  int64_t b, c, y, x;
} llmprof_k_pixel_strides;

/* SAM's patch-embedding operand from uint8 pixels [batch, 3, side, side] (`strides`): out
 * [batch, g, g, 3·patch·patch] contiguous (g = side / patch; columns (channel, row, column)),
 * (x/255 − 0.5)/0.5 in fp32 rounded once to the element type. vec16: 16-byte stores (patch a
 * multiple of 16 / element size, `out` 16-byte aligned). */
int llmprof_k_sam_patches(int dtype, const void* pixels, llmprof_k_pixel_strides strides,
                          void* out, int64_t batch, int64_t side, int patch, int vec16,
                          void* stream);

/* q′'s columns after head_dim (q_aug as above, `rows` = batch·windows·win_h·win_w·heads rows)
 * from prod [rows, prod_cols], the products of each row's q with the resized, scaled
 * relative-position tables of both axes: columns [0, 2·win_h − 1) the row axis', then
 * 2·win_w − 1 of the column axis'. q′[r, head_dim + kh] = prod[r, qh − kh + win_h − 1],
 * q′[r, head_dim + win_h + kw] = prod[r, 2·win_h − 1 + qw − kw + win_w − 1], zeros after.
 * vec16 as for the packing (q_aug 16-byte aligned). */
int llmprof_k_sam_fill_rel_pos(int dtype, const void* prod, int64_t prod_cols, void* q_aug,
                               int64_t rows, llmprof_k_sam_shape shape, int vec16, void* stream);

/* The attention output o [batch·windows, heads, win_h·win_w, head_dim] (element strides
 * o_strides[4]) merged back to the grid and cropped: out [batch, grid_h, grid_w, heads·head_dim],
 * contiguous. vec16: o_strides[3] == 1, head_dim and the other strides multiples of
 * 16 / element size, both pointers 16-byte aligned. */
int llmprof_k_sam_merge_windows(int dtype, const void* o, const int64_t* o_strides, void* out,
                                llmprof_k_sam_shape shape, int vec16, void* stream);

/* Limits of the MoE routers: experts per layer (both), and token slots (tokens × k) per call of
 * the one-block router, which the shim picks up to there (decode steps; above, the many-block
 * router: on an H100 the one block took 247 µs for a 914-token prefill). */
#define LLMPROF_K_MOE_MAX_EXPERTS 256
#define LLMPROF_K_MOE_ONE_BLOCK_MAX_SLOTS 1024
/* Tokens up to which the one-block router also gathers x's rows (csrc/kernels.cpp). */
#define LLMPROF_K_MOE_GATHER_MAX_TOKENS 4

/* DeepSeek MoE routing of `tokens` rows of fp32 router logits [tokens, experts]: softmax, greedy
 * top-k (no renormalisation) × scaling → weights [tokens, k] fp32 and ids [tokens, k] int64 (in
 * descending order of weight; equal logits: lower id first); the slots (token·k + j) sorted
 * stably by expert → order [tokens·k] int64, their tokens slot_token [tokens·k] int64 and the
 * inverse permutation slot_pos [tokens·k] int64 (slot → sorted row); the cumulative expert counts
 * group_ends [experts] int32. The one-block router: one launch, tokens·k ≤ ONE_BLOCK_MAX_SLOTS;
 * with x [tokens, row_bytes] (not NULL) it also copies each sorted slot's token row to sorted_x
 * [tokens·k, row_bytes], the expert GEMMs' input. With shared > 0 each token has k + shared
 * slots: after its routed ones, the shared experts as experts `experts`.. with weight 1 (the
 * shared experts run inside the grouped GEMMs); k above reads k + shared, group_ends has
 * experts + shared entries. */
int llmprof_k_moe_route_one_block(const float* logits, int64_t tokens, int experts, int k,
                                  int shared, float scaling, float* weights, int64_t* ids,
                                  int64_t* order,
                                  int64_t* slot_token, int64_t* slot_pos, int32_t* group_ends,
                                  const void* x, int64_t row_bytes, void* sorted_x, void* stream);

/* The same outputs from three launches over many blocks (any number of tokens): route the tokens
 * and count experts per block of tokens, scan the counts, place each block's slots. scratch:
 * llmprof_k_moe_route_scratch(tokens, experts) int32 values of device memory. */
int64_t llmprof_k_moe_route_scratch(int64_t tokens, int experts);
int llmprof_k_moe_route_many(const float* logits, int64_t tokens, int experts, int k,
                             float scaling, float* weights, int64_t* ids, int64_t* order,
                             int64_t* slot_token, int64_t* slot_pos, int32_t* group_ends,
                             int32_t* scratch, void* stream);

/* The MoE combine: y [tokens, hidden] = round(Σ_j weights[t, j] · sorted[slot_pos[t·k + j]])
 * (+ shared [tokens, hidden] when not NULL, added after the rounding), the sum in fp32 in order
 * j = 0..k−1. sorted [tokens·k, hidden] holds the expert outputs in expert-sorted order,
 * weights [tokens, k] fp32, slot_pos [tokens·k] int64 as moe_route writes it; k ≤ MAX_K,
 * tokens ≤ LLMPROF_K_MAX_GRID_Y. */
#define LLMPROF_K_MOE_COMBINE_MAX_K 64
int llmprof_k_moe_combine(int dtype, const void* sorted, const int64_t* slot_pos,
                          const float* weights, const void* shared, void* y, int64_t tokens,
                          int64_t hidden, int k, void* stream);

/* RoPE and the KV-cache write of a fused qkv projection: `tokens` per row (1 for a decode step). */
typedef struct llmprof_k_rope_kv_shape {
  int batch, tokens, heads, kv_heads, head_dim;
  /* Slots of the KV cache per (row, kv head). */
  int64_t slots;
  /* 1: the second RoPE term added with one fused multiply-add (libtorch's addcmul); 0: rounded
   * product, then add. */
  int fused_add;
} llmprof_k_rope_kv_shape;

/* qkv [batch, tokens, (heads + 2·kv_heads)·head_dim] (per token: q heads, k heads, v heads), cos
 * and sin [batch, tokens, head_dim] (NeoX rotate-half tables of each token's position): q rotated
 * → q [batch, tokens, heads, head_dim]; k rotated and v → k_cache and v_cache [batch, kv_heads,
 * slots, head_dim] at slots *slot + token (*slot a device int64; a slot out of range: nothing
 * written). batch·tokens ≤ MAX_GRID_Y. */
int llmprof_k_rope_kv(int dtype, const void* qkv, const void* cos, const void* sin,
                      const int64_t* slot, void* q, void* k_cache, void* v_cache,
                      llmprof_k_rope_kv_shape shape, void* stream);

/* The windowed no-repeat-n-gram rule. recent [rows, window] int64: the last `window` generated
 * ids per row, newest last, unwritten slots negative. ngram_ban sets logits [rows, vocab] fp32
 * to −∞ at every token that completes an n-gram whose first n − 1 ids equal the newest n − 1
 * (bannable [vocab] bool, or NULL: every id may be banned); ngram_push shifts each row left by
 * one and appends next [rows] int64 (window ≤ MAX_WINDOW). */
#define LLMPROF_K_NGRAM_MAX_WINDOW 4096
int llmprof_k_ngram_ban(float* logits, int64_t rows, int64_t vocab, const int64_t* recent,
                        int window, int n, const bool* bannable, void* stream);
int llmprof_k_ngram_push(int64_t* recent, int64_t rows, int window, const int64_t* next,
                         void* stream);

/* Greedy selection: out [rows] int64 = the index of each row's largest value of logits [rows,
 * vocab] fp32 (the first of equal ones, NaN above every number: libtorch argmax's choice).
 * row_key [rows] and row_done [rows] are scratch that must be zero before the first call; each
 * call leaves them zero. rows ≤ MAX_GRID_Y, vocab < 2^32. */
int llmprof_k_argmax(const float* logits, int64_t rows, int64_t vocab,
                     unsigned long long* row_key, unsigned int* row_done, int64_t* out,
                     void* stream);

/* SwiGLU's activation: gate_up [rows, 2f] (gate columns, then up columns) → out [rows, f] =
 * round(round(silu(gate)) · up). */
int llmprof_k_silu_mul(int dtype, const void* gate_up, void* out, int64_t rows, int64_t f,
                       void* stream);
/* Whether llmprof_k_silu_mul takes its 16-byte-vector kernel for these arguments (*vectors 1)
 * or its element kernel (0). */
int llmprof_k_silu_mul_uses_vectors(int dtype, const void* gate_up, const void* out, int64_t rows,
                                    int64_t f, int* vectors);

/* CLIP's quickGELU over n elements: out = round(x · round(sigmoid(round(1.702 · x)))). vec16: n
 * a multiple of 16 / element size and both pointers 16-byte aligned (16-byte vectors). */
int llmprof_k_quick_gelu(int dtype, const void* x, void* out, int64_t n, int vec16, void* stream);

/* The residual add and RMSNorm: sum [rows, hidden] = round(x + delta), out = round(sum ·
 * rsqrt(mean(sum²) + eps) · weight [hidden]) (fp32 inside, one rounding after the product);
 * hidden ≤ MAX_HIDDEN (a row lives in one block's registers). */
#define LLMPROF_K_ADD_RMS_NORM_MAX_HIDDEN 8192
int llmprof_k_add_rms_norm(int dtype, const void* x, const void* delta, const void* weight,
                           void* sum, void* out, int64_t rows, int64_t hidden, float eps,
                           void* stream);

/* Where row r of a [batch, grid_h, grid_w] token grid is in a tensor cut into win_h×win_w
 * windows over the grid padded to their multiples ([batch·windows, win_h·win_w], windows and
 * their tokens row-major, as SAM's attention writes them). win_h == 0: row r itself. */
typedef struct llmprof_k_window_rows {
  int64_t grid_h, grid_w, win_h, win_w;
} llmprof_k_window_rows;

/* Residual add + LayerNorm: sum = x + delta (rows × hidden, element type), out =
 * layer_norm(sum)·weight + bias; a warp per row. delta's row for row r is given by
 * `delta_rows` (windowed, or r). hidden must be a multiple of 32 16-byte vectors (256 bf16/f16
 * or 128 f32 channels) and at most LLMPROF_K_ADD_LAYER_NORM_MAX_PASSES of them; all pointers
 * 16-byte aligned. */
#define LLMPROF_K_ADD_LAYER_NORM_MAX_PASSES 8
int llmprof_k_add_layer_norm(int dtype, const void* x, const void* delta, const void* weight,
                             const void* bias, void* sum, void* out, int64_t rows, int64_t hidden,
                             float eps, llmprof_k_window_rows delta_rows, void* stream);

/* MoE router logits [tokens, experts] fp32 = x [tokens, hidden] (element type, read as fp32) ·
 * wᵀ ([experts, hidden] fp32); tokens ≤ LLMPROF_K_MAX_GRID_Y. */
int llmprof_k_router_logits(int dtype, const void* x, const float* w, float* logits,
                            int64_t tokens, int experts, int64_t hidden, void* stream);

/* Decode attention for one query token per row over the written slots of a static KV cache, in
 * splits of LLMPROF_K_DECODE_ATTN_CHUNK slots. */
#define LLMPROF_K_DECODE_ATTN_CHUNK 64
/* The most splits (the combine keeps a weight per split in the 48 KiB of shared memory a kernel
 * has without asking, beside its 16 static bytes). */
#define LLMPROF_K_DECODE_ATTN_MAX_SPLITS 12280
typedef struct llmprof_k_decode_attn_shape {
  int batch, heads, kv_heads, head_dim;
  /* Slots of the cache per (row, kv head); slots per split and the number of splits. */
  int64_t slots;
  int chunk, splits;
  /* Score scale (1/sqrt(head_dim)). */
  float scale;
  /* Non-zero: bf16/fp16 with at most 16 query heads per kv head take the tensor-core split pass
   * (decode_attention_mma.cu: each kv head's rows read once for its whole group, runs of splits
   * per block); otherwise, and for fp32, the CUDA-core pass (one block per head and split). */
  int tensor_cores;
} llmprof_k_decode_attn_shape;

/* q [batch, heads, head_dim]; k and v [batch, kv_heads, slots, head_dim]; row b attends to slots
 * pad[b] ..= *len (both int64 on the device; head h reads kv head h / (heads / kv_heads)).
 * part_o [batch·heads, splits, head_dim] and part_ml [batch·heads, splits, 2] fp32 are scratch
 * (a split with no visible slot writes only its part_ml, maximum −∞); out [batch, heads,
 * head_dim]. head_dim 64 or 128; chunk = LLMPROF_K_DECODE_ATTN_CHUNK; splits · chunk must cover
 * *len + 1; q, k and v 16-byte aligned. */
int llmprof_k_decode_attention(int dtype, const void* q, const void* k, const void* v,
                               const int64_t* pad, const int64_t* len, float* part_o,
                               float* part_ml, void* out, llmprof_k_decode_attn_shape shape,
                               void* stream);

/* A Linear over 1 ..= LLMPROF_K_GEMV_MAX_ROWS rows (csrc/kernels/gemv.cu): y [m, n] = x [m, k] ·
 * w [n, k]ᵀ (+ bias [n] where bias is not null), bf16 or fp16, all contiguous; k a multiple of 8,
 * x and w 16-byte aligned. With `swiglu` (one row, n even, no bias): w is a fused [gate; up]
 * projection and y [1, n / 2] = silu(gate)·up, rounded as the projection and swiglu.cu's kernel
 * round. The same `swiglu` in the two entry points below. */
#define LLMPROF_K_GEMV_MAX_ROWS 8
int llmprof_k_gemv(int dtype, const void* x, const void* w, const void* bias, void* y, int m,
                   int64_t n, int64_t k, int swiglu, void* stream);

/* The one-row GEMV with the residual add and RMSNorm before it folded in (csrc/kernels/gemv.cu):
 * sum [k] = x + delta, y [n] = rmsnorm(sum; norm_weight, eps) · w [n, k]ᵀ (+ bias [n] where bias
 * is not null), each rounded as the add + RMSNorm kernel and the GEMV round them; bf16 or fp16,
 * all contiguous; k a multiple of 8 and at most LLMPROF_K_ADD_RMS_NORM_MAX_HIDDEN; x, delta,
 * norm_weight, sum and w 16-byte aligned. */
int llmprof_k_gemv_add_rms_norm(int dtype, const void* x, const void* delta,
                                const void* norm_weight, float eps, void* sum, const void* w,
                                const void* bias, void* y, int64_t n, int64_t k, int swiglu,
                                void* stream);

/* The GEMV over a MoE step's token slots sorted by expert (csrc/kernels/gemv.cu): y [slots, n] =
 * x [slots, k] · w[e]ᵀ per slot, w [experts, n, k] and e the expert whose group in group_ends
 * (int32 [experts], inclusive cumulative slot counts, on the device; the last must equal
 * `slots`, a slot past it takes the last expert) holds the slot; 1 ..=
 * LLMPROF_K_GEMV_MAX_GROUPED_ROWS slots, bf16 or fp16, k a multiple of 8, x and w 16-byte
 * aligned. */
#define LLMPROF_K_GEMV_MAX_GROUPED_ROWS 16
int llmprof_k_gemv_grouped(int dtype, const void* x, const void* w, const int32_t* group_ends,
                           void* y, int slots, int experts, int64_t n, int64_t k, int swiglu,
                           void* stream);

/* Hopper GEMMs (csrc/kernels/sm90a, CUTLASS; built only with LLMPROF_HAVE_SM90A_GEMM and run
 * only on compute capability 9.0). */

/* CUTLASS's name for a status a Hopper GEMM returned negated (see below). */
const char* llmprof_k_sm90_status_string(int status);

/* Bytes of scratch llmprof_k_sm90_linear_gelu needs for these sizes and variant (may be 0;
 * negative for an unknown variant). */
int64_t llmprof_k_sm90_linear_gelu_workspace(int64_t m, int64_t n, int64_t k, int variant);

/* y [m, n] = act(x [m, k] · w [n, k]ᵀ + b [n]), all bf16 and row-major: the bias added to the
 * fp32 accumulator and the activation applied in fp32 before one rounding. variant 0: the
 * erf-form GELU (erf within 1.5e-7); 1: quickGELU v·σ(1.702·v). n and k multiples of 8, pointers 16-byte aligned,
 * m, n, k < 2³¹; workspace as large as llmprof_k_sm90_linear_gelu_workspace says. Returns 0, a
 * cudaError_t, or −(CUTLASS status) when CUTLASS refuses the problem or its setup fails. */
int llmprof_k_sm90_linear_gelu(const void* x, const void* w, const void* b, void* y, int64_t m,
                               int64_t n, int64_t k, void* workspace, void* stream, int variant);

/* Whether llmprof_k_sm90_sam_global_attention takes a grid side and head width. */
int llmprof_k_sm90_sam_global_attention_fits(int64_t grid, int64_t head_dim);

/* SAM's global attention over `batch` grids of grid×grid tokens (grid 32, 40, 64 or 80), bf16,
 * heads of 64, the decomposed relative-position bias added to each score inside a Hopper
 * flash-attention kernel (sm90a/sam_global_attention.cu):
 *   qkv   [batch, grid, grid, 3, heads, 64] (the qkv Linear's output), 16-byte aligned
 *   prod  [heads, batch·grid·grid, prod_cols]: each token's q times the √64-scaled resized
 *         tables, the 2·grid − 1 row offsets then the 2·grid − 1 column offsets
 *   out   [batch, grid, grid, heads·64]; lse [batch, heads, grid·grid] fp32 (scratch)
 * out = softmax((q·kᵀ + prod_h + prod_w)/√64)·v. Returns 0, a cudaError_t, or −(CUTLASS status)
 * (a failed launch included: CUTLASS reads and clears that CUDA error itself). */
int llmprof_k_sm90_sam_global_attention(const void* qkv, const void* prod, int64_t prod_cols,
                                        void* out, void* lse, int64_t batch, int64_t grid,
                                        int64_t heads, void* stream);

/* SAM's windowed attention (14×14 windows of an h×w grid padded at the bottom and right) in a
 * Hopper flash-attention kernel (sm90a/sam_window_fmha.cu), read and written on the grid:
 *   qkv   [batch, h, w, 3, heads, 64] bf16, the qkv Linear's output WITHOUT its k and v biases
 *         (padded tokens read as zero; the caller adds b_v back through the projection's bias)
 *   prod  [heads, batch·h·w, prod_cols]: each token's q times the √64-scaled tables, the 27 row
 *         offsets then the 27 column offsets
 *   out   [batch, h, w, heads·64]
 * out = softmax((q·kᵀ + prod_h + prod_w)/√64)·v within each window. Returns 0, a cudaError_t,
 * or −(CUTLASS status). 2·windows·heads and batch·h·w under 2³¹. */
int llmprof_k_sm90_sam_window_fmha(const void* qkv, const void* prod, int64_t prod_cols, void* out,
                                   int64_t batch, int64_t h, int64_t w, int64_t heads,
                                   void* stream);

#ifdef __cplusplus
}
#endif

#endif /* LLMPROF_KERNELS_LAUNCH_H */
