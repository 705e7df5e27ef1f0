// Session 33 record, not built: decode_attention_mma.cu with the variants of calls A-D (S pipeline
// stages, the cluster combine of decode_attention_cluster.cuh, early rows, whole-tile copies,
// the balanced partition). It compiled against an intermediate pdl.cuh that had
// llmprof_k::launch_clustered (cudaLaunchKernelEx with cudaLaunchAttributeClusterDimension
// beside the PDL attribute); attn_bench.cu built it as the tree's kernel for calls A-D.
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

#include "decode_attention_cluster.cuh"
#include "device.cuh"
#include "dtype.cuh"
#include "mma.cuh"
#include "pdl.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>

#include <type_traits>

namespace llmprof_k {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kTile = LLMPROF_K_DECODE_ATTN_CHUNK;
static_assert(kTile == kWarps * 16, "each warp takes 16 slots of a split");
// Elements after each shared-memory row: rows then start 16 bytes apart modulo 128, so the eight
// rows one ldmatrix reads fall in distinct banks.
constexpr int kRowPad = 8;
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

template <typename T, int HD, int S> struct Tiles {
  static constexpr int kRow = HD + kRowPad;
  static constexpr int kChunks = kTile * HD / 8;  // 16-byte copies per tile
  static constexpr size_t kBytes = (size_t)S * 2 * kTile * kRow * sizeof(T);  // K and V, S stages
  static __device__ __forceinline__ T* k(T* base, int stage) { return base + stage * 2 * kTile * kRow; }
  static __device__ __forceinline__ T* v(T* base, int stage) { return k(base, stage) + kTile * kRow; }
  // One tile of `src` rows [c0, c0 + kTile) into `dst`; rows outside [start, end) zeroed; row
  // `skip` not copied at all (the caller writes it).
  static __device__ __forceinline__ void copy(T* dst, const T* src, int64_t c0, int64_t start,
                                              int64_t end, int64_t skip) {
#pragma unroll
    for (int i = 0; i < kChunks / kThreads; ++i) {
      const int c = i * kThreads + (int)threadIdx.x;
      const int row = c / (HD / 8), col = (c % (HD / 8)) * 8;
      const int64_t j = c0 + row;
      const bool valid = j >= start && j < end;
      if (j != skip) cp16(dst + row * kRow + col, src + (valid ? j : start) * HD + col, valid);
    }
  }
  // A tile all of whose rows are visible, from its first row `src`: no checks, so each copy's
  // addresses are one register plus a constant.
  static __device__ __forceinline__ void copy_full(T* dst, const T* src) {
#pragma unroll
    for (int i = 0; i < kChunks / kThreads; ++i) {
      const int c = i * kThreads + (int)threadIdx.x;
      const int row = c / (HD / 8), col = (c % (HD / 8)) * 8;
      cp16(dst + row * kRow + col, src + row * HD + col, true);
    }
  }
  // K's and V's tile at c0 into `stage`, each its own commit group (empty where c0 is past
  // `stop`).
  static __device__ __forceinline__ void copy_kv(T* base, int stage, const T* kb, const T* vb,
                                                 int64_t c0, int64_t start, int64_t end,
                                                 int64_t stop, int64_t skip) {
#ifdef BENCH_NO_FAST_COPY
    const bool full = false;
#else
    const bool full = c0 >= start && c0 + kTile <= end && (skip < c0 || skip >= c0 + kTile);
#endif
    if (c0 < stop) {
      if (full) copy_full(k(base, stage), kb + c0 * HD);
      else copy(k(base, stage), kb, c0, start, end, skip);
    }
    cp_commit();
    if (c0 < stop) {
      if (full) copy_full(v(base, stage), vb + c0 * HD);
      else copy(v(base, stage), vb, c0, start, end, skip);
    }
    cp_commit();
  }
  // Row j of `src` into its place in the tile at c0, by plain loads that bypass L1.
  static __device__ __forceinline__ void load_row(T* dst, const T* src, int64_t c0, int64_t j) {
    for (int c = threadIdx.x; c < HD / 8; c += kThreads) {
      const uint4 x = __ldcg(reinterpret_cast<const uint4*>(src + j * HD) + c);
      *reinterpret_cast<uint4*>(dst + (j - c0) * kRow + c * 8) = x;
    }
  }
};

// The launch's variant: S pipeline stages; Cluster: the blocks of one (row, kv head) form a
// thread-block cluster and combine their partials through distributed shared memory
// (decode_attention_cluster.cuh) instead of writing them for the combine kernel; Early: the
// cached rows before this step's slot are requested before the wait for the previous kernel
// (only the RoPE + KV-write kernel before it writes this step's slot and the query).
template <typename T, int HD, int S, bool Cluster, bool Early>
__global__ void __launch_bounds__(kThreads, S == 2 ? 3 : (S == 3 ? 2 : 1))
    attn_split_mma(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                   const int64_t* __restrict__ pad, const int64_t* __restrict__ len_p,
                   float* __restrict__ part_o, float* __restrict__ part_ml, T* __restrict__ out,
                   llmprof_k_decode_attn_shape s) {
  if constexpr (!Early) llmprof_k::begin_after_previous_grid();
  using Tl = Tiles<T, HD, S>;
  constexpr int kSteps = HD / 16;  // k-steps of S = Q·Kᵀ
  constexpr int kOut = HD / 8;     // 8-channel tiles of O
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* sm = reinterpret_cast<T*>(smem_raw);

  const int group = s.heads / s.kv_heads;
  const int b = blockIdx.x / s.kv_heads, kvh = blockIdx.x % s.kv_heads;
  const int used = gridDim.y;
  // This block's tiles: a balanced share of the s.splits tiles (counts differ by at most one,
  // the longer shares first: the blocks launched last, at the tail, are the shorter ones).
#ifdef BENCH_HEAD_PARTITION
  const int64_t tiles_ = (s.splits + used - 1) / used;
  const int64_t c_begin = (int64_t)blockIdx.y * tiles_ * kTile;
  const int64_t c_end = c_begin + tiles_ * kTile;
#else
  const int64_t c_begin = ((int64_t)blockIdx.y * s.splits + used - 1) / used * kTile;
  const int64_t c_end = (((int64_t)blockIdx.y + 1) * s.splits + used - 1) / used * kTile;
#endif
  const int64_t start = max(pad[b], c_begin);
  // *len: the slot this step wrote; never past the splits nor the cache, even for a wrong *len.
  const int64_t last = *len_p;
  const int64_t end = min(min(last + 1, c_end), min((int64_t)s.splits * kTile, s.slots));
  const bool any = start < end;  // block-uniform: a visible slot in this block's tiles
  const int64_t head0 = (int64_t)b * s.heads + (int64_t)kvh * group;  // first query head's row
  if (!Cluster && !any) {
    if constexpr (Early) llmprof_k::begin_after_previous_grid();
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
  const int64_t loop_end = any ? end : 0;

  // The first S − 1 tiles' copies go out before anything else is read (a commit group each for
  // K and V, empty past the end, so the waits below count groups the same at every tile).
  const int64_t c_first = any ? (start / kTile) * kTile : 0;
  const int64_t skip = Early ? last : -1;
#pragma unroll
  for (int p = 0; p < S - 1; ++p) {
    Tl::copy_kv(sm, p, kb, vb, c_first + p * kTile, start, end, loop_end, skip);
  }
  if constexpr (Early) {
    llmprof_k::begin_after_previous_grid();
    // This step's slot, where it falls in a tile copied above.
    const int64_t p = (last - c_first) / kTile;
    if (any && last >= start && last < end && last >= c_first && p < S - 1) {
      Tl::load_row(Tl::k(sm, (int)p), kb, c_first + p * kTile, last);
      Tl::load_row(Tl::v(sm, (int)p), vb, c_first + p * kTile, last);
    }
  }

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

  int stage = 0;
  for (int64_t c0 = c_first; c0 < loop_end; c0 += kTile, stage = stage + 1 == S ? 0 : stage + 1) {
    // The tile S − 1 ahead into the stage the previous tile used.
    const int64_t cn = c0 + (S - 1) * kTile;
    const int sn = stage == 0 ? S - 1 : stage - 1;
    Tl::copy_kv(sm, sn, kb, vb, cn, start, end, loop_end, -1);
    cp_wait<2 * S - 1>();  // this tile's keys are in
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
#ifdef BENCH_NO_MASK_FAST
    if (false) {
#else
    if (c0 >= start && c0 + kTile <= end) {  // block-uniform: every slot of the tile visible
#endif
#pragma unroll
      for (int n = 0; n < 2; ++n) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          sc[n][e] *= scale;
          mx[e / 2] = fmaxf(mx[e / 2], sc[n][e]);
        }
      }
    } else {
#pragma unroll
      for (int n = 0; n < 2; ++n) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int64_t j = c0 + warp * 16 + n * 8 + cc + (e & 1);
          sc[n][e] = (j >= start && j < end) ? sc[n][e] * scale : -INFINITY;
          mx[e / 2] = fmaxf(mx[e / 2], sc[n][e]);
        }
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
    // The sums rescaled where a row's maximum rose (after the first tiles, rarely).
#ifdef BENCH_NO_ALPHA_SKIP
    if (true) {
#else
    if (!__all_sync(0xffffffffu, alpha[0] == 1.f && alpha[1] == 1.f)) {
#endif
#pragma unroll
      for (int n = 0; n < kOut; ++n) {
        o[n][0] *= alpha[0];
        o[n][1] *= alpha[0];
        o[n][2] *= alpha[1];
        o[n][3] *= alpha[1];
      }
    }

    cp_wait<2 * S - 2>();  // this tile's values are in
    __syncthreads();
    const T* sv = Tl::v(sm, stage) + (warp * 16) * Tl::kRow;
#pragma unroll
    for (int n = 0; n < kOut; n += 2) {
      uint32_t vf[4];
      ldsm_x4_trans(vf, sv + (lane % 8 + ((lane / 8) % 2) * 8) * Tl::kRow + n * 8 + (lane / 16) * 8);
      Mma<T>::run(o[n], pa, vf[0], vf[1]);
      Mma<T>::run(o[n + 1], pa, vf[2], vf[3]);
    }
    __syncthreads();  // the stage is refilled S − 1 tiles on
  }
  cp_wait<0>();  // the empty groups past the end

  // Merge the four warps: maxima and denominators, then the rescaled sums, through shared memory.
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
    const float f = m[r] == -INFINITY ? 0.f : exp2f(m[r] - mb);
    float* dst = red + (warp * group + row) * HD + cc;
#pragma unroll
    for (int n = 0; n < kOut; ++n) {
      dst[n * 8] = o[n][r * 2] * f;
      dst[n * 8 + 1] = o[n][r * 2 + 1] * f;
    }
  }
  __syncthreads();
  // The block's partial per query head: the unnormalised output (finite: 0 without a visible
  // slot) and (maximum in log2 units, denominator).
  float* bo = red + kWarps * group * HD;  // [group][HD], in the cluster form
  __shared__ float2 bml[16];
  for (int i = threadIdx.x; i < group * HD; i += kThreads) {
    const int g = i / HD, c = i % HD;
    float acc = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) acc += red[(w * group + g) * HD + c];
    float mb = -INFINITY, lb = 0.f;
    if (c == 0) {
#pragma unroll
      for (int w = 0; w < kWarps; ++w) mb = fmaxf(mb, wm[w][g]);
#pragma unroll
      for (int w = 0; w < kWarps; ++w) {
        if (wm[w][g] != -INFINITY) lb += wl[w][g] * exp2f(wm[w][g] - mb);
      }
    }
    if constexpr (Cluster) {
      bo[i] = acc;
      if (c == 0) bml[g] = make_float2(mb, lb);
    } else {
      const int64_t slot = (head0 + g) * used + blockIdx.y;
      part_o[slot * HD + c] = acc;
      if (c == 0) {
        part_ml[slot * 2] = mb * kLn2;  // natural-log units, as the CUDA-core pass writes
        part_ml[slot * 2 + 1] = lb;
      }
    }
  }
  if constexpr (Cluster) cluster_combine<T, HD>(bo, bml, group, head0, out);
}

