// CLIP's quickGELU, x·sigmoid(1.702·x), in one kernel (launch.h), replacing a multiply by the
// scalar, a sigmoid and a multiply (three passes over the MLP's 4,096-wide activations,
// reports/performance-history.md "Round 2, session 10"). It rounds where libtorch's three ops
// round: the scaled input and the sigmoid (1 / (1 + e^−t) in fp32, as libtorch computes it) are
// stored in the element type, then the product.
#include "dtype.cuh"
#include "launch.h"

#include <cuda_runtime.h>
#include <math.h>

namespace {

using llmprof_k::from_f;
using llmprof_k::round_to;
using llmprof_k::to_f;
using llmprof_k::Vec;

constexpr int kThreads = 256;

template <typename T>
__device__ __forceinline__ float quick_gelu_of(float v) {
  const float t = round_to<T>(__fmul_rn(v, 1.702f));
  const float sig = round_to<T>(__fdiv_rn(1.f, __fadd_rn(1.f, expf(-t))));
  return __fmul_rn(v, sig);
}

// A thread per V elements (V = 16 / sizeof(T) with vec16, else 1), one V-element load and
// store each.
template <typename T, int V>
__global__ void quick_gelu(const T* __restrict__ x, T* __restrict__ out, int64_t vectors) {
  using VT = Vec<T, V>;
  const VT* xv = reinterpret_cast<const VT*>(x);
  VT* ov = reinterpret_cast<VT*>(out);
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < vectors;
       i += (int64_t)gridDim.x * blockDim.x) {
    const VT in = xv[i];
    VT y;
#pragma unroll
    for (int e = 0; e < V; ++e) {
      y.e[e] = from_f<T>(quick_gelu_of<T>(to_f(in.e[e])));
    }
    ov[i] = y;
  }
}

template <typename T>
int launch_quick_gelu(const void* x, void* out, int64_t n, bool vec, cudaStream_t stream) {
  constexpr int V = 16 / sizeof(T);
  const int64_t vectors = vec ? n / V : n;
  const int64_t blocks = (vectors + kThreads - 1) / kThreads;
  const unsigned grid = (unsigned)(blocks < 65535 * 8 ? blocks : 65535 * 8);
  auto in = static_cast<const T*>(x);
  auto o = static_cast<T*>(out);
  if (vec) {
    quick_gelu<T, V><<<grid, kThreads, 0, stream>>>(in, o, vectors);
  } else {
    quick_gelu<T, 1><<<grid, kThreads, 0, stream>>>(in, o, vectors);
  }
  return (int)cudaGetLastError();
}

}  // namespace

extern "C" int llmprof_k_quick_gelu(int dtype, const void* x, void* out, int64_t n, int vec16,
                                    void* stream) {
  if (n < 1) return (int)cudaErrorInvalidValue;
  auto st = static_cast<cudaStream_t>(stream);
  LLMPROF_K_DISPATCH(dtype, launch_quick_gelu, x, out, n, vec16 != 0, st)
}
