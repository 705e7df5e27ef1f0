// SAM's windowed attention in one kernel (launch.h): q, k and v read straight from the qkv
// Linear's output on the grid (padded tokens take the Linear's bias, as zero inputs would), the
// decomposed relative-position bias added to each score from the products of q with both
// resized tables, the softmax over the whole window, and the output written token-major in the
// window ([windows, tokens, heads·head_dim]). It replaces, for windowed blocks, the q′/k′/v pack,
// the gather of the products into q′ and cuDNN's attention over q·k widened by the folded bias
// (reports/performance-history.md, "Round 2, session 15").
//
// One block per (window, head), four warps; the window's sides are template arguments (SAM's 14
// and the tests' 4). The window's k′ and vᵀ (tokens padded to a multiple of 16, padding zero)
// sit in shared memory, q is read into registers per strip; each warp takes strips of 16 queries and keeps everything of a strip in
// registers, FlashAttention-2's way but over the whole window at once (no running maximum):
// S = q′·k′ᵀ with mma.sync (bf16 in, fp32 accumulators), the bias folded in as in the folded
// path, but only inside the kernel (q′'s WH + WW extra columns gathered per strip from the
// products, k′'s one-hot columns written once per block: 96 columns instead of cuDNN's 128 and
// no q′/k′ in memory), the softmax over each row in registers (a row is spread over the four lanes of a quad), P
// rounded to bf16 and fed from the same registers as the A operand of O = P·v, O / Σ rounded
// once to bf16. Session 15's first version, with S and P in shared memory (WMMA), was 20× slower:
// one warp per scheduler could not hide a shared-memory round trip per score.
#include "dtype.cuh"
#include "launch.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kWarps = 4;
constexpr int kHd = 64;        // head_dim this kernel takes

__device__ __forceinline__ uint32_t ld32(const __nv_bfloat16* p) {
  return *reinterpret_cast<const uint32_t*>(p);
}

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}

// d += a·b for one m16n8k16 tile (bf16 in, fp32 accumulators), PTX's fragment layouts.
__device__ __forceinline__ void mma16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <int WH, int WW>
struct Window {
  static constexpr int kTokens = WH * WW;
  static constexpr int kPadded = (kTokens + 15) / 16 * 16;
  static constexpr int kTiles = kPadded / 8;    // n-tiles of S (8 keys)
  static constexpr int kChunks = kPadded / 16;  // k-chunks of P·v (16 keys)
  static constexpr int kLdv = kPadded + 8;      // row stride of vᵀ (bf16)
  // The relative-position columns appended to q and k: WH + WW, in whole 16-column chunks.
  static constexpr int kRelChunks = (WH + WW + 15) / 16;
  static constexpr int kRel = kRelChunks * 16;
  static constexpr int kLdk = kHd + kRel + 8;   // row stride of k′ (bf16): no bank conflicts
  static constexpr int kLdx = kRel + 8;         // row stride of a strip's q′ columns (bf16)
  // k′ [kPadded][kLdk], vᵀ [64][kLdv], each warp's strip of q′'s relative-position columns.
  static constexpr size_t kSmemBytes =
      sizeof(__nv_bfloat16) * ((size_t)kPadded * kLdk + (size_t)kHd * kLdv + kWarps * 16 * kLdx);
};

