// SAM attention glue as kernels (launch.h): packing q′/k′/v for the folded relative-position bias
// straight from the qkv Linear's output, filling q′'s relative-position columns from one GEMM's
// products, and merging windows back into the grid. They replace, per block, the pad,
// window-partition and head-split copies, the key one-hots and the two concatenations; the
// relative-position products stay cuBLAS GEMMs (reports/performance-history.md, "Round 2, kernels"
// and "Round 2, session 10").
#include "dtype.cuh"
#include "launch.h"

#include <cuda_runtime.h>

#include <algorithm>

namespace {

using llmprof_k::from_f;
using llmprof_k::Vec;

constexpr int kThreads = 256;
constexpr int kPackWarps = 8;  // tokens per pack_qkv block, a warp each

// One warp per (window, token of the window), kPackWarps tokens per block, a warp-stride loop
// over V-element vectors of the token's q, k and v (head_dim a multiple of V, so a vector never
// crosses a head), unrolled so that several loads are in flight per lane; q′, k′ and v are
// [windows, tokens, heads, width] (the layout that makes the attention write its output
// token-major, so merging heads is a view). Writes the token's q into q′ (first head_dim
// columns), k′ whole (k, the one-hot row and column, zero padding; only k with `keys_ready`)
// and v. With `q_rows`/`q_cols` (the batched-GEMM layout of the relative-position products), q
// also goes there and q′'s other columns are zeroed for the caller's copies; without
// them, q′'s other columns are left to fill_rel_pos.
template <typename T, int V>
__global__ void __launch_bounds__(kPackWarps * 32)
    pack_qkv(const T* __restrict__ qkv, const T* __restrict__ bias, T* __restrict__ q_aug,
             T* __restrict__ k_aug, T* __restrict__ v_out, T* __restrict__ q_rows,
             T* __restrict__ q_cols, llmprof_k_sam_shape s, int64_t all_tokens, bool keys_ready) {
  using VT = Vec<T, V>;
  const int64_t channels = s.heads * s.head_dim;
  const int64_t tokens = s.win_h * s.win_w;
  const int64_t token = (int64_t)blockIdx.x * kPackWarps + threadIdx.x / 32;
  if (token >= all_tokens) return;
  const int lane = threadIdx.x % 32;
  const int64_t n = token % tokens;  // token within the window
  const int64_t bw = token / tokens; // (view, window row, window col)
  const int64_t nww = s.pad_w / s.win_w;
  const int64_t nwh = s.pad_h / s.win_h;
  const int64_t windows = s.batch * nwh * nww;
  const int64_t wx = bw % nww;
  const int64_t wy = (bw / nww) % nwh;
  const int64_t b = bw / (nww * nwh);
  const int64_t iy = n / s.win_w, ix = n % s.win_w;
  const int64_t gy = wy * s.win_h + iy, gx = wx * s.win_w + ix;
  // Padded tokens are zeros before the Linear, so their q/k/v are its bias.
  const VT* src = reinterpret_cast<const VT*>(
      (gy < s.grid_h && gx < s.grid_w) ? qkv + ((b * s.grid_h + gy) * s.grid_w + gx) * 3 * channels
                                       : bias);
  const bool copies = q_rows != nullptr;

  const int64_t part_vecs = channels / V;
#pragma unroll 4
  for (int64_t i = lane; i < 3 * part_vecs; i += 32) {
    const int64_t part = i / part_vecs, c = (i % part_vecs) * V;
    const int64_t head = c / s.head_dim, d = c % s.head_dim;
    const int64_t bh = bw * s.heads + head;              // (window, head)
    const int64_t row = (bw * tokens + n) * s.heads + head; // (window, token, head)
    const VT x = src[i];
    if (part == 0) {
      *reinterpret_cast<VT*>(q_aug + row * s.aug_dim + d) = x;
      if (copies) {
        // q_rows [win_h, windows·heads, win_w, d]; q_cols [win_w, windows·heads, win_h, d].
        *reinterpret_cast<VT*>(
            q_rows + ((iy * windows * s.heads + bh) * s.win_w + ix) * s.head_dim + d) = x;
        *reinterpret_cast<VT*>(
            q_cols + ((ix * windows * s.heads + bh) * s.win_h + iy) * s.head_dim + d) = x;
      }
    } else if (part == 1) {
      *reinterpret_cast<VT*>(k_aug + row * s.aug_dim + d) = x;
    } else {
      *reinterpret_cast<VT*>(v_out + row * s.head_dim + d) = x;
    }
  }
  // k′'s one-hot columns are the same for every layer of a shape: with `keys_ready` k_aug holds
  // them from an earlier pack and only its first head_dim columns are written here.
  if (keys_ready && !copies) return;
  const int64_t extra_vecs = (s.aug_dim - s.head_dim) / V;
  const int64_t rel_end = s.win_h + s.win_w;
  for (int64_t idx = lane; idx < s.heads * extra_vecs; idx += 32) {
    const int64_t head = idx / extra_vecs, j0 = (idx % extra_vecs) * V;
    const int64_t o = ((bw * tokens + n) * s.heads + head) * s.aug_dim + s.head_dim + j0;
    VT key, zero;
#pragma unroll
    for (int e = 0; e < V; ++e) {
      const int64_t j = j0 + e;
      const bool one = j < s.win_h ? j == iy : (j < rel_end && j - s.win_h == ix);
      key.e[e] = from_f<T>(one ? 1.f : 0.f);
      zero.e[e] = from_f<T>(0.f);
    }
    if (!keys_ready) *reinterpret_cast<VT*>(k_aug + o) = key;
    if (copies) *reinterpret_cast<VT*>(q_aug + o) = zero;
  }
}

// q′'s columns after head_dim from the products of q with both resized tables,
// prod [rows, prod_cols] (rows = windows·tokens·heads in q′'s order; columns: the 2·win_h − 1
// rows of the row-axis table, then the 2·win_w − 1 of the column axis, then padding):
// q′[r, hd + kh] = prod[r, qh − kh + win_h − 1], q′[r, hd + win_h + kw] = prod[r, 2·win_h − 1 +
// qw − kw + win_w − 1], zero after. A thread per V columns of a row, one V-element store.
template <typename T, int V>
__global__ void fill_rel_pos(const T* __restrict__ prod, int64_t prod_cols, T* __restrict__ q_aug,
                             int64_t rows, llmprof_k_sam_shape s) {
  using VT = Vec<T, V>;
  const int64_t tokens = s.win_h * s.win_w;
  const int64_t extra_vecs = (s.aug_dim - s.head_dim) / V;
  const int64_t total = rows * extra_vecs;
  const int64_t rel_end = s.win_h + s.win_w;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t r = i / extra_vecs, j0 = (i % extra_vecs) * V;
    const int64_t n = (r / s.heads) % tokens;
    const int64_t iy = n / s.win_w, ix = n % s.win_w;
    const T* p = prod + r * prod_cols;
    VT out;
#pragma unroll
    for (int e = 0; e < V; ++e) {
      const int64_t j = j0 + e;
      if (j < s.win_h) {
        out.e[e] = p[iy - j + s.win_h - 1];
      } else if (j < rel_end) {
        out.e[e] = p[2 * s.win_h - 1 + ix - (j - s.win_h) + s.win_w - 1];
      } else {
        out.e[e] = from_f<T>(0.f);
      }
    }
    *reinterpret_cast<VT*>(q_aug + r * s.aug_dim + s.head_dim + j0) = out;
  }
}

