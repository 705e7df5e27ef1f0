// MoE router logits in one kernel (launch.h): logits [tokens, experts] fp32 = x · Wᵀ with x in
// the model's dtype read as fp32 and the router weight W kept in fp32, replacing the cast of x to
// fp32 and the fp32 GEMV/GEMM (two or three kernels per MoE layer; reports/performance-history.md,
// "Round 2, session 8"). Sums in fp32 like the GEMM, in another order.
#include "dtype.cuh"
#include "launch.h"
#include "pdl.cuh"

#include <cuda_runtime.h>

namespace {

using llmprof_k::to_f;

constexpr int kThreads = 128;

// A block per (expert, token): the threads split the hidden channels (two chains each), then a
// warp and a block reduction. A decode step's one token still spreads over `experts` SMs.
template <typename T>
__global__ void router_logits(const T* __restrict__ x, const float* __restrict__ w,
                              float* __restrict__ logits, int experts, int64_t hidden) {
  llmprof_k::begin_after_previous_grid();
  __shared__ float partial[kThreads / 32];
  const int e = blockIdx.x;
  const int64_t t = blockIdx.y;
  const T* xr = x + t * hidden;
  const float* wr = w + (int64_t)e * hidden;
  float a0 = 0.f, a1 = 0.f;
  int64_t i = threadIdx.x;
  for (; i + kThreads < hidden; i += 2 * kThreads) {
    a0 = __fmaf_rn(to_f(xr[i]), wr[i], a0);
    a1 = __fmaf_rn(to_f(xr[i + kThreads]), wr[i + kThreads], a1);
  }
  if (i < hidden) a0 = __fmaf_rn(to_f(xr[i]), wr[i], a0);
  float acc = a0 + a1;
  for (int o = 16; o > 0; o /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    float sum = 0.f;
    for (int j = 0; j < kThreads / 32; ++j) sum += partial[j];
    logits[t * experts + e] = sum;
  }
}

template <typename T>
int launch_router(const void* x, const float* w, float* logits, int64_t tokens, int experts,
                  int64_t hidden, cudaStream_t stream) {
  const dim3 grid((unsigned)experts, (unsigned)tokens);
  return (int)llmprof_k::launch(router_logits<T>, grid, kThreads, 0, stream,
                                static_cast<const T*>(x), w, logits, experts, hidden);
}

}  // namespace

extern "C" int llmprof_k_router_logits(int dtype, const void* x, const float* w, float* logits,
                                       int64_t tokens, int experts, int64_t hidden, void* stream) {
  if (tokens < 1 || tokens > LLMPROF_K_MAX_GRID_Y || experts < 1 || hidden < 1) return (int)cudaErrorInvalidValue;
  auto st = static_cast<cudaStream_t>(stream);
  LLMPROF_K_DISPATCH(dtype, launch_router, x, w, logits, tokens, experts, hidden, st)
}