// Three blocks per SM: at most 168 registers a thread (255 otherwise, two blocks; session 15).
template <int WH, int WW>
__global__ void __launch_bounds__(kWarps * 32, 3)
    sam_window_attention(const __nv_bfloat16* __restrict__ qkv,
                         const __nv_bfloat16* __restrict__ bias,
                         const __nv_bfloat16* __restrict__ prod, __nv_bfloat16* __restrict__ out,
                         llmprof_k_sam_shape s, int prod_cols, float scale_log2) {
  using W = Window<WH, WW>;
  constexpr int N = W::kTokens, NP = W::kPadded;
  extern __shared__ __align__(16) unsigned char smem[];
  __nv_bfloat16* ks = reinterpret_cast<__nv_bfloat16*>(smem);  // k′ = [k, onehot(row), onehot(col)]
  __nv_bfloat16* vt = ks + NP * W::kLdk;                         // vᵀ [64][kLdv]
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __nv_bfloat16* qx = vt + kHd * W::kLdv + warp * 16 * W::kLdx;  // this warp's q′ columns
  const int quad_row = lane / 4, quad_col = (lane % 4) * 2;

  const int head = blockIdx.y;
  const int64_t bw = blockIdx.x;  // (view, window row, window column)
  const int nww = (int)(s.pad_w / WW), nwh = (int)(s.pad_h / WH);
  const int wx = (int)(bw % nww), wy = (int)((bw / nww) % nwh);
  const int64_t b = bw / ((int64_t)nww * nwh);
  const int64_t channels = s.heads * kHd;
  const int64_t grid_tokens = s.batch * s.grid_h * s.grid_w;

  // The grid token of window token n, or −1 for padding outside the grid.
  auto grid_token = [&](int n) -> int64_t {
    const int gy = wy * WH + n / WW, gx = wx * WW + n % WW;
    return (gy < s.grid_h && gx < s.grid_w) ? (b * s.grid_h + gy) * s.grid_w + gx : -1;
  };
  // This head's q, k or v of window token n (the Linear's bias for padding; null past the
  // window's tokens).
  auto source = [&](int n, int part) -> const __nv_bfloat16* {
    if (n >= N) return nullptr;
    const int64_t t = grid_token(n);
    return (t >= 0 ? qkv + t * 3 * channels : bias) + part * channels + head * kHd;
  };

  // k′ rows: k (8 16-byte vectors), then the key's one-hot row and column (zero past the
  // window's tokens); vᵀ columns.
  for (int i = threadIdx.x; i < NP * W::kRel; i += blockDim.x) {
    const int n = i / W::kRel, c = i % W::kRel;
    const bool one = n < N && (c < WH ? c == n / WW : c - WH == n % WW);
    ks[n * W::kLdk + kHd + c] = __float2bfloat16(one ? 1.f : 0.f);
  }
  for (int i = threadIdx.x; i < NP * 16; i += blockDim.x) {
    const int n = i / 16, part = 1 + (i / 8) % 2, v8 = i % 8;
    const __nv_bfloat16* src = source(n, part);
    const uint4 val = src != nullptr ? *reinterpret_cast<const uint4*>(src + v8 * 8)
                                     : make_uint4(0, 0, 0, 0);
    if (part == 1) {
      *reinterpret_cast<uint4*>(ks + n * W::kLdk + v8 * 8) = val;
    } else {
      const __nv_bfloat16* e = reinterpret_cast<const __nv_bfloat16*>(&val);
#pragma unroll
      for (int d = 0; d < 8; ++d) vt[(v8 * 8 + d) * W::kLdv + n] = e[d];
    }
  }
  __syncthreads();

  for (int strip = warp; strip < W::kChunks; strip += kWarps) {
    const int r0 = strip * 16;
    // q′'s relative-position columns of this strip, two lanes a row: the products of q with
    // the row offsets qh − kh, then the column offsets qw − kw (zero for padding queries,
    // whose output nobody reads, and past WH + WW).
    {
      const int r = lane / 2, n = r0 + r;
      const int64_t t = n < N ? grid_token(n) : -1;
      const __nv_bfloat16* p = prod + ((int64_t)head * grid_tokens + (t >= 0 ? t : 0)) * prod_cols;
      const int qh = n % N / WW, qw = n % N % WW;
      for (int c = lane % 2; c < W::kRel; c += 2) {
        __nv_bfloat16 v = __float2bfloat16(0.f);
        if (t >= 0 && c < WH) v = p[qh - c + WH - 1];
        if (t >= 0 && c >= WH && c < WH + WW) v = p[2 * WH - 1 + qw - (c - WH) + WW - 1];
        qx[r * W::kLdx + c] = v;
      }
    }
    __syncwarp();
    // The strip's q′ as A fragments: four k-chunks of q (read where the Linear wrote it), then
    // the relative-position chunks.
    uint32_t qa[4 + W::kRelChunks][4];
    {
      const __nv_bfloat16* qa_row = source(r0 + quad_row, 0);
      const __nv_bfloat16* qb_row = source(r0 + quad_row + 8, 0);
      auto q32 = [](const __nv_bfloat16* row, int c) -> uint32_t {
        return row != nullptr ? __ldg(reinterpret_cast<const unsigned int*>(row + c)) : 0u;
      };
#pragma unroll
      for (int kc = 0; kc < 4; ++kc) {
        const int c = kc * 16 + quad_col;
        qa[kc][0] = q32(qa_row, c);
        qa[kc][1] = q32(qb_row, c);
        qa[kc][2] = q32(qa_row, c + 8);
        qa[kc][3] = q32(qb_row, c + 8);
      }
#pragma unroll
      for (int kc = 0; kc < W::kRelChunks; ++kc) {
        const __nv_bfloat16* x0 = qx + quad_row * W::kLdx + kc * 16 + quad_col;
        qa[4 + kc][0] = ld32(x0);
        qa[4 + kc][1] = ld32(x0 + 8 * W::kLdx);
        qa[4 + kc][2] = ld32(x0 + 8);
        qa[4 + kc][3] = ld32(x0 + 8 * W::kLdx + 8);
      }
    }
    // S = q′·k′ᵀ = q·kᵀ + q·Rh + q·Rw: rows quad_row and quad_row + 8, columns
    // 8·tile + quad_col + {0, 1}; then scaled to log2 units, padding keys −∞.
    float sc[W::kTiles][4];
    float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int t = 0; t < W::kTiles; ++t) {
      sc[t][0] = sc[t][1] = sc[t][2] = sc[t][3] = 0.f;
      const __nv_bfloat16* k0 = ks + (t * 8 + quad_row) * W::kLdk + quad_col;
#pragma unroll
      for (int kc = 0; kc < 4 + W::kRelChunks; ++kc) {
        mma16816(sc[t], qa[kc], ld32(k0 + kc * 16), ld32(k0 + kc * 16 + 8));
      }
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const bool key = t * 8 + quad_col + e % 2 < N;
        sc[t][e] = key ? sc[t][e] * scale_log2 : -INFINITY;
        mx[e / 2] = fmaxf(mx[e / 2], sc[t][e]);
      }
    }
    float sum[2] = {0.f, 0.f};
    uint32_t pa[W::kTiles][2];  // P rounded to bf16, two per row and tile
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
      mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
