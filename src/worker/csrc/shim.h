/*
 * llmprof shim: a C interface over the parts of libtorch that tch does not bind
 * (Kineto profiler, user scopes, CUDA events, caching-allocator statistics, CUDA graphs).
 *
 * Conventions:
 *  - No C++ exception crosses this boundary. Every fallible function returns 0 on success and
 *    -1 on failure; the message is then available through llmprof_last_error() (per thread).
 *  - Handles are opaque pointers created by *_create / *_stop / *_begin and released by the
 *    matching *_destroy / *_free / *_end; passing NULL to a release function is a no-op.
 *  - Times are nanoseconds unless the name says otherwise.
 */
#ifndef LLMPROF_SHIM_H
#define LLMPROF_SHIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Copies the calling thread's last error message (NUL-terminated, truncated to buf_len) and
 * returns its full length in bytes (without the NUL). */
size_t llmprof_last_error(char* buf, size_t buf_len);

/* ---- Kineto profiler --------------------------------------------------------------------- */

typedef struct llmprof_profiler_config {
  uint8_t record_shapes;
  uint8_t profile_memory;
  uint8_t with_stack;
  uint8_t with_flops;
  uint8_t with_modules;
  uint8_t activity_cpu;
  uint8_t activity_cuda;
} llmprof_profiler_config;

/* One event of a finished profile. The strings belong to the profile and live until
 * llmprof_profile_free. */
typedef struct llmprof_event {
  const char* name;
  const char* input_shapes; /* e.g. "[[8192, 8192], [8192, 8192]]"; "" when not recorded */
  const char* input_dtypes; /* e.g. "[BFloat16, BFloat16]"; "" when not recorded */
  const char* stack;        /* frames joined by '\n'; "" when not recorded */
  int32_t device_type;      /* c10::DeviceType: 0 = CPU, 1 = CUDA */
  int32_t device_index;
  uint8_t activity_type;    /* libkineto::ActivityType (0 cpu_op, 1 user_annotation, ...) */
  uint8_t scope;            /* at::RecordScope (7 = USER_SCOPE) for CPU ops */
  uint8_t is_async;
  uint64_t start_ns;        /* Unix epoch nanoseconds */
  uint64_t duration_ns;
  uint64_t flops;           /* 0 when unknown */
  uint64_t correlation_id;  /* cpu op: its id; runtime call / GPU activity: CUPTI correlation */
  uint64_t linked_correlation_id; /* runtime call / GPU activity: id of the launching cpu op */
  uint64_t start_thread_id;
  int64_t device_resource_id; /* GPU: stream id; CPU: thread id as Kineto reports it */
  int64_t sequence_nr;
  int64_t n_bytes;
} llmprof_event;

typedef struct llmprof_profile llmprof_profile;

int llmprof_profiler_start(const llmprof_profiler_config* config);
int llmprof_profiler_stop(llmprof_profile** out);
size_t llmprof_profile_len(const llmprof_profile* profile);
int llmprof_profile_event(const llmprof_profile* profile, size_t index, llmprof_event* out);
uint64_t llmprof_profile_trace_start_ns(const llmprof_profile* profile);
/* Writes the Chrome/Perfetto trace JSON. */
int llmprof_profile_save(llmprof_profile* profile, const char* path);
void llmprof_profile_free(llmprof_profile* profile);

/* ---- User scopes (at::RecordFunction with USER_SCOPE) ------------------------------------ */

typedef struct llmprof_scope llmprof_scope;
int llmprof_scope_begin(const char* name, llmprof_scope** out);
/* Ends and frees the scope. Must run on the thread that began it. */
void llmprof_scope_end(llmprof_scope* scope);

/* ---- Versions of the loaded libraries ------------------------------------------------------
 * Read at run time from the libraries this process loaded; these never fail: what cannot be
 * read is -1 (numbers) or absent (strings). Safe on machines without a GPU or driver. */

typedef struct llmprof_runtime_versions {
  int32_t cuda_runtime;      /* cudaRuntimeGetVersion: 1000 * major + 10 * minor; -1 unknown */
  int32_t cuda_driver;       /* cudaDriverGetVersion, same encoding; 0 = no driver; -1 unknown */
  int64_t cudnn;             /* cudnnGetVersion() of the cuDNN libtorch_cuda loaded; -1 unknown */
  int32_t cuda_device_count; /* cudaGetDeviceCount; 0 when it fails */
  int32_t cuda_device_error; /* the cudaError_t of that call; 0 = cudaSuccess */
} llmprof_runtime_versions;

