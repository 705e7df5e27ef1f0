// Session 32 microbench: add + RMSNorm kernels of add_rms_norm.cu at prefill and
// decode row counts, each variant by its own entry point. Built with nvcc into a .so, timed from
// Python (norm_bench.py).
// Built against commit a6e3c7d's add_rms_norm.cu (nb_today: its warp-per-row kernel from 1,024 rows):
// nvcc -O3 -std=c++17 -c -Xcompiler -fPIC -gencode arch=compute_90,code=sm_90
// -I src/worker/csrc/kernels norm_bench.cu, then g++ -shared ... -l:libcudart.so.13.
#include "add_rms_norm.cu"
extern "C" int llmprof_k_programmatic_launch(void) { return 0; }
extern "C" void llmprof_k_set_programmatic_launch(int) {}

namespace {
// The rows kernel with R rows (warps) per block.
template <typename T, int kVecs, int R>
__global__ void rows_r(const T* __restrict__ x, const T* __restrict__ delta,
                       const T* __restrict__ weight, T* __restrict__ sum_out, T* __restrict__ out,
                       int64_t rows, int64_t hidden, float eps) {
  constexpr int V = 16 / sizeof(T);
  using Vt = llmprof_k::Vec<T, V>;
  const int lane = threadIdx.x % 32;
  const int64_t row = (int64_t)blockIdx.x * R + threadIdx.x / 32;
  if (row >= rows) return;
  const int64_t nvec = hidden / V;
  const Vt* xr = reinterpret_cast<const Vt*>(x + row * hidden);
  const Vt* dr = reinterpret_cast<const Vt*>(delta + row * hidden);
  Vt* sr = reinterpret_cast<Vt*>(sum_out + row * hidden);
  const Vt* wr = reinterpret_cast<const Vt*>(weight);
  Vt s[kVecs], dv[kVecs];
#pragma unroll
  for (int j = 0; j < kVecs; ++j) {
    const int64_t i = lane + 32 * j;
    if (i < nvec) { s[j] = xr[i]; dv[j] = dr[i]; }
  }
  float sq = 0.f;
#pragma unroll
  for (int j = 0; j < kVecs; ++j) {
    const int64_t i = lane + 32 * j;
    if (i < nvec) {
      const Vt a = s[j], d = dv[j];
#pragma unroll
      for (int c = 0; c < V; ++c) {
        const float v = round_to<T>(__fadd_rn(to_f(a.e[c]), to_f(d.e[c])));
        s[j].e[c] = from_f<T>(v);
        sq = __fmaf_rn(v, v, sq);
      }
      sr[i] = s[j];
    }
  }
  for (int o = 16; o > 0; o /= 2) sq += __shfl_xor_sync(0xffffffffu, sq, o);
  const float rstd = rsqrtf(sq / (float)hidden + eps);
  Vt* orow = reinterpret_cast<Vt*>(out + row * hidden);
#pragma unroll
  for (int j = 0; j < kVecs; ++j) {
    const int64_t i = lane + 32 * j;
    if (i < nvec) {
      const Vt wj = wr[i];
      Vt o;
#pragma unroll
      for (int c = 0; c < V; ++c)
        o.e[c] = from_f<T>(__fmul_rn(__fmul_rn(to_f(s[j].e[c]), rstd), to_f(wj.e[c])));
      orow[i] = o;
    }
  }
}
using B = __nv_bfloat16;
}  // namespace

#define ARGS const void *x, const void *d, const void *w, void *s, void *o, int64_t rows, int64_t hidden, float eps, void *st
#define PTRS static_cast<const B*>(x), static_cast<const B*>(d), static_cast<const B*>(w), static_cast<B*>(s), static_cast<B*>(o)
// today's choice
extern "C" int nb_today(ARGS) { return launch_add_rms_norm<B>(x, d, w, s, o, rows, hidden, eps, (cudaStream_t)st); }
// block per row, 256 threads
extern "C" int nb_vec(ARGS) {
  const int64_t pt = (hidden / 8 + kThreads - 1) / kThreads;
  auto* k = pt <= 1 ? add_rms_norm_vec<B, 1> : pt <= 2 ? add_rms_norm_vec<B, 2> : pt <= 4 ? add_rms_norm_vec<B, 4> : add_rms_norm_vec<B, 8>;
  k<<<(unsigned)rows, kThreads, 0, (cudaStream_t)st>>>(PTRS, hidden, eps);
  return (int)cudaGetLastError();
}
template <int R>
int rows_launch(ARGS) {
  const int64_t pl = (hidden / 8 + 31) / 32;
  auto* k = pl <= 2 ? rows_r<B, 2, R> : pl <= 4 ? rows_r<B, 4, R> : pl <= 8 ? rows_r<B, 8, R> : rows_r<B, 16, R>;
  k<<<(unsigned)((rows + R - 1) / R), 32 * R, 0, (cudaStream_t)st>>>(PTRS, rows, hidden, eps);
  return (int)cudaGetLastError();
}
extern "C" int nb_rows1(ARGS) { return rows_launch<1>(x, d, w, s, o, rows, hidden, eps, st); }
extern "C" int nb_rows2(ARGS) { return rows_launch<2>(x, d, w, s, o, rows, hidden, eps, st); }
extern "C" int nb_rows4(ARGS) { return rows_launch<4>(x, d, w, s, o, rows, hidden, eps, st); }
extern "C" int nb_rows8w(ARGS) { return rows_launch<8>(x, d, w, s, o, rows, hidden, eps, st); }
