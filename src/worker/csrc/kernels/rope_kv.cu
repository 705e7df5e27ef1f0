// RoPE and the KV-cache write of a fused qkv projection in one kernel (launch.h), for a decode
// step's one token per row or a prefill's T tokens. It replaces per layer the RoPE ops on q and k
// (mul, neg, two copies for the rotate-half concatenation, addcmul), the two writes into the
// cache and the copies libtorch makes of their strided sources (reports/performance-history.md,
// "Round 2, session 8" and "session 11"). It rounds where those ops round: x·cos is stored in the
// element type first, then the second term is added as libtorch's addcmul does (one fused
// multiply-add) or as a separate rounded product and add (the unfused formula).
#include "dtype.cuh"
#include "launch.h"
#include "pdl.cuh"

#include <cuda_runtime.h>

namespace {

using llmprof_k::aligned16;
using llmprof_k::from_f;
using llmprof_k::round_to;
using llmprof_k::to_f;

// Where head hh (of q, k and v in the qkv row) of row `row` (b · tokens + token) goes: q heads to
// q_out [batch, tokens, heads, head_dim] (token-major, so attention's output comes back in the
// layout o_proj reads), k and v heads to the cache slot `*slot_p` + token;
// nullptr for a cache slot out of range (the caller checks; never write out).
template <typename T>
__device__ __forceinline__ T* rope_kv_dst(const llmprof_k_rope_kv_shape& s, int hh, int64_t row,
                                          const int64_t* slot_p, T* q_out, T* k_cache,
                                          T* v_cache) {
  const int64_t b = row / s.tokens, token = row % s.tokens;
  if (hh < s.heads) return q_out + (row * s.heads + hh) * s.head_dim;
  const int64_t slot = *slot_p + token;
  if (slot < 0 || slot >= s.slots) return nullptr;
  const int kv = hh < s.heads + s.kv_heads ? hh - s.heads : hh - s.heads - s.kv_heads;
  T* cache = hh < s.heads + s.kv_heads ? k_cache : v_cache;
  return cache + ((b * s.kv_heads + kv) * s.slots + slot) * s.head_dim;
}

// One rotated element: x·cos stored in T, then + rot·sin as one FMA (addcmul) or as a rounded
// product and an add.
template <typename T>
__device__ __forceinline__ T rope_element(float x, float rot, float c, float sn, bool fused_add) {
  const float xc = round_to<T>(__fmul_rn(x, c));
  return from_f<T>(fused_add ? __fmaf_rn(rot, sn, xc)
                             : __fadd_rn(xc, round_to<T>(__fmul_rn(rot, sn))));
}

// One block per (head of q, k and v in the qkv row, token of a batch row); threads over the head's
// channels. k heads are rotated like q heads, v heads copied.
template <typename T>
__global__ void rope_kv(const T* __restrict__ qkv, const T* __restrict__ cos,
                        const T* __restrict__ sin, const int64_t* __restrict__ slot_p,
                        T* __restrict__ q_out, T* __restrict__ k_cache, T* __restrict__ v_cache,
                        llmprof_k_rope_kv_shape s) {
  llmprof_k::begin_after_previous_grid();
  const int hh = blockIdx.x;
  const int64_t row = blockIdx.y;  // b · tokens + token
  const int hd = s.head_dim;
  const int64_t width = (int64_t)(s.heads + 2 * s.kv_heads) * hd;
  const T* x = qkv + row * width + (int64_t)hh * hd;
  T* dst = rope_kv_dst(s, hh, row, slot_p, q_out, k_cache, v_cache);
  if (dst == nullptr) return;
  if (hh >= s.heads + s.kv_heads) {  // v: copied
    for (int i = threadIdx.x; i < hd; i += blockDim.x) dst[i] = x[i];
    return;
  }
  const T* c = cos + row * hd;
  const T* sn = sin + row * hd;
  const int half = hd / 2;
  for (int i = threadIdx.x; i < hd; i += blockDim.x) {
    const float rot = i < half ? -to_f(x[i + half]) : to_f(x[i - half]);
    dst[i] = rope_element<T>(to_f(x[i]), rot, to_f(c[i]), to_f(sn[i]), s.fused_add);
  }
}

// The same with 16-byte vectors (V elements): thread x of a block moves channels [x·V, x·V + V) of
// one head (blockDim.x = head_dim / V), the block's y threads take consecutive tokens, so a
// prefill moves whole vectors instead of one element per thread (0.155 ms per layer at batch-8
// prefill on the H100 with the element kernel). Needs head_dim / 2 a multiple of V and 16-byte
// aligned pointers: a vector never straddles the rotate-half boundary.
template <typename T, int V>
__global__ void rope_kv_vec(const T* __restrict__ qkv, const T* __restrict__ cos,
                            const T* __restrict__ sin, const int64_t* __restrict__ slot_p,
                            T* __restrict__ q_out, T* __restrict__ k_cache,
                            T* __restrict__ v_cache, llmprof_k_rope_kv_shape s) {
  llmprof_k::begin_after_previous_grid();
  using Vt = llmprof_k::Vec<T, V>;
  const int hh = blockIdx.x;
  const int64_t row = (int64_t)blockIdx.y * blockDim.y + threadIdx.y;  // b · tokens + token
  if (row >= (int64_t)s.batch * s.tokens) return;
  const int hd = s.head_dim;
  const int64_t width = (int64_t)(s.heads + 2 * s.kv_heads) * hd;
  const T* x = qkv + row * width + (int64_t)hh * hd;
  T* dst = rope_kv_dst(s, hh, row, slot_p, q_out, k_cache, v_cache);
  if (dst == nullptr) return;
  const int i0 = threadIdx.x * V;
  const Vt xv = *reinterpret_cast<const Vt*>(x + i0);
  if (hh >= s.heads + s.kv_heads) {  // v: copied
    *reinterpret_cast<Vt*>(dst + i0) = xv;
    return;
  }
  const int half = hd / 2;
  const bool low = i0 < half;  // the whole vector lies on one side of the boundary
  const Vt pv = *reinterpret_cast<const Vt*>(x + (low ? i0 + half : i0 - half));
  const Vt cv = *reinterpret_cast<const Vt*>(cos + row * hd + i0);
  const Vt sv = *reinterpret_cast<const Vt*>(sin + row * hd + i0);
  Vt o;
#pragma unroll
  for (int c = 0; c < V; ++c) {
    const float rot = low ? -to_f(pv.e[c]) : to_f(pv.e[c]);
    o.e[c] = rope_element<T>(to_f(xv.e[c]), rot, to_f(cv.e[c]), to_f(sv.e[c]), s.fused_add);
  }
  *reinterpret_cast<Vt*>(dst + i0) = o;
}

constexpr int64_t kVectorMinRows = 64;

template <typename T>
int launch_rope_kv(const void* qkv, const void* cos, const void* sin, const int64_t* slot,
                   void* q, void* k_cache, void* v_cache, const llmprof_k_rope_kv_shape& s,
                   cudaStream_t stream) {
  constexpr int V = 16 / sizeof(T);
  const unsigned heads = (unsigned)(s.heads + 2 * s.kv_heads);
  const int64_t rows = (int64_t)s.batch * s.tokens;
  const bool vec16 = (s.head_dim / 2) % V == 0 && aligned16(qkv) && aligned16(cos) &&
                     aligned16(sin) && aligned16(q) && aligned16(k_cache) && aligned16(v_cache);
  // Vectors for a prefill's many tokens; a decode step's few rows keep the element kernel (2.1 vs
  // 1.9 µs per call at batch 1 on the H100: one 16-lane row per block leaves most lanes idle).
  if (vec16 && rows >= kVectorMinRows && s.head_dim / V <= 128) {
    const int per_head = s.head_dim / V;
    const int rows_per_block = per_head >= 128 ? 1 : 128 / per_head;
    const dim3 block((unsigned)per_head, (unsigned)rows_per_block);
    const dim3 grid(heads, (unsigned)((rows + rows_per_block - 1) / rows_per_block));
    return (int)llmprof_k::launch(
        rope_kv_vec<T, V>, grid, block, 0, stream, static_cast<const T*>(qkv),
        static_cast<const T*>(cos), static_cast<const T*>(sin), slot, static_cast<T*>(q),
        static_cast<T*>(k_cache), static_cast<T*>(v_cache), s);
  }
  const dim3 grid(heads, (unsigned)rows);
  const int threads = s.head_dim < 128 ? s.head_dim : 128;
  return (int)llmprof_k::launch(
      rope_kv<T>, grid, threads, 0, stream, static_cast<const T*>(qkv),
      static_cast<const T*>(cos), static_cast<const T*>(sin), slot, static_cast<T*>(q),
      static_cast<T*>(k_cache), static_cast<T*>(v_cache), s);
}

}  // namespace

extern "C" int llmprof_k_rope_kv(int dtype, const void* qkv, const void* cos, const void* sin,
                                 const int64_t* slot, void* q, void* k_cache, void* v_cache,
                                 llmprof_k_rope_kv_shape shape, void* stream) {
  if (shape.batch < 1 || shape.tokens < 1 ||
      (int64_t)shape.batch * shape.tokens > LLMPROF_K_MAX_GRID_Y || shape.heads < 1 ||
      shape.kv_heads < 1 || shape.head_dim < 2 || shape.head_dim % 2 != 0 || shape.slots < 1) {
    return (int)cudaErrorInvalidValue;
  }
  auto st = static_cast<cudaStream_t>(stream);
  LLMPROF_K_DISPATCH(dtype, launch_rope_kv, qkv, cos, sin, slot, q, k_cache, v_cache, shape, st)
}