void llmprof_runtime_versions_read(llmprof_runtime_versions* out);

/* The loaded libtorch's build option `key` (caffe2::GetBuildOptions: TORCH_VERSION, COMMIT_SHA,
 * CUDA_VERSION, CUDNN_VERSION, ...): copied like llmprof_last_error; returns its full length,
 * or -1 when libtorch has no such option. */
int64_t llmprof_torch_build_option(const char* key, char* buf, size_t buf_len);

/* cudaGetErrorString of a CUDA runtime error code: a static string, never NULL. */
const char* llmprof_cuda_error_string(int32_t code);

/* ---- NVTX -------------------------------------------------------------------------------- */

/* Opens a thread-local NVTX range named by the ASCII `message` (Nsight Compute's --nvtx-include
 * matches push/pop ranges by their ASCII message); never fails. */
void llmprof_nvtx_range_push(const char* message);
/* Closes the innermost range this thread opened. */
void llmprof_nvtx_range_pop(void);

/* ---- CUDA -------------------------------------------------------------------------------- */

/* Number of visible CUDA devices (0 without a GPU or driver; never an error). */
int llmprof_cuda_device_count(void);
int llmprof_cuda_current_device(int32_t* out);
/* Makes `device` the current CUDA device (its current stream is where kernels, events and graph
 * captures go). */
int llmprof_cuda_set_current_device(int32_t device);
/* Streaming multiprocessor count of `device` (cudaDevAttrMultiProcessorCount). */
int llmprof_cuda_sm_count(int32_t device, int32_t* out);
/* Compute capability of `device` as major*10 + minor (90 for an H100). */
int llmprof_cuda_compute_capability(int32_t device, int32_t* out);
/* cudaDevAttrClockRate of `device`, in kHz (the rated-clock fallback for peak FLOP/s). */
int llmprof_cuda_clock_rate_khz(int32_t device, int32_t* out);
int llmprof_cuda_stream_synchronize(void); /* current stream of the current device */
int llmprof_cuda_device_synchronize(void);
/* TF32 for fp32 matmuls (cuBLAS) and convolutions (cuDNN); libtorch's defaults differ per op. */
int llmprof_set_allow_tf32(int cublas, int cudnn);

typedef struct llmprof_cuda_event llmprof_cuda_event;
/* A timing-enabled event. */
int llmprof_cuda_event_create(llmprof_cuda_event** out);
/* Records on the current stream of the current device. */
int llmprof_cuda_event_record(llmprof_cuda_event* event);
int llmprof_cuda_event_synchronize(llmprof_cuda_event* event);
/* Milliseconds from start to end; both must be recorded and complete. */
int llmprof_cuda_event_elapsed_ms(const llmprof_cuda_event* start, const llmprof_cuda_event* end,
                                  float* out);
void llmprof_cuda_event_destroy(llmprof_cuda_event* event);

typedef struct llmprof_allocator_stats {
  int64_t allocated_bytes_current;
  int64_t allocated_bytes_peak;
  int64_t reserved_bytes_current;
  int64_t reserved_bytes_peak;
  int64_t active_bytes_current;
  int64_t active_bytes_peak;
  int64_t requested_bytes_current;
  int64_t requested_bytes_peak;
  int64_t num_alloc_retries;
  int64_t num_ooms;
} llmprof_allocator_stats;

int llmprof_cuda_allocator_stats(int32_t device, llmprof_allocator_stats* out);
int llmprof_cuda_allocator_reset_peak(int32_t device);

typedef struct llmprof_cuda_graph llmprof_cuda_graph;
/* keep_graph: keep the captured graph after instantiation (llmprof_cuda_graph_set_upload needs
 * it; a graph not kept frees it). */
int llmprof_cuda_graph_create(int keep_graph, llmprof_cuda_graph** out);
/* Takes a stream from the pool, makes it current and begins capture on it. With
 * share_pool_with (a captured graph, or NULL for a private pool) the new graph allocates from
 * that graph's memory pool; graphs sharing a pool must be replayed one at a time. */
int llmprof_cuda_graph_capture_begin(llmprof_cuda_graph* graph,
                                     llmprof_cuda_graph* share_pool_with);
