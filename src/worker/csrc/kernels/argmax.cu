// Greedy selection (launch.h): each row of fp32 logits [rows, vocab] → the index of its largest
// value as int64, the first of equal values, a NaN above every number and ±0 equal: the choice
// of libtorch's argmax. libtorch reduces a row in one block: 27.6 µs for Llama-3.1-8B's 128,256
// logits at batch 1 on an H200, longer than an o_proj (reports/performance-history.md, round 3
// session 32). Here each row is cut over kSlicesMax blocks at most; a block reduces its slice
// to one 64-bit key (the value's order-preserving bits above the index's complement, so the
// largest key is the largest value's first index), merges it into the row's key with atomicMax,
// and the row's last block to finish writes the index and leaves the row's key and counter at
// zero for the next call (the caller zeroes them once).
#include "launch.h"
#include "pdl.cuh"

#include <cuda_runtime.h>
#include <stdint.h>

namespace {

constexpr int kThreads = 256;
constexpr int64_t kPerThread = 16;  // logits a thread reads, about
constexpr int kSlicesMax = 64;

// Larger key ⇔ larger value, then smaller index; NaN above all, -0 as +0.
__device__ __forceinline__ unsigned long long argmax_key(float v, int64_t i) {
  unsigned int bits = __float_as_uint(v == 0.f ? 0.f : v);
  bits = isnan(v) ? 0xffffffffu : ((bits & 0x80000000u) ? ~bits : (bits | 0x80000000u));
  return ((unsigned long long)bits << 32) | (unsigned long long)(0xffffffffu - (unsigned int)i);
}

__global__ void __launch_bounds__(kThreads)
    argmax_rows(const float* __restrict__ logits, int64_t vocab, int64_t slice,
                unsigned long long* __restrict__ row_key, unsigned int* __restrict__ row_done,
                int64_t* __restrict__ out) {
  llmprof_k::begin_after_previous_grid();
  __shared__ unsigned long long warp_best[kThreads / 32];
  __shared__ bool last;
  const int64_t row = blockIdx.y;
  const float* x = logits + row * vocab;
  const int64_t lo = (int64_t)blockIdx.x * slice, hi = min(lo + slice, vocab);
  unsigned long long best = 0;
  for (int64_t i = lo + threadIdx.x; i < hi; i += kThreads) {
    const unsigned long long k = argmax_key(x[i], i);
    best = k > best ? k : best;
  }
  for (int o = 16; o > 0; o /= 2) {
    const unsigned long long other = __shfl_xor_sync(0xffffffffu, best, o);
    best = other > best ? other : best;
  }
  if (threadIdx.x % 32 == 0) warp_best[threadIdx.x / 32] = best;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < kThreads / 32; ++w) best = warp_best[w] > best ? warp_best[w] : best;
    atomicMax(&row_key[row], best);
    __threadfence();  // the key merged before the block counts itself done
    last = atomicAdd(&row_done[row], 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (last && threadIdx.x == 0) {
    __threadfence();
    const unsigned long long key = atomicExch(&row_key[row], 0ull);
    row_done[row] = 0u;
    out[row] = (int64_t)(0xffffffffu - (unsigned int)(key & 0xffffffffu));
  }
}

}  // namespace

extern "C" int llmprof_k_argmax(const float* logits, int64_t rows, int64_t vocab,
                                unsigned long long* row_key, unsigned int* row_done, int64_t* out,
                                void* stream) {
  if (rows < 1 || rows > LLMPROF_K_MAX_GRID_Y || vocab < 1 || vocab > 0xffffffffll) {
    return (int)cudaErrorInvalidValue;
  }
  int64_t slices = (vocab + kThreads * kPerThread - 1) / (kThreads * kPerThread);
  slices = slices < kSlicesMax ? slices : kSlicesMax;
  const int64_t slice = (vocab + slices - 1) / slices;
  const dim3 grid((unsigned)((vocab + slice - 1) / slice), (unsigned)rows);
  return (int)llmprof_k::launch(argmax_rows, grid, kThreads, 0, static_cast<cudaStream_t>(stream),
                                logits, vocab, slice, row_key, row_done, out);
}