// One block per output token (view, grid row, grid column); threads over its channels in
// V-element vectors (V > 1 only when o's head_dim is contiguous and every offset a multiple of V),
// so the window arithmetic is done once per token and reads within a head are contiguous.
template <typename T, int V>
__global__ void merge_windows(const T* __restrict__ o, int64_t s0, int64_t s1, int64_t s2,
                              int64_t s3, T* __restrict__ out, llmprof_k_sam_shape s) {
  using VT = Vec<T, V>;
  const int channels = (int)(s.heads * s.head_dim);
  const int64_t t = blockIdx.x;
  const int64_t gx = t % s.grid_w;
  const int64_t gy = (t / s.grid_w) % s.grid_h;
  const int64_t b = t / (s.grid_w * s.grid_h);
  const int64_t nww = s.pad_w / s.win_w;
  const int64_t nwh = s.pad_h / s.win_h;
  const int64_t bw = (b * nwh + gy / s.win_h) * nww + gx / s.win_w;
  const int64_t n = (gy % s.win_h) * s.win_w + gx % s.win_w;
  const T* src = o + bw * s0 + n * s2;
  T* dst = out + t * channels;
  const int hd = (int)s.head_dim;
  for (int c = threadIdx.x * V; c < channels; c += blockDim.x * V) {
    *reinterpret_cast<VT*>(dst + c) =
        *reinterpret_cast<const VT*>(src + (c / hd) * s1 + (c % hd) * s3);
  }
}