/* Ends capture (instantiates the graph) and restores the previous current stream. */
int llmprof_cuda_graph_capture_end(llmprof_cuda_graph* graph);
/* Launches the graph on the current stream. */
int llmprof_cuda_graph_replay(llmprof_cuda_graph* graph);
/* The capture record: what each node of the graph is and which mark (llmprof_capture_mark) was
 * in effect when it was added. The serial is process-unique; while Kineto records, each replay
 * runs inside a cpu op named "llmprof::graph_replay#<serial>". */
uint64_t llmprof_cuda_graph_serial(const llmprof_cuda_graph* graph);
size_t llmprof_cuda_graph_record_len(const llmprof_cuda_graph* graph);
typedef struct llmprof_graph_node {
  int kind; /* 0 other, 1 kernel, 2 memcpy, 3 memset */
  uint32_t mark;
  const char* name; /* demangled kernel name, not NUL-terminated; valid while the graph lives */
  size_t name_len;
  const char* mangled; /* the driver's (mangled) name, likewise */
  size_t mangled_len;
  const uint32_t* deps; /* indices of the nodes this one depends on */
  size_t n_deps;
} llmprof_graph_node;
int llmprof_cuda_graph_record_node(const llmprof_cuda_graph* graph, size_t index,
                                   llmprof_graph_node* out);
/* Why the record is empty (a capture that could not be read), as llmprof_last_error copies. */
size_t llmprof_cuda_graph_record_error(const llmprof_cuda_graph* graph, char* buf, size_t len);
/* While this thread captures a graph: the nodes added from now on belong to `mark` (until the
 * next call). A no-op outside a capture. */
int llmprof_capture_mark(uint32_t mark);
void llmprof_cuda_graph_destroy(llmprof_cuda_graph* graph);
/* While the current stream captures a graph: copies the dense, page-locked host tensor `src`
 * into the CUDA tensor `dst` (same shape, strides and dtype; both at::Tensor*) on it. Out: the
 * copy's graph node, its destination and source addresses and its length, for
 * llmprof_cuda_graph_set_upload. */
int llmprof_capture_upload(const void* dst, const void* src, void** node, void** dst_data,
                           const void** src_data, size_t* bytes);
/* Points a captured upload (`node` of `graph`, copying `bytes` to `dst_data`) at the bytes of
 * the dense, page-locked host tensor `src` from byte `offset` on, for the following replays. */
int llmprof_cuda_graph_set_upload(llmprof_cuda_graph* graph, void* node, void* dst_data,
                                  size_t bytes, const void* src, size_t offset);
/* The page-locked host tensor `tensor` (an at::Tensor*) is read by work queued on the current
 * stream: libtorch's host allocator keeps its block until that work has run. */
int llmprof_host_tensor_used(const void* tensor);

/* ---- A side stream (csrc/streams.cpp): work that may overlap the current stream's ---------- */
typedef struct llmprof_side_stream llmprof_side_stream;
/* A new non-blocking stream on CUDA device `device`. */
int llmprof_side_stream_create(int64_t device, llmprof_side_stream** out);
/* The side stream waits for everything the current stream has queued so far. */
int llmprof_side_stream_fork(llmprof_side_stream* s);
/* The side stream becomes the current stream (libtorch's and llmprof's kernels launch on it). */
int llmprof_side_stream_enter(llmprof_side_stream* s);
/* The stream that was current before enter is current again. */
int llmprof_side_stream_leave(llmprof_side_stream* s);
/* The current stream waits for everything the side stream has queued so far. */
int llmprof_side_stream_join(llmprof_side_stream* s);
/* 1 in *out when the current stream is capturing a CUDA graph, else 0. */
int llmprof_cuda_stream_capturing(int* out);
/* Waits for the side stream's work, then frees it. */
void llmprof_side_stream_destroy(llmprof_side_stream* s);

/* ---- Host memory (csrc/host_memory.cpp) ---- */
/* *out = a new page-locked copy of the CPU tensor `tensor` (an at::Tensor*). */
int llmprof_pin_memory(const void* tensor, void** out);
/* *out = 1 when `tensor` (an at::Tensor*) is in page-locked host memory, else 0. */
int llmprof_is_pinned(const void* tensor, int* out);
/* dst.copy_(src) without blocking the host (at::Tensor*; libtorch keeps a page-locked source
 * alive until the copy has run). */
int llmprof_copy_async(const void* dst, const void* src);

/* ---- llmprof's own CUDA kernels (csrc/kernels.cpp over the .cu files in csrc/kernels/) ---
 * Tensors are passed as the at::Tensor* that tch hands out; outputs are allocated by the caller.
 * Built without nvcc, every kernel entry point fails and says how to get the kernels. */

