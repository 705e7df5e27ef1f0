// DeepSeek MoE routing for a few tokens (decode) in one kernel of one block (launch.h; a prefill's
// many tokens take moe_route_many.cu's kernels): fp32 softmax over the router logits, greedy
// top-k (not renormalised, × scaling), then the token slots sorted stably by expert with the
// group ends that the grouped GEMMs take. It replaces softmax, top-k, the scaling, the expert
// counts (scatter_add), the stable argsort, the cumulative sum and the slot → token division:
// about ten launches per MoE layer (reports/performance-history.md, "MoE routing").
#include "dtype.cuh"
#include "launch.h"
#include "pdl.cuh"
#include "moe_route_token.cuh"

#include <cuda_runtime.h>

namespace {

using llmprof_k::route_token;

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;
static_assert(LLMPROF_K_MOE_MAX_EXPERTS <= 256, "slot_expert holds an expert id in one byte");
static_assert(LLMPROF_K_MOE_ONE_BLOCK_MAX_SLOTS <= 32768, "sorted_token holds a token in a short");
// The most bytes of x preloaded into shared memory (beside the 5 KiB of static arrays, under the
// 48 KiB a kernel has without asking).
constexpr int64_t kPreloadMaxBytes = 40 * 1024;

// One block of kWarps warps. Warp w routes tokens w, w + kWarps, ...: the token's logits spread
// over the lanes, max, sum and each top-k round as warp reductions. Then warp 0 turns the
// expert counts into group starts and ends, and the warps sort slots by expert.
__global__ void moe_route(const float* __restrict__ logits, int64_t tokens, int experts, int k,
                          int shared, float scaling, float* __restrict__ weights,
                          int64_t* __restrict__ ids, int64_t* __restrict__ order, int64_t* __restrict__ slot_token,
                          int64_t* __restrict__ slot_pos, int32_t* __restrict__ group_ends,
                          const unsigned char* __restrict__ x, int64_t row_bytes,
                          unsigned char* __restrict__ sorted_x, int64_t x_rows_bytes) {
  __shared__ int counts[LLMPROF_K_MOE_MAX_EXPERTS];
  __shared__ int starts[LLMPROF_K_MOE_MAX_EXPERTS];
  __shared__ unsigned char slot_expert[LLMPROF_K_MOE_ONE_BLOCK_MAX_SLOTS];  // one byte: experts ≤ 256
  __shared__ short sorted_token[LLMPROF_K_MOE_ONE_BLOCK_MAX_SLOTS];  // slot_token, for the gather
  extern __shared__ uint4 x_rows[];  // x, where it is preloaded (x_rows_bytes > 0)
  // x (the MoE's normed input) was written before the router-logits kernel ahead of this one,
  // which has passed its own wait, so x is complete: its rows are read into shared memory before
  // the wait for the logits, and the gather below copies from there.
  const int64_t x_vectors = x_rows_bytes / 16;
  for (int64_t i = threadIdx.x; i < x_vectors; i += blockDim.x) {
    x_rows[i] = __ldcg(reinterpret_cast<const uint4*>(x) + i);
  }
  llmprof_k::begin_after_previous_grid();
  for (int e = threadIdx.x; e < experts + shared; e += blockDim.x) counts[e] = 0;
  __syncthreads();

  // Each token's slots: its k routed experts, then the `shared` experts (ids experts.., weight
  // 1) where the shared experts run as experts of the grouped GEMMs.
  const int per_token = k + shared, all_experts = experts + shared;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int64_t t = warp; t < tokens; t += kWarps) {
    const auto place = [&](int j, int e, float w) {
      const int64_t slot = t * per_token + j;
      weights[slot] = w;
      ids[slot] = e;
      slot_expert[slot] = (unsigned char)e;
      atomicAdd(&counts[e], 1);
    };
    route_token(logits + t * experts, experts, k, scaling, lane, place);
    if (lane == 0) {
      for (int j = 0; j < shared; ++j) place(k + j, experts + j, 1.f);
    }
  }
  __syncthreads();

