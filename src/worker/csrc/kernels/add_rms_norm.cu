// The residual add and the RMSNorm after it in one kernel (launch.h): sum = round(x + delta),
// out = round(sum · rsqrt(mean(sum²) + eps) · weight), the form of libtorch's fused RMSNorm (one
// rounding after the fp32 product). It replaces per decoder layer two adds and two norm kernels
// (reports/performance-history.md, "Round 2, session 8").
#include "add_rms_norm_row.cuh"
#include "dtype.cuh"
#include "launch.h"
#include "pdl.cuh"

#include <cuda_runtime.h>

namespace {

using llmprof_k::aligned16;
using llmprof_k::from_f;
using llmprof_k::round_to;
using llmprof_k::to_f;

constexpr int kThreads = 256;
constexpr int kPer = LLMPROF_K_ADD_RMS_NORM_MAX_HIDDEN / kThreads;

// One block per row; thread j holds channels j, j + 256, ... in registers (the loops unroll over
// kPer slots), so the row is read once, the weights are loaded before the reduction, and the
// norm needs no second pass over memory. Every load is issued before the first use: a loop that
// loaded, added and stored slot by slot waited on each slot's loads in turn (the guard of each
// slot is a branch its successor's loads do not move above; reports/performance-history.md,
// session 30).
template <typename T>
__global__ void add_rms_norm(const T* __restrict__ x, const T* __restrict__ delta,
                             const T* __restrict__ weight, T* __restrict__ sum_out,
                             T* __restrict__ out, int64_t hidden, float eps) {
  llmprof_k::begin_after_previous_grid();
  __shared__ float partial[kThreads / 32];
  const int64_t base = (int64_t)blockIdx.x * hidden;
  T xs[kPer], ds[kPer], ws[kPer];
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    const int64_t i = threadIdx.x + (int64_t)j * kThreads;
    if (i < hidden) {
      xs[j] = x[base + i];
      ds[j] = delta[base + i];
      ws[j] = weight[i];
    }
  }
  float s[kPer];
  float sq = 0.f;
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    const int64_t i = threadIdx.x + (int64_t)j * kThreads;
    s[j] = 0.f;
    if (i < hidden) {
      s[j] = round_to<T>(__fadd_rn(to_f(xs[j]), to_f(ds[j])));
      sum_out[base + i] = from_f<T>(s[j]);
      sq = __fmaf_rn(s[j], s[j], sq);
    }
  }
  for (int o = 16; o > 0; o /= 2) sq += __shfl_xor_sync(0xffffffffu, sq, o);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = sq;
  __syncthreads();
  if (threadIdx.x < 32) {
    float v = threadIdx.x < kThreads / 32 ? partial[threadIdx.x] : 0.f;
    for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (threadIdx.x == 0) partial[0] = rsqrtf(v / (float)hidden + eps);
  }
  __syncthreads();
  const float rstd = partial[0];
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    const int64_t i = threadIdx.x + (int64_t)j * kThreads;
    if (i < hidden) out[base + i] = from_f<T>(__fmul_rn(__fmul_rn(s[j], rstd), to_f(ws[j])));
  }
}

// One row per block of kThreads in 16-byte vectors (rows 16-byte aligned, hidden a multiple of
// the vector): thread t holds vectors t, t + kThreads, ... (kVecs at most), all loaded before the
// first use. Every row count takes it: a warp per row took 15 µs a call at 128 rows of 4,096
// (one warp an SM, each running its row through a chain of dependent instructions; session 30),
// and 11.8 / 115 µs against this kernel's 8.2 / 69 at a prefill's 1,024 / 8,192 rows (eight
// rows a block, eight warps an SM; reports/performance-history.md, round 3 session 32).
template <typename T, int kVecs>
__global__ void __launch_bounds__(kThreads)
    add_rms_norm_vec(const T* __restrict__ x, const T* __restrict__ delta,
                     const T* __restrict__ weight, T* __restrict__ sum_out, T* __restrict__ out,
                     int64_t hidden, float eps) {
  llmprof_k::begin_after_previous_grid();
  __shared__ float partial[kThreads / 32];
  const int64_t base = (int64_t)blockIdx.x * hidden;
  llmprof_k::add_rms_norm_row<T, kVecs, kThreads>(x + base, delta + base, weight, sum_out + base,
                                                  out + base, hidden, eps, partial);
}

template <typename T>
int launch_add_rms_norm(const void* x, const void* delta, const void* weight, void* sum, void* out,
                        int64_t rows, int64_t hidden, float eps, cudaStream_t stream) {
  constexpr int V = 16 / sizeof(T);
  const bool vec16 = hidden % V == 0 && aligned16(x) && aligned16(delta) && aligned16(weight) &&
                     aligned16(sum) && aligned16(out);
  if (vec16) {
    const int64_t per_thread = (hidden / V + kThreads - 1) / kThreads;  // vectors per thread
    auto* kernel = per_thread <= 1   ? add_rms_norm_vec<T, 1>
                   : per_thread <= 2 ? add_rms_norm_vec<T, 2>
                   : per_thread <= 4 ? add_rms_norm_vec<T, 4>
                                     : add_rms_norm_vec<T, 8>;
    return (int)llmprof_k::launch(
        kernel, (unsigned)rows, kThreads, 0, stream, static_cast<const T*>(x),
        static_cast<const T*>(delta), static_cast<const T*>(weight), static_cast<T*>(sum),
        static_cast<T*>(out), hidden, eps);
  }
  return (int)llmprof_k::launch(
      add_rms_norm<T>, (unsigned)rows, kThreads, 0, stream, static_cast<const T*>(x),
      static_cast<const T*>(delta), static_cast<const T*>(weight), static_cast<T*>(sum),
      static_cast<T*>(out), hidden, eps);
}

}  // namespace

extern "C" int llmprof_k_add_rms_norm(int dtype, const void* x, const void* delta,
                                      const void* weight, void* sum, void* out, int64_t rows,
                                      int64_t hidden, float eps, void* stream) {
  if (rows < 1 || rows > 0x7fffffff || hidden < 1 || hidden > LLMPROF_K_ADD_RMS_NORM_MAX_HIDDEN) {
    return (int)cudaErrorInvalidValue;
  }
  auto st = static_cast<cudaStream_t>(stream);
  LLMPROF_K_DISPATCH(dtype, launch_add_rms_norm, x, delta, weight, sum, out, rows, hidden, eps, st)
}