/* 1 when this build has the kernels (nvcc was found at build time), else 0. */
int llmprof_kernels_available(void);
/* llmprof's kernels launched with programmatic dependent launch (runtime.optim.programmatic_launch;
 * compute capability 9.0+ only): `on` for the process. */
void llmprof_set_programmatic_launch(int on);
/* SAM attention with the relative-position bias folded into q·k: from the qkv Linear's output
 * [B,H,W,3C] (padded tokens take `bias`), q′ and k′ [B·windows, win_h·win_w, heads, aug]
 * (q′'s relative-position columns: left for llmprof_sam_fill_rel_pos without the q copies, zeroed
 * for the caller's with them), v [.., head_dim], and, unless both are NULL, q again as q_rows
 * [win_h, B·windows·heads, win_w, head_dim] and q_cols [win_w, .., win_h, head_dim]; aug =
 * head_dim + win_h + win_w rounded up to 8. keys_ready: k_aug holds the one-hot and zero
 * columns from an earlier pack of the same shape, and only its k columns are written. */
int llmprof_sam_pack_qkv(const void* qkv, const void* bias, int64_t heads, int64_t win_h,
                         int64_t win_w, const void* q_aug, const void* k_aug, const void* v,
                         const void* q_rows, const void* q_cols, int keys_ready);
/* q′'s columns after head_dim from prod [rows of q′, ≥ 2·(win_h + win_w − 1)], each q′ row's q
 * times the resized, scaled relative-position tables of the row axis (2·win_h − 1 rows), then of
 * the column axis: q′[r, head_dim + kh] = prod[r, qh − kh + win_h − 1], q′[r, head_dim + win_h +
 * kw] = prod[r, 2·win_h − 1 + qw − kw + win_w − 1], zeros after. */
int llmprof_sam_fill_rel_pos(const void* prod, int64_t head_dim, int64_t win_h, int64_t win_w,
                             const void* q_aug);
/* Attention output o [B·windows, heads, win_h·win_w, head_dim] (any strides) → out [B,H,W,C],
 * contiguous, windows merged and the padding cropped. */
int llmprof_sam_merge_windows(const void* o, int64_t win_h, int64_t win_w, const void* out);
/* SAM's windowed attention in one kernel (bf16, head_dim 64, windows of 14×14 or 4×4):
 * qkv [B,H,W,3·heads·64] and bias [3·heads·64] as for llmprof_sam_pack_qkv, prod [heads, B·H·W,
 * cols] each token's q times the √64-scaled resized tables (row offsets, then column offsets)
 * → out [B·windows, win_h·win_w, heads·64], contiguous, allocated by the caller. */
int llmprof_sam_window_attention(const void* qkv, const void* bias, const void* prod,
                                 int64_t heads, int64_t win_h, int64_t win_w, const void* out);
/* DeepSeek MoE routing of fp32 router logits [tokens, experts] in llmprof's kernels: weights [tokens, k]
 * fp32 (softmax, top-k, × scaling), ids [tokens, k] int64, the slots sorted stably by expert
 * (order [tokens·k] int64, slot_token [tokens·k] int64, the inverse permutation slot_pos
 * [tokens·k] int64), group_ends [experts] int32 and x [tokens, hidden]'s rows in sorted order,
 * sorted_x [tokens·k, hidden]. At most 256 experts; up to 1024 slots (decode) one launch (the
 * gather in it up to 4 tokens, else an index_select after), above three over many blocks and an
 * index_select. shared > 0 (one launch only) gives each token k + shared slots, the shared
 * experts as experts `experts`.. with weight 1; k above then reads k + shared and group_ends has
 * experts + shared entries. */
int llmprof_moe_route(const void* logits, const void* x, int64_t k, int64_t shared, double scaling,
                      const void* weights, const void* ids, const void* order,
                      const void* slot_token, const void* slot_pos, const void* group_ends,
                      const void* sorted_x);
/* The MoE combine: y [tokens, hidden] = Σ_j weights[t, j]·sorted[slot_pos[t·k + j]] in fp32,
 * rounded to y's dtype, + shared [tokens, hidden] (or NULL). sorted [tokens·k, hidden] and
 * shared like y; weights [tokens, k] fp32; slot_pos [tokens·k] int64 from llmprof_moe_route. */
int llmprof_moe_combine(const void* sorted, const void* slot_pos, const void* weights,
                        const void* shared, const void* y);