template <typename T, int HD, int S, bool Cluster, bool Early>
int launch_variant(const T* q, const T* k, const T* v, const int64_t* pad, const int64_t* len,
                   float* part_o, float* part_ml, T* out, const llmprof_k_decode_attn_shape& s,
                   int used, cudaStream_t stream) {
  constexpr size_t bytes = Tiles<T, HD, S>::kBytes;
  static_assert(bytes >= sizeof(float) * (kWarps + 1) * kDecodeAttnMmaMaxGroup * HD,
                "the warps' merge and the block's partial reuse the tiles' shared memory");
  const auto kernel = attn_split_mma<T, HD, S, Cluster, Early>;
  // Past 48 KiB of dynamic shared memory a kernel must ask (not a stream operation: capturable).
  cudaError_t err =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
  if (err != cudaSuccess) return (int)err;
  if (Cluster && used > kPortableCluster) {
    err = cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    if (err != cudaSuccess) return (int)err;
  }
  const dim3 grid((unsigned)(s.batch * s.kv_heads), (unsigned)used);
  return (int)llmprof_k::launch_clustered(kernel, grid, kThreads, bytes, Cluster ? used : 1,
                                          stream, q, k, v, pad, len, part_o, part_ml, out, s);
}

}  // namespace

DecodeAttnMmaPlan decode_attn_mma_plan(const llmprof_k_decode_attn_shape& s) {
  // Blocks enough for about two waves of three resident blocks per SM, and at least two per
  // row·kv head where there are two splits. H200, Llama-3.1-8B over 1,088 slots: at batch 32
  // two waves (blocks of 5 splits) took 1.45 ms a step against 1.51 at four and 1.54 at one; at
  // batch 128 two blocks a row (9 splits each) 5.01 against 5.14 with one
  // (reports/performance-history.md, round 3 session 31).
  const int64_t per_split = (int64_t)s.batch * s.kv_heads;
  const int64_t target = 2LL * 3 * current_sm_count();
  int64_t want = (target + per_split - 1) / per_split;
  want = want < 2 ? 2 : want;
  want = want > s.splits ? s.splits : want;
  want = want < 1 ? 1 : want;
  DecodeAttnMmaPlan plan{(int)want, false, false};
  return plan;
}

