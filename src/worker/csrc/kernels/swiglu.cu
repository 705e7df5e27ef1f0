// SwiGLU's activation in one kernel (launch.h): silu(gate)·up from the fused gate/up
// projection's output [rows, 2f] → [rows, f], replacing silu and the multiply over strided
// halves (two to four libtorch kernels, docs/performance.md "Round 2, session 8"). It rounds
// where they round: silu (x / (1 + e^−x) in fp32, as libtorch computes it) is stored in the
// element type, then the product.
#include "dtype.cuh"
#include "launch.h"

#include <cuda_runtime.h>
#include <math.h>

namespace {

using llmprof_k::from_f;
using llmprof_k::round_to;
using llmprof_k::to_f;

constexpr int kThreads = 256;

template <typename T>
__global__ void silu_mul(const T* __restrict__ gate_up, T* __restrict__ out, int64_t rows,
                         int64_t f) {
  const int64_t n = rows * f;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t r = i / f, c = i % f;
    const float g = to_f(gate_up[r * 2 * f + c]);
    const float u = to_f(gate_up[r * 2 * f + f + c]);
    const float silu = round_to<T>(__fdiv_rn(g, __fadd_rn(1.f, expf(-g))));
    out[i] = from_f<T>(__fmul_rn(silu, u));
  }
}

template <typename T>
int launch_silu_mul(const void* gate_up, void* out, int64_t rows, int64_t f,
                    cudaStream_t stream) {
  const int64_t blocks = (rows * f + kThreads - 1) / kThreads;
  const unsigned grid = (unsigned)(blocks < 65535 * 8 ? blocks : 65535 * 8);
  silu_mul<T><<<grid, kThreads, 0, stream>>>(static_cast<const T*>(gate_up), static_cast<T*>(out),
                                             rows, f);
  return (int)cudaGetLastError();
}

}  // namespace

extern "C" int llmprof_k_silu_mul(int dtype, const void* gate_up, void* out, int64_t rows,
                                  int64_t f, void* stream) {
  if (rows < 1 || f < 1) return (int)cudaErrorInvalidValue;
  auto st = static_cast<cudaStream_t>(stream);
  LLMPROF_K_DISPATCH(dtype, launch_silu_mul, gate_up, out, rows, f, st)
}