/* A decode step's RoPE and KV write: qkv [B, 1, (heads + 2·kv_heads)·head_dim] (fused q/k/v
 * projection), cos and sin [B, 1, 1, head_dim] → q [B, heads, 1, head_dim] rotated, k rotated
 * and v written into k_cache and v_cache [B, kv_heads, slots, head_dim] at slot *slot ([1]
 * int64 on the device). fused_add: the second RoPE term added as addcmul does (one FMA). */
/* SwiGLU's activation: gate_up [.., 2f] (contiguous; gate, then up) → out [.., f] =
 * silu(gate)·up, rounded to the dtype after the silu and after the product. */
int llmprof_silu_mul(const void* gate_up, const void* out);
/* Whether llmprof_silu_mul(gate_up, out) takes the 16-byte-vector kernel (*vectors 1) or the
 * element kernel (0); for the tests. */
int llmprof_silu_mul_uses_vectors(const void* gate_up, const void* out, int* vectors);
/* The residual add and RMSNorm in one kernel: x and delta [.., hidden] (contiguous, same dtype),
 * weight [hidden] → sum = x + delta and out = rms_norm(sum)·weight, rounded once like
 * libtorch's fused RMSNorm; sum and out allocated by the caller like x. */
int llmprof_add_rms_norm(const void* x, const void* delta, const void* weight, double eps,
                         const void* sum, const void* out);
/* The residual add and LayerNorm in one kernel: x and delta [.., hidden] (contiguous, same dtype,
 * 16-byte aligned), weight and bias [hidden] → sum = x + delta and out = layer_norm(sum)·weight +
 * bias, statistics in fp32; sum and out allocated by the caller like x. hidden: a multiple of
 * 32 16-byte vectors, at most 8 of those passes. delta_win_h, delta_win_w > 0: x is a grid
 * [B,H,W,C] and delta the same tokens cut into windows of that size over the grid padded to their
 * multiples, [B·windows, delta_win_h·delta_win_w, C] (padding rows unread); 0, 0: delta like x. */
int llmprof_add_layer_norm(const void* x, const void* delta, const void* weight, const void* bias,
                           double eps, int64_t delta_win_h, int64_t delta_win_w, const void* sum,
                           const void* out);
/* CLIP's quickGELU x·sigmoid(1.702·x) in one kernel, rounded where libtorch's three ops round:
 * x contiguous on a CUDA device, out allocated by the caller like x. */
int llmprof_quick_gelu(const void* x, const void* out);
/* SAM's patch-embedding operand out [B, S/patch, S/patch, 3·patch²] (float, bfloat16 or half,
 * contiguous) from uint8 pixels [B,3,S,S] (any strides) on the same device, normalised as
 * (x/255 − 0.5)/0.5 with libtorch's fp32 roundings. */
int llmprof_sam_patches(const void* pixels, int64_t patch, const void* out);
/* Whether llmprof_linear_gelu runs on CUDA device `device`: the Hopper GEMMs were built and the
 * device is compute capability 9.0. 1 or 0; a negative number when the query failed. */
int llmprof_linear_gelu_on_device(int64_t device);
/* y = act(x·wᵀ + b) in one Hopper GEMM, the activation on the fp32 accumulator plus bias,
 * rounded once: x [.., k], w [n, k], b [n], out [.., n], all bf16, contiguous, 16-byte aligned,
 * on a device where llmprof_linear_gelu_on_device says 1; n and k multiples of 8. `variant` as
 * llmprof_k_sm90_linear_gelu's (kernels/launch.h): 0 the erf-form GELU, 1 quickGELU. */
int llmprof_linear_gelu(const void* x, const void* w, const void* b, const void* out,
                        int variant);
/* SAM's global attention with its decomposed relative-position bias inside a Hopper
 * flash-attention kernel: qkv [batch, grid, grid, 3·heads·64] bf16 (grid 32, 40, 64 or 80),
 * prod [heads, batch·grid², cols] (each token's q times both √64-scaled resized tables),
 * out [batch, grid, grid, heads·64], on a device where llmprof_sam_global_attention_on_device
 * says 1; batch ≤ 65535 and qkv under 2³¹ elements. */
int llmprof_sam_global_attention(const void* qkv, const void* prod, const void* out);
/* Whether llmprof_sam_global_attention runs on CUDA device `device`: it was built (CUTLASS's
 * FMHA example found) and the device is compute capability 9.0. 1 or 0; negative on failure. */
