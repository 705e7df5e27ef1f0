// One token's DeepSeek MoE routing by one warp, shared by the one-block router (moe_route.cu) and
// the many-block one (moe_route_many.cu): fp32 softmax over the router logits spread over the
// lanes (expert e in lane e % 32, register e / 32), then k greedy top-1 rounds as warp
// reductions; ties go to the lower expert (the order a serial strictly-greater scan gives). A NaN
// logit counts as +∞, so every round has a winner below `experts` (its weights come out NaN, as
// libtorch's softmax gives them) and no slot is left unsorted.
#ifndef LLMPROF_KERNELS_MOE_ROUTE_TOKEN_CUH
#define LLMPROF_KERNELS_MOE_ROUTE_TOKEN_CUH
#include "launch.h"

#include <cuda_runtime.h>

namespace llmprof_k {

constexpr int kRoutePerLane = LLMPROF_K_MOE_MAX_EXPERTS / 32;

// (value, expert) that wins a top-k round: the larger value, on equal values the lower expert.
__device__ __forceinline__ bool route_beats(float v, int e, float bv, int be) {
  return v > bv || (v == bv && e < be);
}

// Routes the token whose logits are `row` [experts]; every lane of the warp calls it. Lane 0
// calls chosen(j, expert, weight) for the j-th choice, weight = softmax probability × scaling.
template <typename Chosen>
__device__ __forceinline__ void route_token(const float* __restrict__ row, int experts, int k,
                                            float scaling, int lane, Chosen chosen) {
  float v[kRoutePerLane];
  float mx = -INFINITY;
#pragma unroll
  for (int i = 0; i < kRoutePerLane; ++i) {
    const int e = lane + 32 * i;
    v[i] = e < experts ? row[e] : -INFINITY;
    if (isnan(v[i])) v[i] = INFINITY;  // NaN ranks highest, as in torch.topk; never no winner
    mx = fmaxf(mx, v[i]);
  }
  for (int o = 16; o > 0; o /= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
  float sum = 0.f;
#pragma unroll
  for (int i = 0; i < kRoutePerLane; ++i) {
    if (lane + 32 * i < experts) sum += expf(v[i] - mx);
  }
  for (int o = 16; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  unsigned taken = 0;  // bit i: this lane's expert lane + 32 i is taken
  for (int j = 0; j < k; ++j) {
    float bv = -INFINITY;
    int be = experts;  // no candidate yet: loses to every real expert
#pragma unroll
    for (int i = 0; i < kRoutePerLane; ++i) {
      const int e = lane + 32 * i;
      if (e < experts && !((taken >> i) & 1u) && route_beats(v[i], e, bv, be)) {
        bv = v[i];
        be = e;
      }
    }
    for (int o = 16; o > 0; o /= 2) {
      const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
      const int oe = __shfl_xor_sync(0xffffffffu, be, o);
      if (route_beats(ov, oe, bv, be)) {
        bv = ov;
        be = oe;
      }
    }
    if (be % 32 == lane) taken |= 1u << (be / 32);
    if (lane == 0) chosen(j, be, expf(bv - mx) / sum * scaling);
  }
}

}  // namespace llmprof_k

#endif  // LLMPROF_KERNELS_MOE_ROUTE_TOKEN_CUH
