// DeepSeek MoE routing for a few tokens (decode) in one kernel (launch.h): fp32 softmax over the
// router logits, greedy top-k (not renormalised, × scaling), then the token slots sorted stably
// by expert with the group ends that the grouped GEMMs take. It replaces softmax, top-k, the
// scaling, the expert counts (scatter_add), the stable argsort, the cumulative sum and the
// slot → token division: about ten launches per MoE layer (docs/performance.md, "MoE routing").
#include "launch.h"

#include <cuda_runtime.h>

namespace {

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;
// Router logits per lane: expert e lives in lane e % 32, register e / 32.
constexpr int kPerLane = LLMPROF_K_MOE_MAX_EXPERTS / 32;

// (value, expert) that wins a top-k round: the larger value, on equal values the lower expert
// (the order a serial strictly-greater scan over increasing experts gives).
__device__ __forceinline__ bool beats(float v, int e, float bv, int be) {
  return v > bv || (v == bv && e < be);
}

// One block of kWarps warps. Warp w routes tokens w, w + kWarps, ...: the token's logits spread
// over the lanes, max, sum and each top-k round as warp reductions. Then warp 0 turns the
// expert counts into group starts and ends, and the warps sort slots by expert.
__global__ void moe_route(const float* __restrict__ logits, int64_t tokens, int experts, int k,
                          float scaling, float* __restrict__ weights, int64_t* __restrict__ ids,
                          int64_t* __restrict__ order, int64_t* __restrict__ slot_token,
                          int64_t* __restrict__ slot_pos, int32_t* __restrict__ group_ends) {
  __shared__ int counts[LLMPROF_K_MOE_MAX_EXPERTS];
  __shared__ int starts[LLMPROF_K_MOE_MAX_EXPERTS];
  __shared__ int slot_expert[LLMPROF_K_MOE_MAX_SLOTS];
  for (int e = threadIdx.x; e < experts; e += blockDim.x) counts[e] = 0;
  __syncthreads();

  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int64_t t = warp; t < tokens; t += kWarps) {
    const float* row = logits + t * experts;
    float v[kPerLane];
    float mx = -INFINITY;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const int e = lane + 32 * i;
      v[i] = e < experts ? row[e] : -INFINITY;
      mx = fmaxf(mx, v[i]);
    }
    for (int o = 16; o > 0; o /= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    float sum = 0.f;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      if (lane + 32 * i < experts) sum += expf(v[i] - mx);
    }
    for (int o = 16; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    unsigned taken = 0;  // bit i: this lane's expert lane + 32 i is taken
    for (int j = 0; j < k; ++j) {
      float bv = -INFINITY;
      int be = experts;  // no candidate yet: loses to every real expert
#pragma unroll
      for (int i = 0; i < kPerLane; ++i) {
        const int e = lane + 32 * i;
        if (e < experts && !((taken >> i) & 1u) && beats(v[i], e, bv, be)) {
          bv = v[i];
          be = e;
        }
      }
      for (int o = 16; o > 0; o /= 2) {
        const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
        const int oe = __shfl_xor_sync(0xffffffffu, be, o);
        if (beats(ov, oe, bv, be)) {
          bv = ov;
          be = oe;
        }
      }
      if (be % 32 == lane) taken |= 1u << (be / 32);
      if (lane == 0) {
        const int64_t slot = t * k + j;
        weights[slot] = expf(bv - mx) / sum * scaling;
        ids[slot] = be;
        slot_expert[slot] = be;
        atomicAdd(&counts[be], 1);
      }
    }
  }
  __syncthreads();

  if (warp == 0) {
    // Each lane sums a contiguous run of experts; an exclusive warp scan gives the run's start.
    const int per = (experts + 31) / 32;
    const int lo = min(lane * per, experts), hi = min(lo + per, experts);
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
  const int64_t slots = tokens * k;
  for (int e = warp; e < experts; e += kWarps) {
    int pos = starts[e];
    for (int64_t base = 0; base < slots; base += 32) {
      const int64_t s = base + lane;
      const bool mine = s < slots && slot_expert[s] == e;
      const unsigned ballot = __ballot_sync(0xffffffffu, mine);
      if (mine) {
        const int rank = __popc(ballot & ((1u << lane) - 1u));
        order[pos + rank] = s;
        slot_token[pos + rank] = s / k;
        slot_pos[s] = pos + rank;
      }
      pos += __popc(ballot);
    }
  }
}

}  // namespace

extern "C" int llmprof_k_moe_route(const float* logits, int64_t tokens, int experts, int k,
                                   float scaling, float* weights, int64_t* ids, int64_t* order,
                                   int64_t* slot_token, int64_t* slot_pos, int32_t* group_ends,
                                   void* stream) {
  if (experts < 1 || experts > LLMPROF_K_MOE_MAX_EXPERTS || k < 1 || k > experts ||
      tokens * k > LLMPROF_K_MOE_MAX_SLOTS) {
    return (int)cudaErrorInvalidValue;
  }
  moe_route<<<1, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      logits, tokens, experts, k, scaling, weights, ids, order, slot_token, slot_pos, group_ends);
  return (int)cudaGetLastError();
}