  if (warp == 0) {
    // Each lane sums a contiguous run of experts; an exclusive warp scan gives the run's start.
    const int per = (all_experts + 31) / 32;
    const int lo = min(lane * per, all_experts), hi = min(lo + per, all_experts);
    int run = 0;
    for (int e = lo; e < hi; ++e) run += counts[e];
    int incl = run;
    for (int o = 1; o < 32; o *= 2) {
      const int up = __shfl_up_sync(0xffffffffu, incl, o);
      if (lane >= o) incl += up;
    }
    int acc = incl - run;
    for (int e = lo; e < hi; ++e) {
      starts[e] = acc;
      acc += counts[e];
      group_ends[e] = acc;
    }
  }
  __syncthreads();

  // Stable order: warp w places the slots of experts w, w + warps, ... in slot order.
  const int64_t slots = tokens * per_token;
  for (int e = warp; e < all_experts; e += kWarps) {
    int pos = starts[e];
    for (int64_t base = 0; base < slots; base += 32) {
      const int64_t s = base + lane;
      const bool mine = s < slots && slot_expert[s] == e;
      const unsigned ballot = __ballot_sync(0xffffffffu, mine);
      if (mine) {
        const int rank = __popc(ballot & ((1u << lane) - 1u));
        order[pos + rank] = s;
        slot_token[pos + rank] = s / per_token;
        sorted_token[pos + rank] = (short)(s / per_token);
        slot_pos[s] = pos + rank;
      }
      pos += __popc(ballot);
    }
  }

  // The expert GEMMs' input rows in sorted order (replaces an index_select launch per layer).
  if (x == nullptr) return;
  __syncthreads();  // every warp's sorted_token writes (and x_rows')
  const bool vec16 =
      row_bytes % 16 == 0 && llmprof_k::aligned16(x) && llmprof_k::aligned16(sorted_x);
  const unsigned char* rows =
      x_vectors > 0 ? reinterpret_cast<const unsigned char*>(x_rows) : x;
  for (int64_t pos = warp; pos < slots; pos += kWarps) {
    const unsigned char* src = rows + sorted_token[pos] * row_bytes;
    unsigned char* dst = sorted_x + pos * row_bytes;
    if (vec16) {
      for (int64_t i = lane; i < row_bytes / 16; i += 32) {
        reinterpret_cast<uint4*>(dst)[i] = reinterpret_cast<const uint4*>(src)[i];
      }
    } else {
      for (int64_t i = lane; i < row_bytes; i += 32) dst[i] = src[i];
    }
  }
}

}  // namespace

extern "C" int llmprof_k_moe_route_one_block(const float* logits, int64_t tokens, int experts,
                                             int k, int shared, float scaling, float* weights,
                                             int64_t* ids,
                                             int64_t* order, int64_t* slot_token,
                                             int64_t* slot_pos, int32_t* group_ends,
                                             const void* x, int64_t row_bytes, void* sorted_x,
                                             void* stream) {
  if (experts < 1 || shared < 0 || experts + shared > LLMPROF_K_MOE_MAX_EXPERTS || k < 1 ||
      k > experts || tokens * (k + shared) > LLMPROF_K_MOE_ONE_BLOCK_MAX_SLOTS) {
    return (int)cudaErrorInvalidValue;
  }
  // x in shared memory where it fits the dynamic shared memory a kernel has without asking.
  const int64_t x_bytes = tokens * row_bytes;
  const int64_t preload = x != nullptr && row_bytes % 16 == 0 && llmprof_k::aligned16(x) &&
                                  x_bytes <= kPreloadMaxBytes
                              ? x_bytes
                              : 0;
  return (int)llmprof_k::launch(
      moe_route, 1, kThreads, (size_t)preload, static_cast<cudaStream_t>(stream), logits, tokens,
      experts, k, shared, scaling, weights, ids, order, slot_token, slot_pos, group_ends,
      static_cast<const unsigned char*>(x), row_bytes, static_cast<unsigned char*>(sorted_x),
      preload);
}
