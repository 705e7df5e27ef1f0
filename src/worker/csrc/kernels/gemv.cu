// A Linear over a few rows (decode steps at small batch): y[m, n] = Σ_k x[m, k]·w[n, k] (+ bias[n])
// for m < rows ≤ 8, w the Linear's weight [n, k] as stored (row-major: each output's weights are
// one contiguous row). At one to eight rows the call reads the weight once and does almost no
// arithmetic per byte, so its time is the weight's bytes over the bandwidth the kernel keeps in
// flight; cuBLAS's choices at these shapes reached 56-87 % of the H200's DRAM peak in a
// Llama-3.1-8B decode step (reports/gpu-runs.md §35: o_proj 56 %, qkv 65 %, down 80 %, gate_up
// 87 %). Each warp owns kRowsPerWarp outputs and walks their weight rows in 16-byte loads, kUnroll
// of them per row in flight per lane, x read in the same 16-byte steps (it is small and stays in
// L1/L2); products summed in fp32 per lane, then across the warp; the output rounded once to T.
// The decoder gives it one-row calls only (ffi/kernels_gemv.rs: at eight rows it lost to cuBLAS),
// and a MoE decode step's routed experts one slot per block row (the grouped form below), where
// libtorch's grouped GEMM took 3.7× the bytes' floor at batch 1 (round 3 session 31).
#include "device.cuh"
#include "dtype.cuh"
#include "gemv_kernel.cuh"
#include "launch.h"
#include "pdl.cuh"

#include <cuda_runtime.h>