template <typename T>
int decode_attn_split_mma(const T* q, const T* k, const T* v, const int64_t* pad,
                          const int64_t* len, float* part_o, float* part_ml, T* out,
                          const llmprof_k_decode_attn_shape& s, DecodeAttnMmaPlan plan,
                          cudaStream_t stream) {
  if (s.heads / s.kv_heads > kDecodeAttnMmaMaxGroup || plan.used < 1 ||
      plan.used > LLMPROF_K_MAX_GRID_Y || plan.used > s.splits ||
      (plan.cluster && plan.used > kMaxCluster)) {
    return (int)cudaErrorInvalidValue;
  }
  const auto run = [&](auto hd) {
    constexpr int HD = decltype(hd)::value;
    const auto go = [&](auto cluster, auto early) {
      return launch_variant<T, HD, 2, decltype(cluster)::value, decltype(early)::value>(
          q, k, v, pad, len, part_o, part_ml, out, s, plan.used, stream);
    };
    using Yes = std::true_type;
    using No = std::false_type;
    if (plan.cluster) return plan.early ? go(Yes{}, Yes{}) : go(Yes{}, No{});
    return plan.early ? go(No{}, Yes{}) : go(No{}, No{});
  };
  switch (s.head_dim) {
    case 64: return run(std::integral_constant<int, 64>{});
    case 128: return run(std::integral_constant<int, 128>{});
    default: return (int)cudaErrorInvalidValue;
  }
}

template int decode_attn_split_mma<__nv_bfloat16>(const __nv_bfloat16*, const __nv_bfloat16*,
                                                  const __nv_bfloat16*, const int64_t*,
                                                  const int64_t*, float*, float*,
                                                  __nv_bfloat16*,
                                                  const llmprof_k_decode_attn_shape&,
                                                  DecodeAttnMmaPlan, cudaStream_t);
template int decode_attn_split_mma<__half>(const __half*, const __half*, const __half*,
                                           const int64_t*, const int64_t*, float*, float*,
                                           __half*, const llmprof_k_decode_attn_shape&,
                                           DecodeAttnMmaPlan,
                                           cudaStream_t);

}  // namespace llmprof_k
