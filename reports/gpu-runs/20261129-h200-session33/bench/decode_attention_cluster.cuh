// The end of decode attention's tensor-core split pass in its cluster form
// (decode_attention_mma.cu): the blocks of one (row, kv head) are one thread-block cluster, each
// has left its partial per query head in its shared memory, and together they write the
// attention output, each block a share of the group's outputs read from every block's shared
// memory (distributed shared memory, compute capability 9.0+). It replaces the partials' round
// trip through global memory and the combine kernel after the pass.
#ifndef LLMPROF_KERNELS_DECODE_ATTENTION_CLUSTER_CUH
#define LLMPROF_KERNELS_DECODE_ATTENTION_CLUSTER_CUH

#include "decode_attention_mma.cuh"
#include "dtype.cuh"

#include <cooperative_groups.h>
#include <math.h>

namespace llmprof_k {

// `bo` [group][HD]: this block's unnormalised output; `bml` [group]: (maximum in log2 units,
// denominator), maximum −∞ where the block saw no slot (then its output is 0). Every thread of
// every block of the cluster calls it. Writes out[(head0 + g) · HD + c] for the group's heads.
template <typename T, int HD>
__device__ __forceinline__ void cluster_combine(float* bo, float2* bml, int group, int64_t head0,
                                                T* __restrict__ out) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();  // every block's partial written, visible to the cluster
  const int n = (int)cluster.num_blocks(), rank = (int)cluster.block_rank();
  const int total = group * HD, per = (total + n - 1) / n;
  const int i1 = min(total, (rank + 1) * per);
  for (int i = rank * per + (int)threadIdx.x; i < i1; i += (int)blockDim.x) {
    const int g = i / HD;
    float2 ml[kMaxCluster];
    float po[kMaxCluster];
    float mx = -INFINITY;
#pragma unroll
    for (int r = 0; r < kMaxCluster; ++r) {
      if (r < n) {
        ml[r] = *cluster.map_shared_rank(bml + g, r);
        po[r] = *cluster.map_shared_rank(bo + i, r);
        mx = fmaxf(mx, ml[r].x);
      }
    }
    float o = 0.f, l = 0.f;
#pragma unroll
    for (int r = 0; r < kMaxCluster; ++r) {
      if (r < n) {
        const float w = ml[r].x == -INFINITY ? 0.f : exp2f(ml[r].x - mx);
        l = fmaf(ml[r].y, w, l);
        o = fmaf(po[r], w, o);
      }
    }
    out[(head0 + g) * HD + i % HD] = from_f<T>(o / l);
  }
  cluster.sync();  // no block leaves while another still reads its shared memory
#endif
}

}  // namespace llmprof_k

#endif  // LLMPROF_KERNELS_DECODE_ATTENTION_CLUSTER_CUH
