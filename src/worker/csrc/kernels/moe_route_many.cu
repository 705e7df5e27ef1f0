// DeepSeek MoE routing for many tokens (a prefill) over many blocks (launch.h): the outputs of the
// one-block router (moe_route.cu), whose single block took 247 µs for a 914-token prefill on an
// H100 (reports/performance-history.md, "Round 2, session 11"). Three launches:
//   1. route_blocks: block b routes tokens [32 b, 32 b + 32), a warp per token (the same routing
//      as the one-block router), and writes its expert counts to counts[b, e];
//   2. scan_counts: one block turns the counts into group ends and, in place, each block's first
//      sorted row per expert (blocks in order, so earlier slots come first);
//   3. place_slots: a warp per block of tokens walks its slots in order and places each after
//      the earlier slots of its expert (ranks within 32 slots from __match_any_sync), so the
//      order is the stable sort by expert.
#include "launch.h"
#include "pdl.cuh"
#include "moe_route_token.cuh"

#include <cuda_runtime.h>

namespace {

using llmprof_k::route_token;

constexpr int kTokensPerBlock = 32;
constexpr int kRouteWarps = 8;
constexpr int kScanThreads = 1024;

__global__ void route_blocks(const float* __restrict__ logits, int64_t tokens, int experts, int k,
                             float scaling, float* __restrict__ weights, int64_t* __restrict__ ids,
                             int32_t* __restrict__ counts) {
  llmprof_k::begin_after_previous_grid();
  __shared__ int c[LLMPROF_K_MOE_MAX_EXPERTS];
  for (int e = threadIdx.x; e < experts; e += blockDim.x) c[e] = 0;
  __syncthreads();
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int64_t first = (int64_t)blockIdx.x * kTokensPerBlock;
  for (int i = warp; i < kTokensPerBlock && first + i < tokens; i += kRouteWarps) {
    const int64_t t = first + i;
    route_token(logits + t * experts, experts, k, scaling, lane, [&](int j, int e, float w) {
      const int64_t slot = t * k + j;
      weights[slot] = w;
      ids[slot] = e;
      atomicAdd(&c[e], 1);
    });
  }
  __syncthreads();
  for (int e = threadIdx.x; e < experts; e += blockDim.x) {
    counts[(int64_t)blockIdx.x * experts + e] = c[e];
  }
}

// Thread (seg, e) owns expert e over a contiguous range of blocks: it sums its counts, the
// segments' sums are scanned per expert and the totals over experts, then it rewrites each of
// its blocks' counts as that block's first sorted row for expert e.
__global__ void scan_counts(int32_t* __restrict__ counts, int64_t blocks, int experts,
                            int32_t* __restrict__ group_ends) {
  llmprof_k::begin_after_previous_grid();
  __shared__ int seg_sum[kScanThreads];
  __shared__ int starts[LLMPROF_K_MOE_MAX_EXPERTS];
  const int segs = kScanThreads / experts;
  const int e = threadIdx.x % experts, seg = threadIdx.x / experts;
  const int64_t per = (blocks + segs - 1) / segs;
  const int64_t lo = seg < segs ? min(blocks, seg * per) : blocks;
  const int64_t hi = min(blocks, lo + per);
  int sum = 0;
  for (int64_t b = lo; b < hi; ++b) sum += counts[b * experts + e];
  if (seg < segs) seg_sum[seg * experts + e] = sum;
  __syncthreads();
  if (threadIdx.x < experts) {  // per expert: exclusive scan over segments, total in starts
    int run = 0;
    for (int s = 0; s < segs; ++s) {
      const int v = seg_sum[s * experts + threadIdx.x];
      seg_sum[s * experts + threadIdx.x] = run;
      run += v;
    }
    starts[threadIdx.x] = run;
  }
  __syncthreads();
  if (threadIdx.x == 0) {  // over experts: exclusive scan of the totals
    int run = 0;
    for (int x = 0; x < experts; ++x) {
      const int total = starts[x];
      starts[x] = run;
      run += total;
      group_ends[x] = run;
    }
  }
  __syncthreads();
  if (seg < segs) {
    int off = starts[e] + seg_sum[seg * experts + e];
    for (int64_t b = lo; b < hi; ++b) {
      const int cnt = counts[b * experts + e];
      counts[b * experts + e] = off;
      off += cnt;
    }
  }
}

__global__ void place_slots(const int64_t* __restrict__ ids, int64_t tokens, int experts, int k,
                            const int32_t* __restrict__ first_row, int64_t* __restrict__ order,
                            int64_t* __restrict__ slot_token, int64_t* __restrict__ slot_pos) {
  llmprof_k::begin_after_previous_grid();
  __shared__ int next[LLMPROF_K_MOE_MAX_EXPERTS];
  const int lane = threadIdx.x;
  for (int e = lane; e < experts; e += 32) next[e] = first_row[(int64_t)blockIdx.x * experts + e];
  __syncwarp();
  const int64_t begin = (int64_t)blockIdx.x * kTokensPerBlock * k;
  const int64_t end = min(begin + (int64_t)kTokensPerBlock * k, tokens * k);
  for (int64_t base = begin; base < end; base += 32) {
    const int64_t s = base + lane;
    const int e = s < end ? (int)ids[s] : -1;
    const unsigned same = __match_any_sync(0xffffffffu, e);
    const int rank = __popc(same & ((1u << lane) - 1u));
    const int pos = e >= 0 ? next[e] + rank : 0;
    __syncwarp();
    if (e >= 0 && rank == 0) next[e] += __popc(same);
    __syncwarp();
    if (e >= 0) {
      order[pos] = s;
      slot_token[pos] = s / k;
      slot_pos[s] = pos;
    }
  }
}

int64_t blocks_for(int64_t tokens) { return (tokens + kTokensPerBlock - 1) / kTokensPerBlock; }

}  // namespace

extern "C" int64_t llmprof_k_moe_route_scratch(int64_t tokens, int experts) {
  return blocks_for(tokens) * experts;
}

extern "C" int llmprof_k_moe_route_many(const float* logits, int64_t tokens, int experts, int k,
                                        float scaling, float* weights, int64_t* ids,
                                        int64_t* order, int64_t* slot_token, int64_t* slot_pos,
                                        int32_t* group_ends, int32_t* scratch, void* stream) {
  const int64_t blocks = blocks_for(tokens);
  if (experts < 1 || experts > LLMPROF_K_MOE_MAX_EXPERTS || k < 1 || k > experts || tokens < 1 ||
      blocks > 0x7fffffff || tokens * k > 0x7fffffff) {
    return (int)cudaErrorInvalidValue;
  }
  auto st = static_cast<cudaStream_t>(stream);
  cudaError_t e = llmprof_k::launch(route_blocks, (unsigned)blocks, 32 * kRouteWarps, 0, st,
                                    logits, tokens, experts, k, scaling, weights, ids, scratch);
  if (e == cudaSuccess) {
    e = llmprof_k::launch(scan_counts, 1, kScanThreads, 0, st, scratch, blocks, experts,
                          group_ends);
  }
  if (e == cudaSuccess) {
    e = llmprof_k::launch(place_slots, (unsigned)blocks, 32, 0, st, ids, tokens, experts, k,
                          scratch, order, slot_token, slot_pos);
  }
  return (int)e;
}
