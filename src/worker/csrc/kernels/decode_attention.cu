// Decode attention over the written KV slots only, split over the slots (launch.h): one query
// token per row, keys and values read from the static cache between the row's left padding and
// the slot written this step (both read on the device, so a captured graph stays valid as the
// sequence grows). It replaces SDPA over a whole KV window with a mask
// (reports/performance-history.md, "Round 2, session 8"). Softmax in fp32: each split's maximum and
// denominator, rescaled to the row's maximum when the splits are combined; the probabilities stay
// fp32 in the value sum.
#include "decode_attention_mma.cuh"
#include "dtype.cuh"
#include "launch.h"
#include "pdl.cuh"

#include <cuda_runtime.h>
#include <math.h>

namespace {

using llmprof_k::from_f;
using llmprof_k::to_f;

constexpr int kThreads = 128;
constexpr int kChunk = LLMPROF_K_DECODE_ATTN_CHUNK;

// The split's partial sums: unnormalised output [HD] and (maximum, denominator), to part_o and
// part_ml. Scores: kKLanes lanes per key row with kKVec 16-byte loads each; values: kVLanes lanes
// per value row with one 16-byte load each. All loads of a phase are issued before their use.
template <typename T, int HD>
__device__ __forceinline__ void split_partial(const T* __restrict__ q, const T* __restrict__ k,
                                              const T* __restrict__ v, int64_t start, int64_t end,
                                              int64_t c0, int bh, int b, int kvh, int64_t slot,
                                              float* __restrict__ part_o,
                                              float* __restrict__ part_ml,
                                              const llmprof_k_decode_attn_shape& s) {
  constexpr int kKLanes = 8;
  constexpr int kKE = HD / kKLanes;
  constexpr int kKVec = kKE * (int)sizeof(T) / 16;
  constexpr int kKRows = kThreads / kKLanes;
  constexpr int kKPasses = kChunk / kKRows;
  constexpr int kVE = 16 / (int)sizeof(T);
  constexpr int kVLanes = HD / kVE;
  constexpr int kVRows = kThreads / kVLanes;
  constexpr int kVPasses = kChunk / kVRows;
  static_assert(kKVec >= 1 && kKLanes * kKE == HD && kChunk % kKRows == 0, "key layout");
  static_assert(kVLanes <= 32 && kChunk % kVRows == 0, "value layout");
  __shared__ float sc[kChunk];
  __shared__ float red[kVRows * HD];
  const int64_t base = ((int64_t)b * s.kv_heads + kvh) * s.slots * HD;

  const int g = threadIdx.x / kKLanes, gl = threadIdx.x % kKLanes;
  float qv[kKE];
  {
    uint4 raw[kKVec];
    const uint4* src = reinterpret_cast<const uint4*>(q + (int64_t)bh * HD + gl * kKE);
#pragma unroll
    for (int i = 0; i < kKVec; ++i) raw[i] = src[i];
    const T* e = reinterpret_cast<const T*>(raw);
#pragma unroll
    for (int i = 0; i < kKE; ++i) qv[i] = to_f(e[i]);
  }
  uint4 kr[kKPasses][kKVec];
#pragma unroll
  for (int p = 0; p < kKPasses; ++p) {
    const int64_t j = c0 + p * kKRows + g;
    const uint4* src = reinterpret_cast<const uint4*>(k + base + j * HD + gl * kKE);
#pragma unroll
    for (int i = 0; i < kKVec; ++i) kr[p][i] = (j >= start && j < end) ? src[i] : make_uint4(0, 0, 0, 0);
  }
#pragma unroll
  for (int p = 0; p < kKPasses; ++p) {
    const T* e = reinterpret_cast<const T*>(kr[p]);
    float d = 0.f;
#pragma unroll
    for (int i = 0; i < kKE; ++i) d = fmaf(qv[i], to_f(e[i]), d);
#pragma unroll
    for (int o = kKLanes / 2; o > 0; o /= 2) d += __shfl_xor_sync(0xffffffffu, d, o);
    const int64_t j = c0 + p * kKRows + g;
    if (gl == 0) sc[p * kKRows + g] = (j >= start && j < end) ? d * s.scale : -INFINITY;
  }
  __syncthreads();

  // The split's maximum and denominator, in every warp (kChunk = 64: two scores per lane).
  const int lane = threadIdx.x % 32;
  const float s0 = sc[lane], s1 = sc[lane + 32];
  float m = fmaxf(s0, s1);
#pragma unroll
  for (int o = 16; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  float l = expf(s0 - m) + expf(s1 - m);  // m is finite: the split has a visible slot
#pragma unroll
  for (int o = 16; o > 0; o /= 2) l += __shfl_xor_sync(0xffffffffu, l, o);

  const int vr = threadIdx.x / kVLanes, vl = threadIdx.x % kVLanes;
  uint4 vv[kVPasses];
#pragma unroll
  for (int p = 0; p < kVPasses; ++p) {
    const int64_t j = c0 + p * kVRows + vr;
    vv[p] = (j >= start && j < end)
                ? *reinterpret_cast<const uint4*>(v + base + j * HD + vl * kVE)
                : make_uint4(0, 0, 0, 0);
  }
  float acc[kVE];
#pragma unroll
  for (int i = 0; i < kVE; ++i) acc[i] = 0.f;
#pragma unroll
  for (int p = 0; p < kVPasses; ++p) {
    const float pr = expf(sc[p * kVRows + vr] - m);  // 0 outside the visible slots
    const T* e = reinterpret_cast<const T*>(&vv[p]);
#pragma unroll
    for (int i = 0; i < kVE; ++i) acc[i] = fmaf(pr, to_f(e[i]), acc[i]);
  }
#pragma unroll
  for (int i = 0; i < kVE; ++i) red[vr * HD + vl * kVE + i] = acc[i];
  __syncthreads();
  for (int c = threadIdx.x; c < HD; c += kThreads) {
    float o = 0.f;
#pragma unroll
    for (int r = 0; r < kVRows; ++r) o += red[r * HD + c];
    part_o[slot * HD + c] = o;
  }
  if (threadIdx.x == 0) {
    part_ml[slot * 2] = m;
    part_ml[slot * 2 + 1] = l;
  }
}

// Block per row·head: each split's partial sums rescaled to the row's maximum, normalised,
// rounded once. Every split's (maximum, denominator) read at once, with each thread's first
// kEarlySplits partial outputs of its channel (they do not depend on the weights: one round
// trip after the wait instead of two; round 3 session 36); the weights exp(m − max) then kept in
// shared memory (dynamic: `splits` floats); further splits' partial outputs eight in flight per
// thread. A split with no visible slot (maximum −∞) wrote no partial output: its part_o is
// whatever the scratch held, possibly NaN, so it is skipped (weight 0 marks it), never multiplied
// by a zero weight.
constexpr int kEarlySplits = 16;
template <typename T, int HD>
__global__ void __launch_bounds__(kThreads)
    attn_combine(const float* __restrict__ part_o, const float* __restrict__ part_ml, int splits,
                 T* __restrict__ out) {
  llmprof_k::begin_after_previous_grid();
  extern __shared__ float weight[];  // [splits]
  __shared__ float red[kThreads / 32];
  const int bh = blockIdx.x;
  const float2* ml = reinterpret_cast<const float2*>(part_ml + (int64_t)bh * splits * 2);
  const float* po = part_o + (int64_t)bh * splits * HD;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  float early[kEarlySplits];  // this thread's first channel's first splits
  if (threadIdx.x < HD) {
#pragma unroll
    for (int i = 0; i < kEarlySplits; ++i) {
      if (i < splits) early[i] = po[(int64_t)i * HD + threadIdx.x];
    }
  }
  // The row's maximum: each thread's splits into shared memory, then across the block.
  float mx = -INFINITY;
  for (int sp = threadIdx.x; sp < splits; sp += kThreads) {
    const float m = ml[sp].x;
    weight[sp] = m;
    mx = fmaxf(mx, m);
  }
#pragma unroll
  for (int o = 16; o > 0; o /= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
  if (lane == 0) red[warp] = mx;
  __syncthreads();
  mx = red[0];
#pragma unroll
  for (int w = 1; w < kThreads / 32; ++w) mx = fmaxf(mx, red[w]);
  __syncthreads();  // red is reused for the denominator
  // The weights and the denominator (each thread rewrites its own splits: no barrier needed
  // between the two loops).
  float l = 0.f;
  for (int sp = threadIdx.x; sp < splits; sp += kThreads) {
    const float m = weight[sp];
    const float w = m == -INFINITY ? 0.f : expf(m - mx);
    weight[sp] = w;
    if (w != 0.f) l = fmaf(ml[sp].y, w, l);
  }
#pragma unroll
  for (int o = 16; o > 0; o /= 2) l += __shfl_xor_sync(0xffffffffu, l, o);
  if (lane == 0) red[warp] = l;
  __syncthreads();
  l = 0.f;
#pragma unroll
  for (int w = 0; w < kThreads / 32; ++w) l += red[w];
  // Thread c < HD owns channel c.
  for (int c = threadIdx.x; c < HD; c += kThreads) {
    float o = 0.f;
    int sp = 0;
    if (c == threadIdx.x) {  // the splits read early, in the same order
#pragma unroll
      for (int i = 0; i < kEarlySplits; ++i) {
        if (i >= splits) break;
        const float w = weight[i];
        if (w != 0.f) o = fmaf(early[i], w, o);
      }
      sp = min(splits, kEarlySplits);
    }
    for (; sp + 8 <= splits; sp += 8) {
      float o8[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) o8[i] = po[(int64_t)(sp + i) * HD + c];
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const float w = weight[sp + i];
        if (w != 0.f) o = fmaf(o8[i], w, o);
      }
    }
    for (; sp < splits; ++sp) {
      const float w = weight[sp];
      if (w != 0.f) o = fmaf(po[(int64_t)sp * HD + c], w, o);
    }
    out[(int64_t)bh * HD + c] = from_f<T>(o / l);
  }
}

// Block (row·head, split) over the split's kChunk slots: its partial sums (split_partial). The
// first version walked the slots one at a time per warp and was latency-bound.
template <typename T, int HD>
__global__ void __launch_bounds__(kThreads)
    attn_split(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
               const int64_t* __restrict__ pad, const int64_t* __restrict__ len_p,
               float* __restrict__ part_o, float* __restrict__ part_ml,
               llmprof_k_decode_attn_shape s) {
  llmprof_k::begin_after_previous_grid();
  const int bh = blockIdx.x, split = blockIdx.y, splits = gridDim.y;
  const int b = bh / s.heads, h = bh % s.heads;
  const int kvh = h / (s.heads / s.kv_heads);
  const int64_t slot = (int64_t)bh * splits + split;
  const int64_t last = *len_p;  // inclusive: the slot this step wrote
  const int64_t c0 = (int64_t)split * kChunk;
  const int64_t start = max(pad[b], c0);
  const int64_t end = min(last + 1, c0 + kChunk);
  if (start < end) {  // block-uniform
    split_partial<T, HD>(q, k, v, start, end, c0, bh, b, kvh, slot, part_o, part_ml, s);
  } else if (threadIdx.x == 0) {
    part_ml[slot * 2] = -INFINITY;
    part_ml[slot * 2 + 1] = 0.f;
  }
}

template <typename T, int HD>
int launch_combine(const float* part_o, const float* part_ml, int splits, void* out, int bh,
                   cudaStream_t stream) {
  return (int)llmprof_k::launch(attn_combine<T, HD>, (unsigned)bh, kThreads,
                                splits * sizeof(float), stream, part_o, part_ml, splits,
                                static_cast<T*>(out));
}

template <typename T, int HD>
int launch_hd(const void* q, const void* k, const void* v, const int64_t* pad,
              const int64_t* len, float* part_o, float* part_ml, void* out,
              const llmprof_k_decode_attn_shape& s, cudaStream_t stream) {
  const int bh = s.batch * s.heads;
  if constexpr (sizeof(T) == 2) {
    if (s.tensor_cores && s.heads / s.kv_heads <= llmprof_k::kDecodeAttnMmaMaxGroup) {
      const auto plan = llmprof_k::decode_attn_mma_plan(s);
      const int err = llmprof_k::decode_attn_split_mma<T>(
          static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(v), pad, len,
          part_o, part_ml, s, plan, stream);
      if (err != 0) return err;
      return launch_combine<T, HD>(part_o, part_ml, plan.used, out, bh, stream);
    }
  }
  const dim3 grid((unsigned)bh, (unsigned)s.splits);
  const cudaError_t e = llmprof_k::launch(
      attn_split<T, HD>, grid, kThreads, 0, stream, static_cast<const T*>(q),
      static_cast<const T*>(k), static_cast<const T*>(v), pad, len, part_o, part_ml, s);
  if (e != cudaSuccess) return (int)e;
  return launch_combine<T, HD>(part_o, part_ml, s.splits, out, bh, stream);
}

template <typename T>
int launch_attn(const void* q, const void* k, const void* v, const int64_t* pad,
                const int64_t* len, float* part_o, float* part_ml, void* out,
                const llmprof_k_decode_attn_shape& s, cudaStream_t stream) {
  switch (s.head_dim) {
    case 64:
      return launch_hd<T, 64>(q, k, v, pad, len, part_o, part_ml, out, s, stream);
    case 128:
      return launch_hd<T, 128>(q, k, v, pad, len, part_o, part_ml, out, s, stream);
    default: return (int)cudaErrorInvalidValue;
  }
}

}  // namespace

extern "C" int llmprof_k_decode_attention(int dtype, const void* q, const void* k, const void* v,
                                          const int64_t* pad, const int64_t* len, float* part_o,
                                          float* part_ml, void* out,
                                          llmprof_k_decode_attn_shape shape, void* stream) {
  if (shape.batch < 1 || shape.heads < 1 || shape.kv_heads < 1 ||
      shape.heads % shape.kv_heads != 0 || shape.chunk != kChunk || shape.splits < 1 ||
      shape.splits > LLMPROF_K_DECODE_ATTN_MAX_SPLITS) {
    return (int)cudaErrorInvalidValue;
  }
  auto st = static_cast<cudaStream_t>(stream);
  LLMPROF_K_DISPATCH(dtype, launch_attn, q, k, v, pad, len, part_o, part_ml, out, shape, st)
}