// 16-byte vectors when every row offset allows them (`vec16`), else one element at a time.
template <typename T>
int launch_pack(const void* qkv, const void* bias, void* q, void* k, void* v, void* q_rows,
                void* q_cols, const llmprof_k_sam_shape& s, bool keys_ready, bool vec16,
                cudaStream_t stream) {
  const int64_t windows = (s.pad_h / s.win_h) * (s.pad_w / s.win_w);
  const int64_t all_tokens = s.batch * windows * s.win_h * s.win_w;
  const int64_t blocks = (all_tokens + kPackWarps - 1) / kPackWarps;
  if (blocks == 0) return 0;
  constexpr int V = 16 / sizeof(T);
  auto in = static_cast<const T*>(qkv);
  auto b = static_cast<const T*>(bias);
  auto qo = static_cast<T*>(q);
  auto ko = static_cast<T*>(k);
  auto vo = static_cast<T*>(v);
  auto rows = static_cast<T*>(q_rows);
  auto cols = static_cast<T*>(q_cols);
  if (vec16) {
    pack_qkv<T, V><<<(unsigned)blocks, kPackWarps * 32, 0, stream>>>(in, b, qo, ko, vo, rows, cols,
                                                                      s, all_tokens, keys_ready);
  } else {
    pack_qkv<T, 1><<<(unsigned)blocks, kPackWarps * 32, 0, stream>>>(in, b, qo, ko, vo, rows, cols,
                                                                      s, all_tokens, keys_ready);
  }
  return (int)cudaGetLastError();
}

template <typename T>
int launch_fill(const void* prod, int64_t prod_cols, void* q, int64_t rows,
                const llmprof_k_sam_shape& s, bool vec16, cudaStream_t stream) {
  constexpr int V = 16 / sizeof(T);
  const int64_t vecs = rows * (s.aug_dim - s.head_dim) / (vec16 ? V : 1);
  const unsigned blocks = (unsigned)std::min<int64_t>((vecs + kThreads - 1) / kThreads, 1 << 20);
  if (blocks == 0) return 0;
  auto p = static_cast<const T*>(prod);
  auto out = static_cast<T*>(q);
  if (vec16) {
    fill_rel_pos<T, V><<<blocks, kThreads, 0, stream>>>(p, prod_cols, out, rows, s);
  } else {
    fill_rel_pos<T, 1><<<blocks, kThreads, 0, stream>>>(p, prod_cols, out, rows, s);
  }
  return (int)cudaGetLastError();
}

template <typename T>
int launch_merge(const void* o, const int64_t* st, void* out, const llmprof_k_sam_shape& s,
                 bool vec16, cudaStream_t stream) {
  const int64_t blocks = s.batch * s.grid_h * s.grid_w;
  if (blocks == 0) return 0;
  constexpr int V = 16 / sizeof(T);
  auto in = static_cast<const T*>(o);
  auto dst = static_cast<T*>(out);
  if (vec16) {
    merge_windows<T, V><<<(unsigned)blocks, kThreads, 0, stream>>>(in, st[0], st[1], st[2], st[3],
                                                                    dst, s);
  } else {
    merge_windows<T, 1><<<(unsigned)blocks, kThreads, 0, stream>>>(in, st[0], st[1], st[2], st[3],
                                                                    dst, s);
  }
  return (int)cudaGetLastError();
}

}  // namespace

extern "C" int llmprof_k_sam_pack_qkv(int dtype, const void* qkv, const void* bias, void* q_aug,
                                      void* k_aug, void* v, void* q_rows, void* q_cols,
                                      llmprof_k_sam_shape shape, int keys_ready, int vec16,
                                      void* stream) {
  auto st = static_cast<cudaStream_t>(stream);
  LLMPROF_K_DISPATCH(dtype, launch_pack, qkv, bias, q_aug, k_aug, v, q_rows, q_cols, shape,
                     keys_ready != 0, vec16 != 0, st)
}

extern "C" int llmprof_k_sam_fill_rel_pos(int dtype, const void* prod, int64_t prod_cols,
                                          void* q_aug, int64_t rows, llmprof_k_sam_shape shape,
                                          int vec16, void* stream) {
  auto st = static_cast<cudaStream_t>(stream);
  LLMPROF_K_DISPATCH(dtype, launch_fill, prod, prod_cols, q_aug, rows, shape, vec16 != 0, st)
}

extern "C" int llmprof_k_sam_merge_windows(int dtype, const void* o, const int64_t* o_strides,
                                           void* out, llmprof_k_sam_shape shape, int vec16,
                                           void* stream) {
  auto st = static_cast<cudaStream_t>(stream);
  LLMPROF_K_DISPATCH(dtype, launch_merge, o, o_strides, out, shape, vec16 != 0, st)
}
