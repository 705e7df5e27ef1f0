// The MoE combine in one kernel (launch.h): each token's k expert outputs, read from the
// expert-sorted rows the grouped GEMM wrote, weighted and summed in fp32, rounded to the element
// type, plus the shared experts' output. It replaces, per MoE layer, the unsort index_copy, the
// casts to and from fp32, the weight multiply, the sum and the add (reports/performance-history.md,
// "Round 2, session 8"), and rounds where they round.
#include "dtype.cuh"
#include "launch.h"
#include "pdl.cuh"

#include <cuda_runtime.h>

namespace {

using llmprof_k::aligned16;
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
  llmprof_k::begin_after_previous_grid();
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

// A prefill's many tokens: 16-byte vectors (V elements), the block's x threads over a token's
// channels, its y threads over tokens; the same sums in the same order as the element kernel
// (0.138 ms per layer at batch-8 prefill on the H100 with one element per thread).
template <typename T, int V>
__global__ void moe_combine_vec(const T* __restrict__ sorted, const int64_t* __restrict__ slot_pos,
                                const float* __restrict__ weights, const T* __restrict__ shared,
                                T* __restrict__ y, int64_t tokens, int64_t hidden, int k) {
  llmprof_k::begin_after_previous_grid();
  using Vt = llmprof_k::Vec<T, V>;
  const int64_t t = (int64_t)blockIdx.x * blockDim.y + threadIdx.y;
  if (t >= tokens) return;
  for (int64_t i = threadIdx.x; i < hidden / V; i += blockDim.x) {
    float acc[V];
#pragma unroll
    for (int c = 0; c < V; ++c) acc[c] = 0.f;
    for (int j = 0; j < k; ++j) {
      const float w = weights[t * k + j];
      const Vt x = reinterpret_cast<const Vt*>(sorted + slot_pos[t * k + j] * hidden)[i];
#pragma unroll
      for (int c = 0; c < V; ++c) acc[c] = __fadd_rn(acc[c], __fmul_rn(to_f(x.e[c]), w));
    }
    Vt sh;
    if (shared != nullptr) sh = reinterpret_cast<const Vt*>(shared + t * hidden)[i];
    Vt o;
#pragma unroll
    for (int c = 0; c < V; ++c) {
      float out = round_to<T>(acc[c]);
      if (shared != nullptr) out = __fadd_rn(out, to_f(sh.e[c]));
      o.e[c] = from_f<T>(out);
    }
    reinterpret_cast<Vt*>(y + t * hidden)[i] = o;
  }
}

constexpr int64_t kVectorMinTokens = 64;

template <typename T>
int launch_combine(const void* sorted, const int64_t* slot_pos, const float* weights,
                   const void* shared, void* y, int64_t tokens, int64_t hidden, int k,
                   cudaStream_t stream) {
  constexpr int V = 16 / sizeof(T);
  if (tokens >= kVectorMinTokens && hidden % V == 0 && aligned16(sorted) && aligned16(y) &&
      (shared == nullptr || aligned16(shared))) {
    const int64_t vecs = hidden / V;
    const unsigned bx = (unsigned)(vecs < 256 ? vecs : 256);
    const unsigned by = 256 / bx > 0 ? 256 / bx : 1;
    const dim3 block(bx, by);
    const unsigned blocks = (unsigned)((tokens + by - 1) / by);
    return (int)llmprof_k::launch(
        moe_combine_vec<T, V>, blocks, block, 0, stream, static_cast<const T*>(sorted), slot_pos,
        weights, static_cast<const T*>(shared), static_cast<T*>(y), tokens, hidden, k);
  }
  const dim3 grid((unsigned)((hidden + kThreads - 1) / kThreads), (unsigned)tokens);
  return (int)llmprof_k::launch(moe_combine<T>, grid, kThreads, 0, stream,
                                static_cast<const T*>(sorted), slot_pos, weights,
                                static_cast<const T*>(shared), static_cast<T*>(y), hidden, k);
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
