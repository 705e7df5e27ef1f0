// Decode attention's split pass on tensor cores (decode_attention_mma.cu), for bf16 and fp16:
// one block per (row, kv head, run of splits) computes the partial sums of all the kv head's query
// heads at once, so each key and value row is read from memory once per kv head, not once per
// query head. Its partials have the layout of the CUDA-core split pass (decode_attention.cu),
// whose combine kernel finishes both.
#ifndef LLMPROF_KERNELS_DECODE_ATTENTION_MMA_CUH
#define LLMPROF_KERNELS_DECODE_ATTENTION_MMA_CUH

#include "launch.h"

#include <cuda_runtime.h>
#include <stdint.h>

namespace llmprof_k {

// The most query heads per kv head the tensor-core pass takes (the 16 rows of an m16n8k16 MMA).
constexpr int kDecodeAttnMmaMaxGroup = 16;

// The splits the tensor-core pass writes for `s`: each of its blocks walks `tiles` consecutive
// splits of s.chunk slots (enough blocks to fill the device a few times over, fewer partials to
// combine); the partials of (row·head) bh are part_o[bh · used + y]. Host-side.
struct DecodeAttnMmaPlan {
  int tiles, used;
};
DecodeAttnMmaPlan decode_attn_mma_plan(const llmprof_k_decode_attn_shape& s);

// The split pass over `plan.used` splits per row·head (T: __nv_bfloat16 or __half; head_dim 64
// or 128; heads / kv_heads ≤ kDecodeAttnMmaMaxGroup). Returns the launch's cudaError_t.
template <typename T>
int decode_attn_split_mma(const T* q, const T* k, const T* v, const int64_t* pad,
                          const int64_t* len, float* part_o, float* part_ml,
                          const llmprof_k_decode_attn_shape& s, DecodeAttnMmaPlan plan,
                          cudaStream_t stream);

}  // namespace llmprof_k

#endif  // LLMPROF_KERNELS_DECODE_ATTENTION_MMA_CUH
