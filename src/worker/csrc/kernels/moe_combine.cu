// The MoE combine in one kernel (launch.h): each token's k expert outputs, read from the
// expert-sorted rows the grouped GEMM wrote, weighted and summed in fp32, rounded to the element
// type, plus the shared experts' output. It replaces, per MoE layer, the unsort index_copy, the
// casts to and from fp32, the weight multiply, the sum and the add (docs/performance.md,
// "Round 2, session 8"), and rounds where they round.
#include "dtype.cuh"
#include "launch.h"

#include <cuda_runtime.h>

namespace {

using llmprof_k::from_f;
using llmprof_k::round_to;
using llmprof_k::to_f;

constexpr int kThreads = 128;
constexpr int kMaxK = LLMPROF_K_MOE_COMBINE_MAX_K;

// Blocks over (channel chunk, token), a thread per channel, so a decode step's few tokens still
// spread over many SMs; the token's k sorted rows and weights are read once into shared memory.
template <typename T>
__global__ void moe_combine(const T* __restrict__ sorted, const int64_t* __restrict__ slot_pos,
                            const float* __restrict__ weights, const T* __restrict__ shared,
                            T* __restrict__ y, int64_t hidden, int k) {
  __shared__ int64_t rows[kMaxK];
  __shared__ float w[kMaxK];
  const int64_t t = blockIdx.y;
  for (int j = threadIdx.x; j < k; j += blockDim.x) {
    rows[j] = slot_pos[t * k + j] * hidden;
    w[j] = weights[t * k + j];
  }
  __syncthreads();
  const int64_t d = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (d >= hidden) return;
  float acc = 0.f;
  for (int j = 0; j < k; ++j) acc = __fadd_rn(acc, __fmul_rn(to_f(sorted[rows[j] + d]), w[j]));
  float out = round_to<T>(acc);
  if (shared != nullptr) out = __fadd_rn(out, to_f(shared[t * hidden + d]));
  y[t * hidden + d] = from_f<T>(out);
}

template <typename T>
int launch_combine(const void* sorted, const int64_t* slot_pos, const float* weights,
                   const void* shared, void* y, int64_t tokens, int64_t hidden, int k,
                   cudaStream_t stream) {
  const dim3 grid((unsigned)((hidden + kThreads - 1) / kThreads), (unsigned)tokens);
  moe_combine<T><<<grid, kThreads, 0, stream>>>(
      static_cast<const T*>(sorted), slot_pos, weights, static_cast<const T*>(shared),
      static_cast<T*>(y), hidden, k);
  return (int)cudaGetLastError();
}

}  // namespace

extern "C" int llmprof_k_moe_combine(int dtype, const void* sorted, const int64_t* slot_pos,
                                     const float* weights, const void* shared, void* y,
                                     int64_t tokens, int64_t hidden, int k, void* stream) {
  if (tokens < 1 || tokens > LLMPROF_K_MAX_GRID_Y || hidden < 1 || k < 1 || k > kMaxK) {
    return (int)cudaErrorInvalidValue;
  }
  auto st = static_cast<cudaStream_t>(stream);
  LLMPROF_K_DISPATCH(dtype, launch_combine, sorted, slot_pos, weights, shared, y, tokens, hidden,
                     k, st)
}
