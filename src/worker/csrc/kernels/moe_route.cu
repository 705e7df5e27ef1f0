// DeepSeek MoE routing for a few tokens (decode) in one kernel (launch.h): fp32 softmax over the
// router logits, greedy top-k (not renormalised, × scaling), then the token slots sorted stably
// by expert with the group ends that the grouped GEMMs take. It replaces softmax, top-k, the
// scaling, the expert counts (scatter_add), the stable argsort, the cumulative sum and the
// slot → token division: about ten launches per MoE layer (docs/performance.md, "MoE routing").
#include "launch.h"

#include <cuda_runtime.h>

namespace {

constexpr int kThreads = 256;

// One block. Thread t routes tokens t, t + blockDim, ...; then warps sort slots by expert.
__global__ void moe_route(const float* __restrict__ logits, int64_t tokens, int experts, int k,
                          float scaling, float* __restrict__ weights, int64_t* __restrict__ ids,
                          int64_t* __restrict__ order, int64_t* __restrict__ slot_token,
                          int32_t* __restrict__ group_ends) {
  __shared__ int counts[LLMPROF_K_MOE_MAX_EXPERTS];
  __shared__ int starts[LLMPROF_K_MOE_MAX_EXPERTS];
  __shared__ int slot_expert[LLMPROF_K_MOE_MAX_SLOTS];
  for (int e = threadIdx.x; e < experts; e += blockDim.x) counts[e] = 0;
  __syncthreads();

  for (int64_t t = threadIdx.x; t < tokens; t += blockDim.x) {
    const float* row = logits + t * experts;
    float mx = -INFINITY;
    for (int e = 0; e < experts; ++e) mx = fmaxf(mx, row[e]);
    float sum = 0.f;
    for (int e = 0; e < experts; ++e) sum += expf(row[e] - mx);
    unsigned long long taken[LLMPROF_K_MOE_MAX_EXPERTS / 64] = {};
    for (int j = 0; j < k; ++j) {
      int best = -1;
      float best_v = -INFINITY;
      for (int e = 0; e < experts; ++e) {
        const bool used = (taken[e / 64] >> (e % 64)) & 1ull;
        // Strictly greater: on equal logits the lower expert id wins.
        if (!used && (best < 0 || row[e] > best_v)) {
          best = e;
          best_v = row[e];
        }
      }
      taken[best / 64] |= 1ull << (best % 64);
      const int64_t slot = t * k + j;
      weights[slot] = expf(best_v - mx) / sum * scaling;
      ids[slot] = best;
      slot_expert[slot] = best;
      atomicAdd(&counts[best], 1);
    }
  }
  __syncthreads();

  if (threadIdx.x == 0) {
    int acc = 0;
    for (int e = 0; e < experts; ++e) {
      starts[e] = acc;
      acc += counts[e];
      group_ends[e] = acc;
    }
  }
  __syncthreads();

  // Stable order: warp w places the slots of experts w, w + warps, ... in slot order.
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  const int64_t slots = tokens * k;
  for (int e = warp; e < experts; e += warps) {
    int pos = starts[e];
    for (int64_t base = 0; base < slots; base += 32) {
      const int64_t s = base + lane;
      const bool mine = s < slots && slot_expert[s] == e;
      const unsigned ballot = __ballot_sync(0xffffffffu, mine);
      if (mine) {
        const int rank = __popc(ballot & ((1u << lane) - 1u));
        order[pos + rank] = s;
        slot_token[pos + rank] = s / k;
      }
      pos += __popc(ballot);
    }
  }
}

}  // namespace

extern "C" int llmprof_k_moe_route(const float* logits, int64_t tokens, int experts, int k,
                                   float scaling, float* weights, int64_t* ids, int64_t* order,
                                   int64_t* slot_token, int32_t* group_ends, void* stream) {
  if (experts < 1 || experts > LLMPROF_K_MOE_MAX_EXPERTS || k < 1 || k > experts ||
      tokens * k > LLMPROF_K_MOE_MAX_SLOTS) {
    return (int)cudaErrorInvalidValue;
  }
  moe_route<<<1, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      logits, tokens, experts, k, scaling, weights, ids, order, slot_token, group_ends);
  return (int)cudaGetLastError();
}
