// Decode attention's split pass on tensor cores (decode_attention_mma.cuh). A block of four warps
// takes one (row, kv head) and a run of `tiles` splits of 64 slots; per split, cp.async copies the
// 64 key and value rows to shared memory (double-buffered: the next split's copy is in flight
// while this one is computed), and each warp takes 16 of them:
//   S = Q·Kᵀ   one m16n8k16 MMA per 8 keys and 16 channels, Q's 16 rows the kv head's query heads
//              (rows past the group zero), K's fragments by ldmatrix;
//   online softmax in fp32 per query head (the running maximum and denominator, FlashAttention-2);
//   O += P·V   P rounded to the element type in the registers S came out in, V's fragments by
//              ldmatrix.trans.
// The four warps' sums are merged through shared memory into one partial per query head: the
// unnormalised output and (maximum, denominator), the maximum in natural-log units as the
// CUDA-core pass writes it, so one combine kernel finishes either.
#include "decode_attention_mma.cuh"

#include "device.cuh"
#include "dtype.cuh"
#include "mma.cuh"
#include "pdl.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>

namespace llmprof_k {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kTile = LLMPROF_K_DECODE_ATTN_CHUNK;
static_assert(kTile == kWarps * 16, "each warp takes 16 slots of a split");
// Elements after each shared-memory row: rows then start 16 bytes apart modulo 128, so the eight
// rows one ldmatrix reads fall in distinct banks.
constexpr int kRowPad = 8;
// Blocks of the split pass resident per SM (its launch bounds; the plan sizes waves by them).
constexpr int kResidentBlocks = 3;
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return (uint32_t)__cvta_generic_to_shared(p);
}

// Four 8×8 matrices of 16-bit elements; lane i names row i % 8 of matrix i / 8.
__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldsm_x4_trans(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

// 16 bytes global → shared, or 16 zero bytes (and no read) where `valid` is false.
__device__ __forceinline__ void cp16(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
               "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n"); }
template <int N> __device__ __forceinline__ void cp_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

template <typename T, int HD> struct Tiles {
  static constexpr int kRow = HD + kRowPad;
  static constexpr int kChunks = kTile * HD / 8;  // 16-byte copies per tile
  static constexpr size_t kBytes = 2 * 2 * (size_t)kTile * kRow * sizeof(T);  // K and V, 2 stages
  static __device__ __forceinline__ T* k(T* base, int stage) { return base + stage * 2 * kTile * kRow; }
  static __device__ __forceinline__ T* v(T* base, int stage) { return k(base, stage) + kTile * kRow; }
  // One tile of `src` rows [c0, c0 + kTile) into `dst`; rows outside [start, end) zeroed; with
  // kSkip, row `skip` left alone (copy_row brings it later). Not committed.
  template <bool kSkip = false>
  static __device__ __forceinline__ void copy(T* dst, const T* src, int64_t c0, int64_t start,
                                              int64_t end, int64_t skip = -1) {
#pragma unroll
    for (int i = 0; i < kChunks / kThreads; ++i) {
      const int c = i * kThreads + (int)threadIdx.x;
      const int row = c / (HD / 8), col = (c % (HD / 8)) * 8;
      const int64_t j = c0 + row;
      const bool valid = j >= start && j < end;
      if (!kSkip || j != skip) cp16(dst + row * kRow + col, src + (valid ? j : start) * HD + col, valid);
    }
  }
  // Row j of both K and V into the tile at c0 (stage 0), one 16-byte copy a thread. Not committed.
  static __device__ __forceinline__ void copy_row(T* sm, const T* kb, const T* vb, int64_t c0,
                                                  int64_t j) {
    constexpr int kPerRow = HD / 8;
    const int t = (int)threadIdx.x;
    if (t < 2 * kPerRow) {
      const int col = (t % kPerRow) * 8;
      const bool is_v = t >= kPerRow;
      cp16((is_v ? v(sm, 0) : k(sm, 0)) + (j - c0) * kRow + col, (is_v ? vb : kb) + j * HD + col,
           true);
    }
  }
};

