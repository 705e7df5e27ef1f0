// Session 34, not in the tree: the fused router of calls G (128 threads) and H (this file, 1,024),
// measured slower than the router-logits kernel + the one-block router and removed. Built
// against session 34's csrc/kernels (moe_route.cu then included moe_route_block.cuh).
// DeepSeek MoE routing of a few tokens by one block, after the router logits are in hand: shared
// by the one-block router (moe_route.cu: logits from the kernel before it) and the router that
// computes them itself (moe_router_route.cu: its last block routes). Warp w routes tokens w,
// w + warps, ... (moe_route_token.cuh), then warp 0 turns the expert counts into group starts
// and ends, the warps sort slots stably by expert, and the sorted slots' token rows are copied
// to sorted_x (the expert GEMVs' input) when x is given.
#ifndef LLMPROF_KERNELS_MOE_ROUTE_BLOCK_CUH
#define LLMPROF_KERNELS_MOE_ROUTE_BLOCK_CUH
#include "dtype.cuh"
#include "launch.h"
#include "moe_route_token.cuh"

#include <cuda_runtime.h>

namespace llmprof_k {

static_assert(LLMPROF_K_MOE_MAX_EXPERTS <= 256, "slot_expert holds an expert id in one byte");
static_assert(LLMPROF_K_MOE_ONE_BLOCK_MAX_SLOTS <= 32768, "sorted_token holds a token in a short");

// The block's shared memory for the routing (≈ 5 KiB).
struct RouteShared {
  int counts[LLMPROF_K_MOE_MAX_EXPERTS];
  int starts[LLMPROF_K_MOE_MAX_EXPERTS];
  unsigned char slot_expert[LLMPROF_K_MOE_ONE_BLOCK_MAX_SLOTS];  // one byte: experts ≤ 256
  short sorted_token[LLMPROF_K_MOE_ONE_BLOCK_MAX_SLOTS];         // slot_token, for the gather
};

// The outputs (launch.h llmprof_k_moe_route_one_block).
struct RouteOutputs {
  float* weights;
  int64_t* ids;
  int64_t* order;
  int64_t* slot_token;
  int64_t* slot_pos;
  int32_t* group_ends;
  unsigned char* sorted_x;
};

// Every thread of the block (kThreads) calls it, after the logits [tokens, experts] are
// readable by the block (`logits` global or shared). Each token's slots: its k routed experts,
// then the `shared` experts (ids experts.., weight 1). rows: x's rows (row_bytes each) to gather
// from, or nullptr for no gather; vec16: rows and sorted_x 16-byte aligned, row_bytes a multiple
// of 16.
template <int kThreads>
__device__ __forceinline__ void route_in_block(const float* logits, int64_t tokens, int experts,
                                               int k, int shared, float scaling,
                                               const RouteOutputs& out,
                                               const unsigned char* rows, int64_t row_bytes,
                                               bool vec16, RouteShared& sm) {
  constexpr int kWarps = kThreads / 32;
  for (int e = threadIdx.x; e < experts + shared; e += kThreads) sm.counts[e] = 0;
  __syncthreads();

  const int per_token = k + shared, all_experts = experts + shared;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int64_t t = warp; t < tokens; t += kWarps) {
    const auto place = [&](int j, int e, float w) {
      const int64_t slot = t * per_token + j;
      out.weights[slot] = w;
      out.ids[slot] = e;
      sm.slot_expert[slot] = (unsigned char)e;
      atomicAdd(&sm.counts[e], 1);
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
    for (int e = lo; e < hi; ++e) run += sm.counts[e];
    int incl = run;
    for (int o = 1; o < 32; o *= 2) {
      const int up = __shfl_up_sync(0xffffffffu, incl, o);
      if (lane >= o) incl += up;
    }
    int acc = incl - run;
    for (int e = lo; e < hi; ++e) {
      sm.starts[e] = acc;
      acc += sm.counts[e];
      out.group_ends[e] = acc;
    }
  }
  __syncthreads();

  // Stable order: warp w places the slots of experts w, w + warps, ... in slot order.
  const int64_t slots = tokens * per_token;
  for (int e = warp; e < all_experts; e += kWarps) {
    int pos = sm.starts[e];
    for (int64_t base = 0; base < slots; base += 32) {
      const int64_t s = base + lane;
      const bool mine = s < slots && sm.slot_expert[s] == e;
      const unsigned ballot = __ballot_sync(0xffffffffu, mine);
      if (mine) {
        const int rank = __popc(ballot & ((1u << lane) - 1u));
        out.order[pos + rank] = s;
        out.slot_token[pos + rank] = s / per_token;
        sm.sorted_token[pos + rank] = (short)(s / per_token);
        out.slot_pos[s] = pos + rank;
      }
      pos += __popc(ballot);
    }
  }

  // The expert GEMMs' input rows in sorted order (replaces an index_select launch per layer).
  if (rows == nullptr) return;
  __syncthreads();  // every warp's sorted_token writes
  for (int64_t pos = warp; pos < slots; pos += kWarps) {
    const unsigned char* src = rows + sm.sorted_token[pos] * row_bytes;
    unsigned char* dst = out.sorted_x + pos * row_bytes;
    if (vec16) {
      for (int64_t i = lane; i < row_bytes / 16; i += 32) {
        reinterpret_cast<uint4*>(dst)[i] = reinterpret_cast<const uint4*>(src)[i];
      }
    } else {
      for (int64_t i = lane; i < row_bytes; i += 32) dst[i] = src[i];
    }
  }
}

}  // namespace llmprof_k

#endif  // LLMPROF_KERNELS_MOE_ROUTE_BLOCK_CUH
