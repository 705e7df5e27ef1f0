// SAM attention glue as two kernels (launch.h): packing q′/k′/v for the folded relative-position
// bias straight from the qkv Linear's output, and merging windows back into the grid. They
// replace, per block, the pad, window-partition and head-split copies, the key one-hots and the
// two concatenations; the relative-position products stay cuBLAS GEMMs over the q copies this
// kernel writes in their layout (docs/performance.md, "Round 2, kernels").
#include "dtype.cuh"
#include "launch.h"

#include <cuda_runtime.h>

namespace {

using llmprof_k::from_f;

constexpr int kThreads = 256;

// One block per (window, token of the window), a grid-stride loop over channels. Writes the
// token's q into q′ (first head_dim columns) and into the two row-major copies that the
// relative-position GEMMs read, k′ whole (k, the one-hot row and column, zero padding), v, and
// zeroes q′'s padding columns. q′'s relative-position columns are left for those GEMMs.
template <typename T>
__global__ void pack_qkv(const T* __restrict__ qkv, const T* __restrict__ bias,
                         T* __restrict__ q_aug, T* __restrict__ k_aug, T* __restrict__ v_out,
                         T* __restrict__ q_rows, T* __restrict__ q_cols, llmprof_k_sam_shape s) {
  const int64_t channels = s.heads * s.head_dim;
  const int64_t tokens = s.win_h * s.win_w;
  const int64_t block = blockIdx.x;
  const int64_t n = block % tokens;  // token within the window
  const int64_t bw = block / tokens; // (view, window row, window col)
  const int64_t nww = s.pad_w / s.win_w;
  const int64_t nwh = s.pad_h / s.win_h;
  const int64_t windows = s.batch * nwh * nww;
  const int64_t wx = bw % nww;
  const int64_t wy = (bw / nww) % nwh;
  const int64_t b = bw / (nww * nwh);
  const int64_t iy = n / s.win_w, ix = n % s.win_w;
  const int64_t gy = wy * s.win_h + iy, gx = wx * s.win_w + ix;
  // Padded tokens are zeros before the Linear, so their q/k/v are its bias.
  const T* src = (gy < s.grid_h && gx < s.grid_w)
                     ? qkv + ((b * s.grid_h + gy) * s.grid_w + gx) * 3 * channels
                     : bias;

  for (int64_t c = threadIdx.x; c < channels; c += blockDim.x) {
    const int64_t head = c / s.head_dim, d = c % s.head_dim;
    const int64_t bh = bw * s.heads + head; // (window, head)
    const T q = src[c];
    q_aug[(bh * tokens + n) * s.aug_dim + d] = q;
    // q_rows [win_h, windows·heads, win_w, d]; q_cols [win_w, windows·heads, win_h, d].
    q_rows[((iy * windows * s.heads + bh) * s.win_w + ix) * s.head_dim + d] = q;
    q_cols[((ix * windows * s.heads + bh) * s.win_h + iy) * s.head_dim + d] = q;
    k_aug[(bh * tokens + n) * s.aug_dim + d] = src[channels + c];
    v_out[(bh * tokens + n) * s.head_dim + d] = src[2 * channels + c];
  }
  const int64_t extra = s.aug_dim - s.head_dim;
  const int64_t rel_end = s.win_h + s.win_w;
  for (int64_t idx = threadIdx.x; idx < s.heads * extra; idx += blockDim.x) {
    const int64_t head = idx / extra, j = idx % extra;
    const int64_t o = ((bw * s.heads + head) * tokens + n) * s.aug_dim + s.head_dim + j;
    const bool one = j < s.win_h ? j == iy : (j < rel_end && j - s.win_h == ix);
    k_aug[o] = from_f<T>(one ? 1.f : 0.f);
    if (j >= rel_end) q_aug[o] = from_f<T>(0.f);
  }
}

// One block per output token (view, grid row, grid column); threads over its channels, so the
// window arithmetic is done once per token and reads within a head are contiguous.
template <typename T>
__global__ void merge_windows(const T* __restrict__ o, int64_t s0, int64_t s1, int64_t s2,
                              int64_t s3, T* __restrict__ out, llmprof_k_sam_shape s) {
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
  for (int c = threadIdx.x; c < channels; c += blockDim.x) {
    dst[c] = src[(c / hd) * s1 + (c % hd) * s3];
  }
}

template <typename T>
int launch_pack(const void* qkv, const void* bias, void* q, void* k, void* v, void* q_rows,
                void* q_cols, const llmprof_k_sam_shape& s, cudaStream_t stream) {
  const int64_t windows = (s.pad_h / s.win_h) * (s.pad_w / s.win_w);
  const int64_t blocks = s.batch * windows * s.win_h * s.win_w;
  pack_qkv<T><<<(unsigned)blocks, kThreads, 0, stream>>>(
      static_cast<const T*>(qkv), static_cast<const T*>(bias), static_cast<T*>(q),
      static_cast<T*>(k), static_cast<T*>(v), static_cast<T*>(q_rows), static_cast<T*>(q_cols),
      s);
  return (int)cudaGetLastError();
}

template <typename T>
int launch_merge(const void* o, const int64_t* st, void* out, const llmprof_k_sam_shape& s,
                 cudaStream_t stream) {
  const int64_t blocks = s.batch * s.grid_h * s.grid_w;
  merge_windows<T><<<(unsigned)blocks, kThreads, 0, stream>>>(
      static_cast<const T*>(o), st[0], st[1], st[2], st[3], static_cast<T*>(out), s);
  return (int)cudaGetLastError();
}

}  // namespace

extern "C" int llmprof_k_sam_pack_qkv(int dtype, const void* qkv, const void* bias, void* q_aug,
                                      void* k_aug, void* v, void* q_rows, void* q_cols,
                                      llmprof_k_sam_shape shape, void* stream) {
  auto st = static_cast<cudaStream_t>(stream);
  LLMPROF_K_DISPATCH(dtype, launch_pack, qkv, bias, q_aug, k_aug, v, q_rows, q_cols, shape, st)
}

extern "C" int llmprof_k_sam_merge_windows(int dtype, const void* o, const int64_t* o_strides,
                                           void* out, llmprof_k_sam_shape shape, void* stream) {
  auto st = static_cast<cudaStream_t>(stream);
  LLMPROF_K_DISPATCH(dtype, launch_merge, o, o_strides, out, shape, st)
}