template <typename T, int HD>
__global__ void __launch_bounds__(kThreads, kResidentBlocks)
    attn_split_mma(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                   const int64_t* __restrict__ pad, const int64_t* __restrict__ len_p,
                   float* __restrict__ part_o, float* __restrict__ part_ml,
                   llmprof_k_decode_attn_shape s, int tiles) {
  using Tl = Tiles<T, HD>;
  constexpr int kSteps = HD / 16;  // k-steps of S = Q·Kᵀ
  constexpr int kOut = HD / 8;     // 8-channel tiles of O
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* sm = reinterpret_cast<T*>(smem_raw);

  // Until the wait for the kernel ahead, only what no kernel of this step writes is read: pad,
  // *len (written before the step's first kernel, which ended before this one started: every
  // kernel lets the next start only after its own wait), and the cached rows of earlier steps. The
  // kernel ahead (RoPE + KV write) writes this step's slot and the query.
  const int group = s.heads / s.kv_heads;
  const int b = blockIdx.x / s.kv_heads, kvh = blockIdx.x % s.kv_heads;
  const int used = gridDim.y;
  const int64_t c_begin = (int64_t)blockIdx.y * tiles * kTile;
  const int64_t c_end = c_begin + (int64_t)tiles * kTile;
  const int64_t start = max(__ldcg(pad + b), c_begin);
  // *len: the slot this step wrote; never past the splits the caller sized nor the cache, even
  // for a wrong *len (a run of splits can reach past both).
  const int64_t last = __ldcg(len_p);
  const int64_t end = min(min(last + 1, c_end), min((int64_t)s.splits * kTile, s.slots));
  const int64_t head0 = (int64_t)b * s.heads + (int64_t)kvh * group;  // first query head's row
  if (start >= end) {  // block-uniform: no visible slot in this run of splits
    llmprof_k::begin_after_previous_grid();
    for (int g = threadIdx.x; g < group; g += kThreads) {
      const int64_t slot = (head0 + g) * used + blockIdx.y;
      part_ml[slot * 2] = -INFINITY;
      part_ml[slot * 2 + 1] = 0.f;
    }
    return;
  }
  const int64_t base = ((int64_t)b * s.kv_heads + kvh) * s.slots * HD;
  const T* kb = k + base;
  const T* vb = v + base;

  // The first split's copies go out before the wait but for this step's slot, which follows it;
  // all in one commit group (the loop waits for it whole).
  int64_t c0 = (start / kTile) * kTile;
  // (A *len past the cache leaves `last` outside [start, end): then no row is skipped, and the
  // rows past `end` are zero-filled as everywhere.)
  const int64_t skip = last < end ? last : -1;
  Tl::template copy<true>(Tl::k(sm, 0), kb, c0, start, end, skip);
  Tl::template copy<true>(Tl::v(sm, 0), vb, c0, start, end, skip);
  llmprof_k::begin_after_previous_grid();
  if (last >= start && last < end && last < c0 + kTile) Tl::copy_row(sm, kb, vb, c0, last);
  cp_commit();

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int r0 = lane / 4, r1 = r0 + 8, cc = (lane % 4) * 2;
  // Q as the A operand: rows = the group's query heads, k = channels.
  uint32_t qa[kSteps][4];
  {
    const T* q0 = q + (head0 + r0) * HD + cc;
    const T* q1 = q + (head0 + r1) * HD + cc;
#pragma unroll
    for (int t = 0; t < kSteps; ++t) {
      const auto ld = [](const T* p) { return *reinterpret_cast<const uint32_t*>(p); };
      qa[t][0] = r0 < group ? ld(q0 + t * 16) : 0u;
      qa[t][1] = r1 < group ? ld(q1 + t * 16) : 0u;
      qa[t][2] = r0 < group ? ld(q0 + t * 16 + 8) : 0u;
      qa[t][3] = r1 < group ? ld(q1 + t * 16 + 8) : 0u;
    }
  }
  const float scale = s.scale * kLog2e;  // scores in log2 units: exp2 below
  float o[kOut][4];
#pragma unroll
  for (int n = 0; n < kOut; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};

  for (int stage = 0, first = 1; c0 < end; c0 += kTile, stage ^= 1, first = 0) {
    const bool next = c0 + kTile < end;
    if (next) {
      Tl::copy(Tl::k(sm, stage ^ 1), kb, c0 + kTile, start, end);
      cp_commit();
      Tl::copy(Tl::v(sm, stage ^ 1), vb, c0 + kTile, start, end);
      cp_commit();
      if (first) cp_wait<2>();  // the first split's one group is in
      else cp_wait<3>();        // this split's keys are in
    } else if (first) {
      cp_wait<0>();
    } else {
      cp_wait<1>();
    }
    __syncthreads();

    // S for the warp's 16 slots: two 8-key tiles.
    const T* sk = Tl::k(sm, stage) + (warp * 16) * Tl::kRow;
    float sc[2][4];
#pragma unroll
    for (int n = 0; n < 2; ++n) {
      sc[n][0] = sc[n][1] = sc[n][2] = sc[n][3] = 0.f;
#pragma unroll
      for (int t = 0; t < kSteps; t += 2) {
        uint32_t kf[4];
        ldsm_x4(kf, sk + (n * 8 + lane % 8) * Tl::kRow + t * 16 + (lane / 8) * 8);
        Mma<T>::run(sc[n], qa[t], kf[0], kf[1]);
        Mma<T>::run(sc[n], qa[t + 1], kf[2], kf[3]);
      }
    }
    // Online softmax: this thread's two rows (r0, r1), four slots each.
    float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int n = 0; n < 2; ++n) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int64_t j = c0 + warp * 16 + n * 8 + cc + (e & 1);
        sc[n][e] = (j >= start && j < end) ? sc[n][e] * scale : -INFINITY;
        mx[e / 2] = fmaxf(mx[e / 2], sc[n][e]);
      }
    }
    float alpha[2], mu[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
      const float mn = fmaxf(m[r], mx[r]);
      mu[r] = mn == -INFINITY ? 0.f : mn;  // no visible slot yet: every exp2 below is 0
      alpha[r] = exp2f(m[r] - mu[r]);
      m[r] = mn;
      l[r] *= alpha[r];
    }
    uint32_t pa[4];
