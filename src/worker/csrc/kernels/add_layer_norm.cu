// The residual add and the LayerNorm after it in one kernel (launch.h), for the vision encoders'
// pre-norm blocks: sum = round(x + delta), out = round((sum − mean) · rstd · weight + bias) with
// the statistics in fp32 over the rounded sum, as libtorch's add then layer_norm compute them.
// It replaces per block two adds and two LayerNorm kernels over the whole token grid
// (reports/performance-history.md, "Round 2, session 9").
#include "dtype.cuh"
#include "launch.h"

#include <cuda_runtime.h>

namespace {

using llmprof_k::from_f;
using llmprof_k::round_to;
using llmprof_k::to_f;

constexpr int kWarps = 8;

// Row `row` of the grid in a tensor cut into windows (launch.h), or `row` itself.
__device__ __forceinline__ int64_t source_row(int64_t row, const llmprof_k_window_rows& m) {
  if (m.win_h == 0) return row;
  const int64_t gx = row % m.grid_w, t = row / m.grid_w;
  const int64_t gy = t % m.grid_h, b = t / m.grid_h;
  const int64_t nwh = (m.grid_h + m.win_h - 1) / m.win_h;
  const int64_t nww = (m.grid_w + m.win_w - 1) / m.win_w;
  const int64_t window = (b * nwh + gy / m.win_h) * nww + gx / m.win_w;
  return (window * m.win_h + gy % m.win_h) * m.win_w + gx % m.win_w;
}

// One warp per row: lane l holds the 16-byte vectors l, l + 32, ... (kIters of them) in
// registers, so the row is read once and the variance is a second pass over registers.
template <typename T, int kIters>
__global__ void __launch_bounds__(kWarps * 32)
    add_layer_norm(const T* __restrict__ x, const T* __restrict__ delta,
                   const T* __restrict__ weight, const T* __restrict__ bias,
                   T* __restrict__ sum_out, T* __restrict__ out, int64_t rows, int hidden,
                   float eps, llmprof_k_window_rows delta_rows) {
  constexpr int kVE = 16 / (int)sizeof(T);
  const int lane = threadIdx.x % 32;
  const int64_t row = (int64_t)blockIdx.x * kWarps + threadIdx.x / 32;
  if (row >= rows) return;
  const int64_t base = row * hidden;
  const int64_t delta_base = source_row(row, delta_rows) * hidden;
  float s[kIters][kVE];
  float total = 0.f;
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    const int64_t c = (int64_t)(it * 32 + lane) * kVE;
    uint4 xa = *reinterpret_cast<const uint4*>(x + base + c);
    const uint4 da = *reinterpret_cast<const uint4*>(delta + delta_base + c);
    T* xe = reinterpret_cast<T*>(&xa);
    const T* de = reinterpret_cast<const T*>(&da);
#pragma unroll
    for (int i = 0; i < kVE; ++i) {
      s[it][i] = round_to<T>(__fadd_rn(to_f(xe[i]), to_f(de[i])));
      xe[i] = from_f<T>(s[it][i]);
      total += s[it][i];
    }
    *reinterpret_cast<uint4*>(sum_out + base + c) = xa;
  }
#pragma unroll
  for (int o = 16; o > 0; o /= 2) total += __shfl_xor_sync(0xffffffffu, total, o);
  const float mean = total / (float)hidden;
  float sq = 0.f;
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
#pragma unroll
    for (int i = 0; i < kVE; ++i) {
      const float d = s[it][i] - mean;
      sq = fmaf(d, d, sq);
    }
  }
#pragma unroll
  for (int o = 16; o > 0; o /= 2) sq += __shfl_xor_sync(0xffffffffu, sq, o);
  const float rstd = rsqrtf(sq / (float)hidden + eps);
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    const int64_t c = (int64_t)(it * 32 + lane) * kVE;
    const uint4 wa = *reinterpret_cast<const uint4*>(weight + c);
    const uint4 ba = *reinterpret_cast<const uint4*>(bias + c);
    const T* we = reinterpret_cast<const T*>(&wa);
    const T* be = reinterpret_cast<const T*>(&ba);
    uint4 oa;
    T* oe = reinterpret_cast<T*>(&oa);
#pragma unroll
    for (int i = 0; i < kVE; ++i) {
      oe[i] = from_f<T>(fmaf((s[it][i] - mean) * rstd, to_f(we[i]), to_f(be[i])));
    }
    *reinterpret_cast<uint4*>(out + base + c) = oa;
  }
}

template <typename T, int kIters>
int launch_iters(const void* x, const void* delta, const void* weight, const void* bias,
                 void* sum, void* out, int64_t rows, int hidden, float eps,
                 const llmprof_k_window_rows& delta_rows, cudaStream_t stream) {
  const int64_t blocks = (rows + kWarps - 1) / kWarps;
  add_layer_norm<T, kIters><<<(unsigned)blocks, kWarps * 32, 0, stream>>>(
      static_cast<const T*>(x), static_cast<const T*>(delta), static_cast<const T*>(weight),
      static_cast<const T*>(bias), static_cast<T*>(sum), static_cast<T*>(out), rows, hidden, eps,
      delta_rows);
  return (int)cudaGetLastError();
}

template <typename T>
int launch_add_layer_norm(const void* x, const void* delta, const void* weight, const void* bias,
                          void* sum, void* out, int64_t rows, int64_t hidden, float eps,
                          const llmprof_k_window_rows& delta_rows, cudaStream_t stream) {
  constexpr int64_t kRowVec = 32 * (16 / (int64_t)sizeof(T));  // channels per warp-wide pass
  if (hidden % kRowVec != 0) return (int)cudaErrorInvalidValue;
  const int h = (int)hidden;
  switch (hidden / kRowVec) {
#define LLMPROF_K_ITERS(n) \
  case n:                  \
    return launch_iters<T, n>(x, delta, weight, bias, sum, out, rows, h, eps, delta_rows, stream);
    LLMPROF_K_ITERS(1)
    LLMPROF_K_ITERS(2)
    LLMPROF_K_ITERS(3)
    LLMPROF_K_ITERS(4)
    LLMPROF_K_ITERS(5)
    LLMPROF_K_ITERS(6)
    LLMPROF_K_ITERS(7)
    LLMPROF_K_ITERS(8)
#undef LLMPROF_K_ITERS
    static_assert(LLMPROF_K_ADD_LAYER_NORM_MAX_PASSES == 8, "one case per pass count");
    default: return (int)cudaErrorInvalidValue;
  }
}

}  // namespace

extern "C" int llmprof_k_add_layer_norm(int dtype, const void* x, const void* delta,
                                        const void* weight, const void* bias, void* sum,
                                        void* out, int64_t rows, int64_t hidden, float eps,
                                        llmprof_k_window_rows delta_rows, void* stream) {
  if (rows < 1 || hidden < 1) return (int)cudaErrorInvalidValue;
  auto st = static_cast<cudaStream_t>(stream);
  LLMPROF_K_DISPATCH(dtype, launch_add_layer_norm, x, delta, weight, bias, sum, out, rows, hidden,
                     eps, delta_rows, st)
}
