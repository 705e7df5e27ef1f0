// Session 34, not in the tree: the fused router of calls G (128 threads) and H (this file, 1,024),
// measured slower than the router-logits kernel + the one-block router and removed. Built
// against session 34's csrc/kernels (moe_route.cu then included moe_route_block.cuh).
// DeepSeek MoE routing of a decode step's few tokens with its router logits in one kernel
// (launch.h): the router-logits kernel's blocks (router_logits.cu: a block per (expert, token),
// the same sums in the same order, so the same logits) and, in the block that finishes last,
// the one-block routing (moe_route_block.cuh). It replaces the two launches of the router
// logits and the one-block router; the router weight's rows are read before the wait for the
// kernel ahead (no kernel of the step writes them).
#include "dtype.cuh"
#include "launch.h"
#include "moe_route_block.cuh"
#include "pdl.cuh"

#include <cuda_runtime.h>

namespace {

using llmprof_k::to_f;

// A block's threads: the first kSumThreads (router_logits.cu's block) sum its logit as that
// kernel does; in the last block all kThreads route, as the one-block router's 1,024 do (with
// 128 threads in all the routing took 11 µs a layer against 8.7 for the two kernels: H200,
// reports/performance-history.md, round 3 session 34).
constexpr int kThreads = 1024;
constexpr int kSumThreads = 128;
// Router weights a summing thread holds from before the wait: rows up to kEarly × kSumThreads
// wide (DeepSeek-OCR's 1,280 and DeepSeek-V2-Lite's 2,048); the rest of a wider row after it.
constexpr int kEarly = 16;
static_assert(LLMPROF_K_MOE_ROUTER_ROUTE_MAX_TOKENS <= kThreads / 32,
              "one warp routes each token in the last block");

// Blocks of the launch that have finished their logit; the last block resets it for the next
// launch (launches on one device run one after another in llmprof's decode steps).
__device__ unsigned int g_blocks_done = 0;

template <typename T>
__global__ void __launch_bounds__(kThreads)
    moe_router_route(const T* __restrict__ x, const float* __restrict__ w,
                     float* __restrict__ logits, int64_t tokens, int experts, int64_t hidden,
                     int k, int shared, float scaling, llmprof_k::RouteOutputs out,
                     bool gather) {
  __shared__ llmprof_k::RouteShared sm;
  __shared__ float partial[kSumThreads / 32];
  __shared__ float logits_in_block[LLMPROF_K_MOE_ROUTER_ROUTE_MAX_TOKENS * LLMPROF_K_MOE_MAX_EXPERTS];
  __shared__ bool last;
  const int e = blockIdx.x;
  const int64_t t = blockIdx.y;
  const float* wr = w + (int64_t)e * hidden;
  const bool sums = threadIdx.x < kSumThreads;
  float early[kEarly];
#pragma unroll
  for (int j = 0; j < kEarly; ++j) {
    const int64_t i = threadIdx.x + (int64_t)j * kSumThreads;
    early[j] = sums && i < hidden ? wr[i] : 0.f;
  }
  llmprof_k::begin_after_previous_grid();
  if (sums) {
    // router_logits.cu's sums: element threadIdx.x + m·kSumThreads into chain m % 2, in order.
    const T* xr = x + t * hidden;
    float a0 = 0.f, a1 = 0.f;
#pragma unroll
    for (int j = 0; j < kEarly; j += 2) {
      const int64_t i = threadIdx.x + (int64_t)j * kSumThreads;
      if (i < hidden) a0 = __fmaf_rn(to_f(xr[i]), early[j], a0);
      if (i + kSumThreads < hidden) a1 = __fmaf_rn(to_f(xr[i + kSumThreads]), early[j + 1], a1);
    }
    for (int64_t i = threadIdx.x + (int64_t)kEarly * kSumThreads; i < hidden;
         i += 2 * kSumThreads) {
      a0 = __fmaf_rn(to_f(xr[i]), wr[i], a0);
      if (i + kSumThreads < hidden) {
        a1 = __fmaf_rn(to_f(xr[i + kSumThreads]), wr[i + kSumThreads], a1);
      }
    }
    float acc = a0 + a1;
    for (int o = 16; o > 0; o /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = acc;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    float sum = 0.f;
    for (int j = 0; j < kSumThreads / 32; ++j) sum += partial[j];
    logits[t * experts + e] = sum;
    __threadfence();  // the logit is visible device-wide before this block counts as done
    const unsigned blocks = gridDim.x * gridDim.y;
    last = atomicAdd(&g_blocks_done, 1u) == blocks - 1;
  }
  __syncthreads();
  if (!last) return;
  // Every other block's logit is written and fenced: read them past this SM's L1 (__ldcg).
  __threadfence();
  const int64_t n = tokens * experts;
  for (int64_t i = threadIdx.x; i < n; i += kThreads) logits_in_block[i] = __ldcg(logits + i);
  if (threadIdx.x == 0) g_blocks_done = 0;
  __syncthreads();
  const int64_t row_bytes = hidden * (int64_t)sizeof(T);
  const bool vec16 =
      row_bytes % 16 == 0 && llmprof_k::aligned16(x) && llmprof_k::aligned16(out.sorted_x);
  llmprof_k::route_in_block<kThreads>(logits_in_block, tokens, experts, k, shared, scaling, out,
                                      gather ? reinterpret_cast<const unsigned char*>(x) : nullptr,
                                      row_bytes, vec16, sm);
}

template <typename T>
int launch_router_route(const void* x, const float* w, float* logits, int64_t tokens,
                        int experts, int64_t hidden, int k, int shared, float scaling,
                        const llmprof_k::RouteOutputs& out, cudaStream_t stream) {
  const dim3 grid((unsigned)experts, (unsigned)tokens);
  return (int)llmprof_k::launch(moe_router_route<T>, grid, kThreads, 0, stream,
                                static_cast<const T*>(x), w, logits, tokens, experts, hidden, k,
                                shared, scaling, out, out.sorted_x != nullptr);
}

}  // namespace

extern "C" int llmprof_k_moe_router_route(int dtype, const void* x, const float* w,
                                          float* logits, int64_t tokens, int experts,
                                          int64_t hidden, int k, int shared, float scaling,
                                          float* weights, int64_t* ids, int64_t* order,
                                          int64_t* slot_token, int64_t* slot_pos,
                                          int32_t* group_ends, void* sorted_x, void* stream) {
  if (tokens < 1 || tokens > LLMPROF_K_MOE_ROUTER_ROUTE_MAX_TOKENS || experts < 1 ||
      shared < 0 || experts + shared > LLMPROF_K_MOE_MAX_EXPERTS || k < 1 || k > experts ||
      hidden < 1 || tokens * (k + shared) > LLMPROF_K_MOE_ONE_BLOCK_MAX_SLOTS) {
    return (int)cudaErrorInvalidValue;
  }
  const llmprof_k::RouteOutputs out{weights,  ids,        order, slot_token,
                                    slot_pos, group_ends, static_cast<unsigned char*>(sorted_x)};
  auto st = static_cast<cudaStream_t>(stream);
  LLMPROF_K_DISPATCH(dtype, launch_router_route, x, w, logits, tokens, experts, hidden, k, shared,
                     scaling, out, st)
}
