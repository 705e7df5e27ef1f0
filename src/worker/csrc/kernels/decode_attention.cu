// Decode attention over the written KV slots only, split over the slots (launch.h): one query
// token per row, keys and values read from the static cache between the row's left padding and
// the slot written this step (both read on the device, so a captured graph stays valid as the
// sequence grows). It replaces SDPA over a whole KV window with a mask (docs/performance.md,
// "Round 2, session 8"). Softmax in fp32 with the running-max rescaling of flash attention; the
// probabilities stay fp32 in the value sum.
#include "dtype.cuh"
#include "launch.h"

#include <cuda_runtime.h>
#include <math.h>

namespace {

using llmprof_k::from_f;
using llmprof_k::to_f;

constexpr int kWarps = 4;

// Block (row·head, split): its warps take the split's slots in turn; each lane holds HD/32
// channels of q, of the running output and of each key and value row it reads.
template <typename T, int HD>
__global__ void attn_partial(const T* __restrict__ q, const T* __restrict__ k,
                             const T* __restrict__ v, const int64_t* __restrict__ pad,
                             const int64_t* __restrict__ len_p, float* __restrict__ part_o,
                             float* __restrict__ part_ml, llmprof_k_decode_attn_shape s) {
  constexpr int kPer = HD / 32;
  __shared__ float sm_m[kWarps], sm_l[kWarps];
  __shared__ float sm_o[kWarps][HD];
  const int bh = blockIdx.x, split = blockIdx.y, splits = gridDim.y;
  const int b = bh / s.heads, h = bh % s.heads;
  const int kvh = h / (s.heads / s.kv_heads);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int64_t last = *len_p;  // inclusive: the slot this step wrote
  const int64_t start = max(pad[b], (int64_t)split * s.chunk);
  const int64_t end = min(last + 1, (int64_t)(split + 1) * s.chunk);
  float qv[kPer], acc[kPer];
  const T* qr = q + (int64_t)bh * HD + lane * kPer;
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    qv[i] = to_f(qr[i]);
    acc[i] = 0.f;
  }
  float m = -INFINITY, l = 0.f;
  const int64_t base = ((int64_t)b * s.kv_heads + kvh) * s.slots * HD + lane * kPer;
  for (int64_t j = start + warp; j < end; j += kWarps) {
    const T* kr = k + base + j * HD;
    const T* vr = v + base + j * HD;
    float kv[kPer], vv[kPer];
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      kv[i] = to_f(kr[i]);
      vv[i] = to_f(vr[i]);
    }
    float d = 0.f;
#pragma unroll
    for (int i = 0; i < kPer; ++i) d = fmaf(qv[i], kv[i], d);
    for (int o = 16; o > 0; o /= 2) d += __shfl_xor_sync(0xffffffffu, d, o);
    const float sc = d * s.scale;
    const float m_new = fmaxf(m, sc);
    const float corr = expf(m - m_new);  // m = −∞ on the first slot: 0
    const float p = expf(sc - m_new);
    l = l * corr + p;
#pragma unroll
    for (int i = 0; i < kPer; ++i) acc[i] = fmaf(p, vv[i], acc[i] * corr);
    m = m_new;
  }
  if (lane == 0) {
    sm_m[warp] = m;
    sm_l[warp] = l;
  }
#pragma unroll
  for (int i = 0; i < kPer; ++i) sm_o[warp][lane * kPer + i] = acc[i];
  __syncthreads();
  // Merge the warps: thread c < HD owns channel c.
  float mx = -INFINITY;
  for (int w = 0; w < kWarps; ++w) mx = fmaxf(mx, sm_m[w]);
  const int64_t slot = (int64_t)bh * splits + split;
  for (int c = threadIdx.x; c < HD; c += blockDim.x) {
    float o = 0.f;
    for (int w = 0; w < kWarps; ++w) {
      if (sm_m[w] != -INFINITY) o += sm_o[w][c] * expf(sm_m[w] - mx);
    }
    part_o[slot * HD + c] = o;
  }
  if (threadIdx.x == 0) {
    float sum = 0.f;
    for (int w = 0; w < kWarps; ++w) {
      if (sm_m[w] != -INFINITY) sum += sm_l[w] * expf(sm_m[w] - mx);
    }
    part_ml[slot * 2] = mx;
    part_ml[slot * 2 + 1] = sum;
  }
}

// Block per row·head, thread per channel: the splits' partial sums rescaled to one maximum.
template <typename T, int HD>
__global__ void attn_combine(const float* __restrict__ part_o, const float* __restrict__ part_ml,
                             int splits, T* __restrict__ out) {
  const int bh = blockIdx.x;
  const float* ml = part_ml + (int64_t)bh * splits * 2;
  float mx = -INFINITY;
  for (int sp = 0; sp < splits; ++sp) mx = fmaxf(mx, ml[sp * 2]);
  for (int c = threadIdx.x; c < HD; c += blockDim.x) {
    float o = 0.f, l = 0.f;
    for (int sp = 0; sp < splits; ++sp) {
      const float m = ml[sp * 2];
      if (m == -INFINITY) continue;
      const float w = expf(m - mx);
      o += part_o[((int64_t)bh * splits + sp) * HD + c] * w;
      l += ml[sp * 2 + 1] * w;
    }
    out[(int64_t)bh * HD + c] = from_f<T>(o / l);
  }
}

template <typename T, int HD>
int launch_hd(const void* q, const void* k, const void* v, const int64_t* pad,
              const int64_t* len, float* part_o, float* part_ml, void* out,
              const llmprof_k_decode_attn_shape& s, cudaStream_t stream) {
  const int bh = s.batch * s.heads;
  const dim3 grid((unsigned)bh, (unsigned)s.splits);
  attn_partial<T, HD><<<grid, kWarps * 32, 0, stream>>>(
      static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(v), pad, len,
      part_o, part_ml, s);
  attn_combine<T, HD><<<(unsigned)bh, HD, 0, stream>>>(part_o, part_ml, s.splits,
                                                      static_cast<T*>(out));
  return (int)cudaGetLastError();
}

template <typename T>
int launch_attn(const void* q, const void* k, const void* v, const int64_t* pad,
                const int64_t* len, float* part_o, float* part_ml, void* out,
                const llmprof_k_decode_attn_shape& s, cudaStream_t stream) {
  switch (s.head_dim) {
    case 64: return launch_hd<T, 64>(q, k, v, pad, len, part_o, part_ml, out, s, stream);
    case 128: return launch_hd<T, 128>(q, k, v, pad, len, part_o, part_ml, out, s, stream);
    default: return (int)cudaErrorInvalidValue;
  }
}

}  // namespace

extern "C" int llmprof_k_decode_attention(int dtype, const void* q, const void* k, const void* v,
                                          const int64_t* pad, const int64_t* len, float* part_o,
                                          float* part_ml, void* out,
                                          llmprof_k_decode_attn_shape shape, void* stream) {
  if (shape.batch < 1 || shape.heads < 1 || shape.kv_heads < 1 ||
      shape.heads % shape.kv_heads != 0 || shape.chunk < 1 || shape.splits < 1 ||
      shape.splits > LLMPROF_K_MAX_GRID_Y) {
    return (int)cudaErrorInvalidValue;
  }
  auto st = static_cast<cudaStream_t>(stream);
  LLMPROF_K_DISPATCH(dtype, launch_attn, q, k, v, pad, len, part_o, part_ml, out, shape, st)
}
