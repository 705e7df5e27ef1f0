// The residual add and RMSNorm of one row by one block, in 16-byte vectors: sum = round(x +
// delta), out = round(sum · rsqrt(mean(sum²) + eps) · weight). Thread t holds vectors t,
// t + kThreads, ... (kVecs at most), every load issued before the first use, so the row is read
// once. The add + RMSNorm kernel (add_rms_norm.cu) runs it per row; the GEMV (gemv.cu) runs it
// in each block's prologue to fold the norm before a one-row projection into it, with the same
// thread mapping and summation order, so both give the same bits.
#ifndef LLMPROF_KERNELS_ADD_RMS_NORM_ROW_CUH
#define LLMPROF_KERNELS_ADD_RMS_NORM_ROW_CUH

#include "dtype.cuh"

namespace llmprof_k {

// Rows 16-byte aligned, hidden a multiple of the vector. `sum_out` null: the sum is not written.
// `out` may be shared memory. `partial`: kThreads / 32 floats of shared memory. Every thread of
// the block calls it (it synchronises the block once).
template <typename T, int kVecs, int kThreads>
__device__ __forceinline__ void add_rms_norm_row(const T* __restrict__ x,
                                                 const T* __restrict__ delta,
                                                 const T* __restrict__ weight, T* sum_out,
                                                 T* out, int64_t hidden, float eps,
                                                 float* partial) {
  constexpr int V = 16 / sizeof(T);
  using Vt = Vec<T, V>;
  const int64_t nvec = hidden / V;
  const Vt* xr = reinterpret_cast<const Vt*>(x);
  const Vt* dr = reinterpret_cast<const Vt*>(delta);
  const Vt* wr = reinterpret_cast<const Vt*>(weight);
  Vt s[kVecs], d[kVecs], w[kVecs];
#pragma unroll
  for (int j = 0; j < kVecs; ++j) {
    const int64_t i = threadIdx.x + (int64_t)j * kThreads;
    if (i < nvec) {
      s[j] = xr[i];
      d[j] = dr[i];
      w[j] = wr[i];
    }
  }
  Vt* sr = reinterpret_cast<Vt*>(sum_out);
  float sq = 0.f;
#pragma unroll
  for (int j = 0; j < kVecs; ++j) {
    const int64_t i = threadIdx.x + (int64_t)j * kThreads;
    if (i < nvec) {
#pragma unroll
      for (int c = 0; c < V; ++c) {
        const float v = round_to<T>(__fadd_rn(to_f(s[j].e[c]), to_f(d[j].e[c])));
        s[j].e[c] = from_f<T>(v);
        sq = __fmaf_rn(v, v, sq);
      }
      if (sr != nullptr) sr[i] = s[j];
    }
  }
  for (int o = 16; o > 0; o /= 2) sq += __shfl_xor_sync(0xffffffffu, sq, o);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = sq;
  __syncthreads();
  float total = 0.f;
#pragma unroll
  for (int k = 0; k < kThreads / 32; ++k) total += partial[k];
  const float rstd = rsqrtf(total / (float)hidden + eps);
  Vt* orow = reinterpret_cast<Vt*>(out);
#pragma unroll
  for (int j = 0; j < kVecs; ++j) {
    const int64_t i = threadIdx.x + (int64_t)j * kThreads;
    if (i < nvec) {
      Vt o;
#pragma unroll
      for (int c = 0; c < V; ++c) {
        o.e[c] = from_f<T>(__fmul_rn(__fmul_rn(to_f(s[j].e[c]), rstd), to_f(w[j].e[c])));
      }
      orow[i] = o;
    }
  }
}

}  // namespace llmprof_k

#endif  // LLMPROF_KERNELS_ADD_RMS_NORM_ROW_CUH