int llmprof_sam_global_attention_on_device(int64_t device);
/* SAM's windowed attention (14×14 windows) in a Hopper flash-attention kernel, on the grid:
 * qkv [batch, h, w, 3·heads·64] bf16 without the qkv Linear's k and v biases, prod [heads,
 * batch·h·w, cols] (q times both √64-scaled 27-row tables), out [batch, h, w, heads·64], on a
 * device where llmprof_sam_global_attention_on_device says 1; 2·windows·heads under 2³¹. */
int llmprof_sam_window_fmha(const void* qkv, const void* prod, const void* out);
/* MoE router logits: x [tokens, hidden] (model dtype), w [experts, hidden] fp32 → logits
 * [tokens, experts] fp32. */
int llmprof_router_logits(const void* x, const void* w, const void* logits);
/* Decode attention over the written slots: q [B, heads, 1, hd], k_cache and v_cache [B, kv_heads,
 * slots, hd], pad [B] and len [1] int64 on the device (row b attends to slots pad[b] ..= len),
 * the first `window` slots bounding the work → out [B, heads, 1, hd] (allocated by the caller).
 * hd 64 or 128. tensor_cores: bf16/fp16 on the tensor-core split pass (kernels/launch.h). */
int llmprof_decode_attention(const void* q, const void* k_cache, const void* v_cache,
                             const void* pad, const void* len, int64_t window, int tensor_cores,
                             const void* out);
/* A Linear over 1 ..= 8 rows in llmprof's kernel: x [.., k] (bf16 or fp16, k a multiple of 8),
 * weight [n, k], bias [n] or null → y [.., n] (allocated by the caller). swiglu (one row, n
 * even, no bias): weight is a fused [gate; up] projection and y [.., n / 2] = silu(gate)·up, the same bits
 * as the GEMV then the SwiGLU kernel; the same in the two GEMVs below. */
int llmprof_gemv(const void* x, const void* weight, const void* bias, const void* y, int swiglu);
/* The one-row GEMV with the residual add + RMSNorm before it folded in: x, delta [.., k] (one
 * row, bf16 or fp16, k a multiple of 8 up to 8,192), norm_weight [k], weight [n, k], bias [n] or
 * null → sum [.., k] = x + delta and y [.., n] = rmsnorm(sum)·weightᵀ (+ bias), both allocated by
 * the caller; the same bits as the add + RMSNorm kernel, then the GEMV. */
int llmprof_gemv_add_rms_norm(const void* x, const void* delta, const void* norm_weight,
                              double eps, const void* weight, const void* bias, const void* sum,
                              const void* y, int swiglu);
/* The GEMV over a MoE step's token slots sorted by expert: x [slots, k] (1 ..= 16 slots, bf16 or
 * fp16), weight [experts, n, k], group_ends int32 [experts] (inclusive cumulative slot counts,
 * the last equal to slots)
 * → y [slots, n], each slot by its group's expert (allocated by the caller). */
int llmprof_gemv_grouped(const void* x, const void* weight, const void* group_ends, const void* y,
                         int swiglu);
/* RoPE on q and k and the K/V cache write: qkv [B, T, (heads + 2 kv_heads) hd], cos and sin
 * [B, 1, T, hd], slot [1] int64 on the device (the first slot written) → q [B, T, heads, hd]
 * (allocated by the caller), k and v written at slots slot .. slot + T − 1 of k_cache and v_cache
 * [B, kv_heads, slots, hd]. fused_add: the second RoPE term as one FMA (addcmul). */
int llmprof_rope_kv(const void* qkv, const void* cos, const void* sin, const void* slot,
                    int64_t heads, int64_t kv_heads, int32_t fused_add, const void* q,
                    const void* k_cache, const void* v_cache);
/* The windowed n-gram rule: logits [rows, vocab] fp32 set to −∞ in place at the tokens that
 * complete an n-gram of the window recent [rows, window] int64 (bannable [vocab] bool or NULL);
 * then, after the step, recent shifted left by one with next [rows] int64 appended. */
int llmprof_ngram_ban(const void* logits, const void* recent, int64_t n, const void* bannable);
/* Greedy selection in llmprof's kernel: logits [rows, vocab] fp32 contiguous → out [rows]
 * int64, libtorch argmax's choice; scratch int64 [2·rows], zero before the first call (each call
 * leaves it zero). */
int llmprof_argmax(const void* logits, const void* scratch, const void* out);
int llmprof_ngram_push(const void* recent, const void* next);

#ifdef __cplusplus
}
#endif

#endif /* LLMPROF_SHIM_H */