namespace {

// How each call reads its rows (the kernel's kUnroll and kPartialGroups; `LoadPlan`), chosen by
// shape from one H200 measurement of every combination in each form at DeepSeek-OCR's,
// Llama-3.1-8B's and Qwen2.5-7B's decode shapes (reports/performance-history.md, round 3
// session 34):
// - rows of at most kWideUnroll loads (k ≤ 2,048 in bf16), one-row forms: the whole row in one
//   group of partial loads, issued before the wait (DeepSeek-OCR q/k/v with its norm 4.15 →
//   3.93 µs, o_proj 2.45 → 2.12, lm_head 78.8 → 75.7);
// - the grouped form: kDefaultUnroll, partial groups where the row ends in more than one load
//   past its whole groups (its experts' down, k = 896: 10.2 → 8.3 µs; gate/up, one load past:
//   11.9 partial 13.9);
// - longer rows: kDefaultUnroll, partial groups at kPartialMinBlocksPerSm blocks a
//   multiprocessor or more (Llama's lm_head 238 → 235 µs, gate/up with its norm 58.5 → 57.8),
//   whole groups and a serial tail below (its o_proj 9.0, partial 10.6; down 28.4, 30.4).
constexpr int kPartialMinBlocksPerSm = 4;

// Warps a block and outputs a warp: 8 × 2 by default; 4 × 4 for short rows of many outputs
// (k ≤ kShortK, n ≥ kManyOutputs: DeepSeek-OCR's lm_head, 129,280 rows of 1,280, 87 → 76 µs,
// its first dense layer's gate/up 13.5 → 10.7), where a warp's two rows hold too few loads in
// flight; at long rows (Llama-3.1-8B's down: 29.6 → 39.3 µs) and few outputs (more blocks
// matter there) the default is faster (H200, reports/performance-history.md, round 3 session
// 32). Both cover 16 outputs a block.
constexpr int kWarps = 8, kRowsPerWarp = 2;
constexpr int kShortWarps = 4, kShortRowsPerWarp = 4;
constexpr int64_t kShortK = 2048, kManyOutputs = 8192;
constexpr int kOutputsPerBlock = kWarps * kRowsPerWarp;
static_assert(kShortWarps * kShortRowsPerWarp == kOutputsPerBlock, "one block count for both");

// The blocks that cover n outputs (kOutputsPerBlock per block, either shape).
inline int64_t blocks_for(int64_t n) { return (n + kOutputsPerBlock - 1) / kOutputsPerBlock; }

// What both forms ask of a call: n and k positive, k a multiple of 8, the blocks within a
// grid's x side, x and w 16-byte aligned.
inline bool shape_fits(const void* x, const void* w, int64_t n, int64_t k) {
  return n >= 1 && k >= 1 && k % 8 == 0 && blocks_for(n) <= (int64_t)0x7fffffff &&
         llmprof_k::aligned16(x) && llmprof_k::aligned16(w);
}

// The load loop a call of n outputs over rows of k elements takes (see kDefaultUnroll).
enum class LoadPlan { kWholeGroups, kPartialGroups, kWideRow };

// Elements of T a warp covers with one 16-byte load a lane (the kernel's kStep).
template <typename T>
constexpr int64_t kWarpStep = 32 * (16 / (int64_t)sizeof(T));

template <typename T>
LoadPlan load_plan(int64_t n, int64_t k, bool grouped) {
  constexpr int64_t kStep = kWarpStep<T>;
  if (grouped) {
    const int64_t past = k % (kDefaultUnroll * kStep);  // past the row's whole groups
    return past > kStep ? LoadPlan::kPartialGroups : LoadPlan::kWholeGroups;
  }
  if (k <= kWideUnroll * kStep) return LoadPlan::kWideRow;
  const int64_t many = (int64_t)kPartialMinBlocksPerSm * llmprof_k::current_sm_count();
  return blocks_for(n) >= many ? LoadPlan::kPartialGroups : LoadPlan::kWholeGroups;
}

// The kernel of one form (kM rows, grouped or not, warps × rows, folded norm vectors) that reads
// rows in groups of kDefaultUnroll loads, partial or whole by `plan` (not kWideRow).
template <typename T, int kM, bool kGrouped, int kW, int kR, int kNV, bool kS = false>
auto gemv_in_groups(LoadPlan plan) {
  return plan == LoadPlan::kPartialGroups
             ? gemv<T, kM, kGrouped, kW, kR, kNV, kDefaultUnroll, true, kS>
             : gemv<T, kM, kGrouped, kW, kR, kNV, kDefaultUnroll, false, kS>;
}

// The form's kernel that reads a whole row in one group of partial loads (kWideRow).
template <typename T, int kW, int kR, int kNV, bool kS = false>
auto gemv_wide_row() {
  return gemv<T, 1, false, kW, kR, kNV, kWideUnroll, true, kS>;
}

// The one-row kernel (folded norm vectors kNV) that reads rows in groups, by `plan`; with
// kSwiGlu in partial groups at every shape (correct at any k; what `load_plan` picks for
// Llama-3.1-8B's and Qwen2.5-7B's gate/up, >= 4 blocks an SM), so each SwiGLU form compiles one
// kernel for it, not two (gemv.cu's nvcc time, session 35).
template <typename T, int kNV, bool kS>
auto one_row_in_groups(LoadPlan plan) {
  if constexpr (kS) {
    return gemv<T, 1, false, kWarps, kRowsPerWarp, kNV, kDefaultUnroll, true, true>;
  } else {
    return gemv_in_groups<T, 1, false, kWarps, kRowsPerWarp, kNV>(plan);
  }
}

// The one-row kernel of a plain call (no folded norm), with or without kSwiGlu.
template <typename T, bool kS>
auto one_row_kernel(bool short_rows, LoadPlan plan) {
  return short_rows                    ? gemv_wide_row<T, kShortWarps, kShortRowsPerWarp, 0, kS>()
         : plan == LoadPlan::kWideRow ? gemv_wide_row<T, kWarps, kRowsPerWarp, 0, kS>()
                                      : one_row_in_groups<T, 0, kS>(plan);
}

// The one-row kernel with the folded norm (its vectors a thread by k), with or without kSwiGlu.
template <typename T, bool kS>
auto folded_norm_kernel(int64_t per_thread, LoadPlan plan) {
  return per_thread <= 1   ? gemv_wide_row<T, kWarps, kRowsPerWarp, 1, kS>()
         : per_thread <= 2 ? one_row_in_groups<T, 2, kS>(plan)
                           : one_row_in_groups<T, 4, kS>(plan);
}

template <typename T>
int launch_gemv(const void* x, const void* w, const void* bias, void* y, int m, int64_t n,
                int64_t k, bool swiglu, cudaStream_t stream) {
  if constexpr (sizeof(T) == 4) {
    return (int)cudaErrorInvalidValue;  // bf16 and fp16 only: no fp32 kernel is compiled
  } else {
    if (swiglu && m != 1) return (int)cudaErrorInvalidValue;  // one-row calls only
    const auto x_ = static_cast<const T*>(x);
    const auto w_ = static_cast<const T*>(w);
    const auto b_ = static_cast<const T*>(bias);
    const auto y_ = static_cast<T*>(y);
    const unsigned blocks = (unsigned)blocks_for(n);
    const bool short_rows = m == 1 && k <= kShortK && n >= kManyOutputs;
    const LoadPlan plan = load_plan<T>(n, k, false);
    static_assert(kShortK <= kWideUnroll * kWarpStep<T> || sizeof(T) == 4,
                  "short rows are read as one wide group");
    auto kernel = swiglu   ? one_row_kernel<T, true>(short_rows, plan)
                  : m == 1 ? one_row_kernel<T, false>(short_rows, plan)
                  : m == 2 ? gemv<T, 2, false, kWarps, kRowsPerWarp>
                  : m <= 4   ? gemv<T, 4, false, kWarps, kRowsPerWarp>
                             : gemv<T, 8, false, kWarps, kRowsPerWarp>;
    const int threads = 32 * (short_rows ? kShortWarps : kWarps);
    return (int)llmprof_k::launch(kernel, blocks, threads, 0, stream, x_, w_, b_, y_, m, n, k,
                                  static_cast<const int32_t*>(nullptr), 0, FoldedNorm<T>{});
  }
}

template <typename T>
int launch_gemv_add_rms_norm(const void* x, const void* delta, const void* norm_weight, float eps,
                             void* sum, const void* w, const void* bias, void* y, int64_t n,
                             int64_t k, bool swiglu, cudaStream_t stream) {
  if constexpr (sizeof(T) == 4) {
    return (int)cudaErrorInvalidValue;  // bf16 and fp16 only: no fp32 kernel is compiled
  } else {
    constexpr int V = 16 / (int)sizeof(T);
    const int64_t per_thread = (k / V + 255) / 256;  // the norm's vectors per thread
    const LoadPlan plan = load_plan<T>(n, k, false);
    // A row of at most kWideUnroll loads is at most one vector a thread of the norm: per_thread 1
    // is the wide row's case and no other.
    auto kernel = swiglu ? folded_norm_kernel<T, true>(per_thread, plan)
                         : folded_norm_kernel<T, false>(per_thread, plan);
    const FoldedNorm<T> norm{static_cast<const T*>(delta), static_cast<const T*>(norm_weight),
                             static_cast<T*>(sum), eps};
    return (int)llmprof_k::launch(kernel, (unsigned)blocks_for(n), kWarps * 32,
                                  (size_t)k * sizeof(T), stream, static_cast<const T*>(x),
                                  static_cast<const T*>(w), static_cast<const T*>(bias),
                                  static_cast<T*>(y), 1, n, k, static_cast<const int32_t*>(nullptr),
                                  0, norm);
  }
}

template <typename T>
int launch_gemv_grouped(const void* x, const void* w, const int32_t* group_ends, void* y,
                        int slots, int experts, int64_t n, int64_t k, bool swiglu,
                        cudaStream_t stream) {
  if constexpr (sizeof(T) == 4) {
    return (int)cudaErrorInvalidValue;  // bf16 and fp16 only: no fp32 kernel is compiled
  } else {
    const dim3 grid((unsigned)blocks_for(n), (unsigned)slots);
    const LoadPlan plan = load_plan<T>(n, k, true);
    auto kernel = swiglu ? gemv_in_groups<T, 1, true, kWarps, kRowsPerWarp, 0, true>(plan)
                         : gemv_in_groups<T, 1, true, kWarps, kRowsPerWarp, 0>(plan);
    return (int)llmprof_k::launch(kernel, grid, kWarps * 32, 0, stream,
                                  static_cast<const T*>(x), static_cast<const T*>(w),
                                  static_cast<const T*>(nullptr), static_cast<T*>(y), 1, n, k,
                                  group_ends, experts, FoldedNorm<T>{});
  }
}

}  // namespace

