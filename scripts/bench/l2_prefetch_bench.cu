// Kernels for scripts/bench_l2_prefetch.py (not part of the worker): an RMSNorm over a decode
// step's rows that also prefetches the next projection's weight into L2 with the worker's helper
// (src/worker/csrc/kernels/l2_prefetch.cuh), and a pure DRAM read to measure what bandwidth a
// kernel can reach on this GPU.
#include "../../src/worker/csrc/kernels/l2_prefetch.cuh"

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cstdint>

namespace {

constexpr int kThreads = 256;

// y = x · rsqrt(mean(x²) + 1e-5), one block per row for blocks < rows; every block also takes
// its share of prefetching [pf, pf + pf_bytes).
__global__ void __launch_bounds__(kThreads)
    norm_prefetch(const __nv_bfloat16* __restrict__ x, __nv_bfloat16* __restrict__ y, int rows,
                  int hidden, const void* pf, uint64_t pf_bytes) {
  llmprof_k::prefetch_l2_share(pf, pf_bytes);
  if ((int)blockIdx.x >= rows) return;
  __shared__ float partial[kThreads / 32];
  const uint4* xr = reinterpret_cast<const uint4*>(x + (int64_t)blockIdx.x * hidden);
  uint4* yr = reinterpret_cast<uint4*>(y + (int64_t)blockIdx.x * hidden);
  const int vecs = hidden / 8;
  float sq = 0.f;
  for (int v = threadIdx.x; v < vecs; v += kThreads) {
    const uint4 u = xr[v];
    const __nv_bfloat16* e = reinterpret_cast<const __nv_bfloat16*>(&u);
    for (int i = 0; i < 8; ++i) sq += __bfloat162float(e[i]) * __bfloat162float(e[i]);
  }
  for (int o = 16; o > 0; o /= 2) sq += __shfl_xor_sync(0xffffffffu, sq, o);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = sq;
  __syncthreads();
  float total = 0.f;
  for (int i = 0; i < kThreads / 32; ++i) total += partial[i];
  const float r = rsqrtf(total / hidden + 1e-5f);
  for (int v = threadIdx.x; v < vecs; v += kThreads) {
    uint4 u = xr[v];
    __nv_bfloat16* e = reinterpret_cast<__nv_bfloat16*>(&u);
    for (int i = 0; i < 8; ++i) e[i] = __float2bfloat16(__bfloat162float(e[i]) * r);
    yr[v] = u;
  }
}

// Reads [p, p + 16·n) once, four 16-byte loads in flight per thread, and writes one word per
// block so the loads are not removed.
__global__ void __launch_bounds__(512) read_all(const uint4* __restrict__ p, uint64_t n,
                                                 uint32_t* __restrict__ out) {
  uint32_t acc = 0;
  const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    const uint4 a = p[i], b = p[i + stride], c = p[i + 2 * stride], d = p[i + 3 * stride];
    acc ^= a.x ^ b.y ^ c.z ^ d.w;
  }
  for (; i < n; i += stride) acc ^= p[i].x;
  if (acc == 0x9e3779b9u) out[blockIdx.x] = acc;
}

}  // namespace

extern "C" int bench_norm_prefetch(const void* x, void* y, int rows, int hidden, const void* pf,
                                   uint64_t pf_bytes, int blocks, void* stream) {
  const int grid = blocks > rows ? blocks : rows;
  norm_prefetch<<<grid, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const __nv_bfloat16*>(x), static_cast<__nv_bfloat16*>(y), rows, hidden, pf,
      pf_bytes / 16 * 16);
  return (int)cudaGetLastError();
}

extern "C" int bench_read_all(const void* p, uint64_t bytes, void* out, int blocks, void* stream) {
  read_all<<<blocks, 512, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const uint4*>(p), bytes / 16, static_cast<uint32_t*>(out));
  return (int)cudaGetLastError();
}
