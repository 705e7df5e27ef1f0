// Asking the L2 cache to fetch what the next kernel will read, from inside a short kernel before
// it: the weight of the projection after a norm, an activation or attention's combine. DRAM sits
// almost idle while such a kernel runs and while the next one ramps up; a prefetch issued at the
// start keeps it busy, and the fill goes on after the issuing kernel exits (a prefetch is
// fire-and-forget), so the projection's first loads hit L2 (reports/performance-history.md,
// round 3 session 31).
#ifndef LLMPROF_KERNELS_L2_PREFETCH_CUH
#define LLMPROF_KERNELS_L2_PREFETCH_CUH

#include <cstdint>

namespace llmprof_k {

// Bytes per prefetch instruction: a bulk prefetch of 16 KiB (sm_90) or, before sm_90, one
// 128-byte line.
constexpr uint64_t kL2PrefetchChunk = 16384;

// This thread's share of prefetching [base, base + bytes) into L2, the range dealt in 16 KiB
// chunks over every block of the grid (x, y and z) first, then over each block's threads: a
// bulk prefetch is carried out by its SM's copy engine at ≈ 250 GB/s, and a block does not
// finish until its prefetches have, so the chunks go to as many SMs as there are blocks.
// `base` 16-byte aligned and `bytes` a multiple of 16 (the launcher rounds down); nothing when
// base is null or bytes 0. A launcher gives the prefetch enough blocks (tens) to keep DRAM busy.
__device__ inline void prefetch_l2_share(const void* base, uint64_t bytes) {
  if (base == nullptr || bytes == 0) return;
  const uint64_t blocks = (uint64_t)gridDim.x * gridDim.y * gridDim.z;
  const uint64_t block =
      blockIdx.x + (uint64_t)gridDim.x * (blockIdx.y + (uint64_t)gridDim.y * blockIdx.z);
  const uint64_t lane =
      threadIdx.x + (uint64_t)blockDim.x * (threadIdx.y + (uint64_t)blockDim.y * threadIdx.z);
  const uint64_t thread = lane * blocks + block;
  const uint64_t threads = blocks * blockDim.x * blockDim.y * blockDim.z;
  const uint64_t chunks = (bytes + kL2PrefetchChunk - 1) / kL2PrefetchChunk;
  for (uint64_t c = thread; c < chunks; c += threads) {
    const char* p = static_cast<const char*>(base) + c * kL2PrefetchChunk;
    const uint64_t left = bytes - c * kL2PrefetchChunk;
    const uint32_t n = (uint32_t)(left < kL2PrefetchChunk ? left : kL2PrefetchChunk);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(n) : "memory");
#else
    for (uint32_t o = 0; o < n; o += 128) asm volatile("prefetch.global.L2 [%0];" ::"l"(p + o));
#endif
  }
}

}  // namespace llmprof_k

#endif  // LLMPROF_KERNELS_L2_PREFETCH_CUH