extern "C" int llmprof_k_gemv(int dtype, const void* x, const void* w, const void* bias, void* y,
                              int m, int64_t n, int64_t k, int swiglu, void* stream) {
  if (m < 1 || m > LLMPROF_K_GEMV_MAX_ROWS || !shape_fits(x, w, n, k) ||
      (swiglu && (m != 1 || n % 2 != 0 || bias != nullptr))) {
    return (int)cudaErrorInvalidValue;
  }
  auto st = static_cast<cudaStream_t>(stream);
  LLMPROF_K_DISPATCH(dtype, launch_gemv, x, w, bias, y, m, n, k, swiglu != 0, st)
}

extern "C" int llmprof_k_gemv_grouped(int dtype, const void* x, const void* w,
                                      const int32_t* group_ends, void* y, int slots, int experts,
                                      int64_t n, int64_t k, int swiglu, void* stream) {
  if (slots < 1 || slots > LLMPROF_K_GEMV_MAX_GROUPED_ROWS || experts < 1 ||
      group_ends == nullptr || !shape_fits(x, w, n, k) || (swiglu && n % 2 != 0)) {
    return (int)cudaErrorInvalidValue;
  }
  auto st = static_cast<cudaStream_t>(stream);
  LLMPROF_K_DISPATCH(dtype, launch_gemv_grouped, x, w, group_ends, y, slots, experts, n, k,
                     swiglu != 0, st)
}

extern "C" int llmprof_k_gemv_add_rms_norm(int dtype, const void* x, const void* delta,
                                           const void* norm_weight, float eps, void* sum,
                                           const void* w, const void* bias, void* y, int64_t n,
                                           int64_t k, int swiglu, void* stream) {
  if (!shape_fits(x, w, n, k) || k > LLMPROF_K_ADD_RMS_NORM_MAX_HIDDEN ||
      !llmprof_k::aligned16(delta) || !llmprof_k::aligned16(norm_weight) ||
      !llmprof_k::aligned16(sum) || (swiglu && (n % 2 != 0 || bias != nullptr))) {
    return (int)cudaErrorInvalidValue;
  }
  auto st = static_cast<cudaStream_t>(stream);
  LLMPROF_K_DISPATCH(dtype, launch_gemv_add_rms_norm, x, delta, norm_weight, eps, sum, w, bias, y,
                     n, k, swiglu != 0, st)
}