#pragma unroll
    for (int n = 0; n < 2; ++n) {
      const float p0 = exp2f(sc[n][0] - mu[0]), p1 = exp2f(sc[n][1] - mu[0]);
      const float p2 = exp2f(sc[n][2] - mu[1]), p3 = exp2f(sc[n][3] - mu[1]);
      l[0] += p0 + p1;
      l[1] += p2 + p3;
      pa[n * 2] = Mma<T>::pack(p0, p1);
      pa[n * 2 + 1] = Mma<T>::pack(p2, p3);
    }
    // The sums rescaled where a row's maximum rose (after the first splits, rarely).
    if (!__all_sync(0xffffffffu, alpha[0] == 1.f && alpha[1] == 1.f)) {
#pragma unroll
      for (int n = 0; n < kOut; ++n) {
        o[n][0] *= alpha[0];
        o[n][1] *= alpha[0];
        o[n][2] *= alpha[1];
        o[n][3] *= alpha[1];
      }
    }

    if (next) {
      cp_wait<2>();  // this split's values are in
    } else {
      cp_wait<0>();
    }
    __syncthreads();
    const T* sv = Tl::v(sm, stage) + (warp * 16) * Tl::kRow;
#pragma unroll
    for (int n = 0; n < kOut; n += 2) {
      uint32_t vf[4];
      ldsm_x4_trans(vf, sv + (lane % 8 + ((lane / 8) % 2) * 8) * Tl::kRow + n * 8 + (lane / 16) * 8);
      Mma<T>::run(o[n], pa, vf[0], vf[1]);
      Mma<T>::run(o[n + 1], pa, vf[2], vf[3]);
    }
    __syncthreads();  // the stage is refilled two splits on
  }

  // Merge the four warps: maxima and denominators, then the rescaled sums, through shared memory
  // (the copies are all complete: the last split waited for group 0).
  __shared__ float wm[kWarps][16], wl[kWarps][16];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
  }
  if (lane % 4 == 0) {
    wm[warp][r0] = m[0];
    wm[warp][r1] = m[1];
    wl[warp][r0] = l[0];
    wl[warp][r1] = l[1];
  }
  __syncthreads();
  float* red = reinterpret_cast<float*>(smem_raw);  // [kWarps][group][HD]
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = r == 0 ? r0 : r1;
    if (row >= group) continue;
    float mb = -INFINITY;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) mb = fmaxf(mb, wm[w][row]);
    const float f = m[r] == -INFINITY ? 0.f : exp2f(m[r] - mb);  // mb is finite: a slot is visible
    float* dst = red + (warp * group + row) * HD + cc;
#pragma unroll
    for (int n = 0; n < kOut; ++n) {
      dst[n * 8] = o[n][r * 2] * f;
      dst[n * 8 + 1] = o[n][r * 2 + 1] * f;
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < group * HD; i += kThreads) {
    const int g = i / HD, c = i % HD;
    float acc = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) acc += red[(w * group + g) * HD + c];
    const int64_t slot = (head0 + g) * used + blockIdx.y;
    part_o[slot * HD + c] = acc;
    if (c == 0) {
      float mb = -INFINITY, lb = 0.f;
#pragma unroll
      for (int w = 0; w < kWarps; ++w) mb = fmaxf(mb, wm[w][g]);
#pragma unroll
      for (int w = 0; w < kWarps; ++w) {
        if (wm[w][g] != -INFINITY) lb += wl[w][g] * exp2f(wm[w][g] - mb);
      }
      part_ml[slot * 2] = mb * kLn2;
      part_ml[slot * 2 + 1] = lb;
    }
  }
}

