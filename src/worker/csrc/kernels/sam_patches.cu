// SAM's input in one pass (launch.h): uint8 pixels [B,3,S,S], any strides (views arrive
// channels-last), to the patch-embedding GEMM's operand [B, g, g, 3·p·p] (g = S/p; columns in the
// convolution weight's (channel, row, column) order), normalised as (x/255 − 0.5)/0.5. It replaces
// the fp32 conversion, the three scalar ops, the cast and the patch copy: six passes, four of
// them over fp32 pixels (reports/performance-history.md, "Round 2, session 14"). It rounds where
// libtorch's ops round: x·(1/255) (libtorch divides by a scalar as a multiply by its fp32
// reciprocal), −0.5 (rounded in fp32 as libtorch's is), ×2 (exact), then one rounding to T.
#include "dtype.cuh"
#include "launch.h"

#include <cuda_runtime.h>
#include <stdint.h>

namespace {

using llmprof_k::from_f;
using llmprof_k::Vec;

constexpr int kThreads = 256;

// A thread per V consecutive output columns (V divides p, so they share a pixel row and
// channel): V loads of one byte, one V-element store.
template <typename T, int V>
__global__ void sam_patches(const uint8_t* __restrict__ px, llmprof_k_pixel_strides st,
                            T* __restrict__ out, int64_t g, int p, int64_t vectors) {
  using VT = Vec<T, V>;
  const int64_t cols = 3 * (int64_t)p * p;
  const float inv255 = 1.0f / 255.0f;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < vectors;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t e = i * V;
    const int64_t col = e % cols, patch = e / cols;
    const int64_t c = col / ((int64_t)p * p), ky = (col / p) % p, kx = col % p;
    const int64_t gx = patch % g, gy = (patch / g) % g, b = patch / (g * g);
    const uint8_t* src = px + b * st.b + c * st.c + (gy * p + ky) * st.y + (gx * p + kx) * st.x;
    VT y;
#pragma unroll
    for (int k = 0; k < V; ++k) {
      float v = __fmul_rn((float)src[k * st.x], inv255);
      v = __fmul_rn(__fadd_rn(v, -0.5f), 2.0f);
      y.e[k] = from_f<T>(v);
    }
    reinterpret_cast<VT*>(out)[i] = y;
  }
}

template <typename T>
int launch_patches(const void* px, llmprof_k_pixel_strides st, void* out, int64_t batch,
                   int64_t side, int p, bool vec16, cudaStream_t stream) {
  constexpr int V = 16 / sizeof(T);
  const int64_t g = side / p;
  const int64_t n = batch * g * g * 3 * p * p;
  const int64_t vectors = vec16 ? n / V : n;
  const int64_t blocks = (vectors + kThreads - 1) / kThreads;
  if (blocks == 0) return 0;
  const unsigned grid = (unsigned)(blocks < 65535 * 8 ? blocks : 65535 * 8);
  auto in = static_cast<const uint8_t*>(px);
  auto o = static_cast<T*>(out);
  if (vec16) {
    sam_patches<T, V><<<grid, kThreads, 0, stream>>>(in, st, o, g, p, vectors);
  } else {
    sam_patches<T, 1><<<grid, kThreads, 0, stream>>>(in, st, o, g, p, vectors);
  }
  return (int)cudaGetLastError();
}

}  // namespace

extern "C" int llmprof_k_sam_patches(int dtype, const void* pixels, llmprof_k_pixel_strides strides,
                                     void* out, int64_t batch, int64_t side, int patch, int vec16,
                                     void* stream) {
  if (batch < 0 || patch < 1 || side % patch != 0) return (int)cudaErrorInvalidValue;
  auto st = static_cast<cudaStream_t>(stream);
  LLMPROF_K_DISPATCH(dtype, launch_patches, pixels, strides, out, batch, side, patch, vec16 != 0,
                     st)
}