#pragma unroll
      for (int t = 0; t < W::kTiles; ++t) {
        pa[t][h] = pack_bf16(exp2f(sc[t][2 * h] - mx[h]), exp2f(sc[t][2 * h + 1] - mx[h]));
        // The P·v product sees the rounded weights: so does the sum.
        const __nv_bfloat162 r = *reinterpret_cast<const __nv_bfloat162*>(&pa[t][h]);
        sum[h] += __low2float(r) + __high2float(r);
      }
      sum[h] += __shfl_xor_sync(0xffffffffu, sum[h], 1);
      sum[h] += __shfl_xor_sync(0xffffffffu, sum[h], 2);
    }
    // O = P·v: P's accumulator layout is the A fragment of the next product.
    float o[kHd / 8][4];
#pragma unroll
    for (int dt = 0; dt < kHd / 8; ++dt) o[dt][0] = o[dt][1] = o[dt][2] = o[dt][3] = 0.f;
#pragma unroll
    for (int kc = 0; kc < W::kChunks; ++kc) {
      const uint32_t a[4] = {pa[2 * kc][0], pa[2 * kc][1], pa[2 * kc + 1][0], pa[2 * kc + 1][1]};
#pragma unroll
      for (int dt = 0; dt < kHd / 8; ++dt) {
        const __nv_bfloat16* v0 = vt + (dt * 8 + quad_row) * W::kLdv + kc * 16 + quad_col;
        mma16816(o[dt], a, ld32(v0), ld32(v0 + 8));
      }
    }
    // out[window, token, head·64 + d] = O / Σ.
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = r0 + quad_row + 8 * h;
      if (row >= N) continue;
      const float inv = 1.f / sum[h];
      __nv_bfloat16* dst = out + (bw * N + row) * channels + head * kHd + quad_col;
#pragma unroll
      for (int dt = 0; dt < kHd / 8; ++dt) {
        *reinterpret_cast<__nv_bfloat162*>(dst + dt * 8) =
            __floats2bfloat162_rn(o[dt][2 * h] * inv, o[dt][2 * h + 1] * inv);
      }
    }
    __syncwarp();
  }
}

template <int WH, int WW>
int launch_window(const void* qkv, const void* bias, const void* prod, int prod_cols, void* out,
                  const llmprof_k_sam_shape& shape, cudaStream_t stream) {
  const size_t smem = Window<WH, WW>::kSmemBytes;
  const cudaError_t e = cudaFuncSetAttribute(
      sam_window_attention<WH, WW>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
  if (e != cudaSuccess) return (int)e;
  const int64_t windows = shape.batch * (shape.pad_h / WH) * (shape.pad_w / WW);
  if (windows == 0) return 0;
  constexpr float kLog2e = 1.4426950408889634f;
  dim3 grid((unsigned)windows, (unsigned)shape.heads);
  sam_window_attention<WH, WW><<<grid, kWarps * 32, smem, stream>>>(
      static_cast<const __nv_bfloat16*>(qkv), static_cast<const __nv_bfloat16*>(bias),
      static_cast<const __nv_bfloat16*>(prod), static_cast<__nv_bfloat16*>(out), shape, prod_cols,
      0.125f * kLog2e);
  return (int)cudaGetLastError();
}

}  // namespace

extern "C" int llmprof_k_sam_window_attention(const void* qkv, const void* bias, const void* prod,
                                              int64_t prod_cols, void* out,
                                              llmprof_k_sam_shape shape, void* stream) {
  if (shape.head_dim != kHd || prod_cols < 2 * (shape.win_h + shape.win_w) - 2 ||
      prod_cols > INT32_MAX || !llmprof_k::aligned16(qkv) || !llmprof_k::aligned16(bias)) {
    return (int)cudaErrorInvalidValue;
  }
  auto st = static_cast<cudaStream_t>(stream);
  const int pc = (int)prod_cols;
  if (shape.win_h == 14 && shape.win_w == 14) {
    return launch_window<14, 14>(qkv, bias, prod, pc, out, shape, st);
  }
  if (shape.win_h == 4 && shape.win_w == 4) {
    return launch_window<4, 4>(qkv, bias, prod, pc, out, shape, st);
  }
  return (int)cudaErrorInvalidValue;
}