template <typename T, int HD>
int launch_hd(const T* q, const T* k, const T* v, const int64_t* pad, const int64_t* len,
              float* part_o, float* part_ml, const llmprof_k_decode_attn_shape& s,
              DecodeAttnMmaPlan plan, cudaStream_t stream) {
  constexpr size_t bytes = Tiles<T, HD>::kBytes;
  static_assert(bytes >= sizeof(float) * kWarps * kDecodeAttnMmaMaxGroup * HD,
                "the warps' merge reuses the tiles' shared memory");
  const auto kernel = attn_split_mma<T, HD>;
  // Past 48 KiB of dynamic shared memory a kernel must ask (not a stream operation: capturable).
  cudaError_t err =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
  if (err != cudaSuccess) return (int)err;
  const dim3 grid((unsigned)(s.batch * s.kv_heads), (unsigned)plan.used);
  return (int)llmprof_k::launch(kernel, grid, kThreads, bytes, stream, q, k, v, pad, len, part_o,
                                part_ml, s, plan.tiles);
}

}  // namespace

DecodeAttnMmaPlan decode_attn_mma_plan(const llmprof_k_decode_attn_shape& s) {
  // Where one split a block fits in the resident blocks (three per SM) at once, one split a
  // block: latency, not bytes, bounds the step. Otherwise about two waves of blocks, but at least
  // four splits a block where there are four (each block pays a first round trip and a merge)
  // and two blocks per row·kv head where there are two splits. H200, Llama-3.1-8B over 1,088
  // slots (reports/performance-history.md, round 3 sessions 31 and 33): batch 8 four blocks a
  // row·kv head, 15.3 µs a layer against 20.5 with thirteen; batch 32 four (5 splits each);
  // batch 128 two; batch 1 over 8,192 slots 32 blocks (4 splits) 14.5 µs against 18.8 with 99.
  const int64_t per_split = (int64_t)s.batch * s.kv_heads;
  const int64_t resident = (int64_t)kResidentBlocks * current_sm_count();
  int64_t want = s.splits;
  if (per_split * s.splits > resident) {
    want = (2 * resident + per_split - 1) / per_split;
    want = want > s.splits / 4 ? s.splits / 4 : want;
    want = want < 2 ? 2 : want;
  }
  want = want > s.splits ? s.splits : want;
  want = want < 1 ? 1 : want;
  const int tiles = (int)((s.splits + want - 1) / want);
  return {tiles, (s.splits + tiles - 1) / tiles};
}

template <typename T>
int decode_attn_split_mma(const T* q, const T* k, const T* v, const int64_t* pad,
                          const int64_t* len, float* part_o, float* part_ml,
                          const llmprof_k_decode_attn_shape& s, DecodeAttnMmaPlan plan,
                          cudaStream_t stream) {
  if (s.heads / s.kv_heads > kDecodeAttnMmaMaxGroup || plan.tiles < 1 || plan.used < 1 ||
      plan.used > LLMPROF_K_MAX_GRID_Y) {
    return (int)cudaErrorInvalidValue;
  }
  switch (s.head_dim) {
    case 64: return launch_hd<T, 64>(q, k, v, pad, len, part_o, part_ml, s, plan, stream);
    case 128: return launch_hd<T, 128>(q, k, v, pad, len, part_o, part_ml, s, plan, stream);
    default: return (int)cudaErrorInvalidValue;
  }
}

template int decode_attn_split_mma<__nv_bfloat16>(const __nv_bfloat16*, const __nv_bfloat16*,
                                                  const __nv_bfloat16*, const int64_t*,
                                                  const int64_t*, float*, float*,
                                                  const llmprof_k_decode_attn_shape&,
                                                  DecodeAttnMmaPlan, cudaStream_t);
template int decode_attn_split_mma<__half>(const __half*, const __half*, const __half*,
                                           const int64_t*, const int64_t*, float*, float*,
                                           const llmprof_k_decode_attn_shape&, DecodeAttnMmaPlan,
                                           cudaStream_t);

}  // namespace llmprof_k
