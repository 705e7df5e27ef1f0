// Session 32 microbench: gemv.cu's one-row GEMV with its unroll (weight loads in
// flight per row per lane) and rows per warp as template parameters, to compare at Llama-3.1-8B's
// decode shapes (down: k 14,336, where cuBLAS is taken today).
// Built as norm_bench.cu is, against commit a6e3c7d's gemv.cu (call A; calls B and C added variants and shapes).
#include "gemv.cu"
extern "C" int llmprof_k_programmatic_launch(void) { return 0; }
extern "C" void llmprof_k_set_programmatic_launch(int) {}
namespace {
template <typename T, int U, int R, int W>
__global__ void __launch_bounds__(W * 32) gemv_v(const T* __restrict__ x, const T* __restrict__ w,
                                                  T* __restrict__ y, int64_t n, int64_t k) {
  constexpr int kV = 8, kStep = 32 * kV;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t n0 = ((int64_t)blockIdx.x * W + warp) * R;
  if (n0 >= n) return;
  const T* rows[R];
#pragma unroll
  for (int r = 0; r < R; ++r) rows[r] = w + min(n0 + r, n - 1) * k;
  float acc[R];
#pragma unroll
  for (int r = 0; r < R; ++r) acc[r] = 0.f;
  auto fma_block = [&](const uint4 (&wv)[R], int64_t c) {
    const uint4 xv = *reinterpret_cast<const uint4*>(x + c);
    const T* xe = reinterpret_cast<const T*>(&xv);
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const T* we = reinterpret_cast<const T*>(&wv[r]);
#pragma unroll
      for (int e = 0; e < kV; ++e) acc[r] = fmaf(to_f(xe[e]), to_f(we[e]), acc[r]);
    }
  };
  int64_t c = (int64_t)lane * kV;
  for (; c + (U - 1) * kStep < k; c += U * kStep) {
    uint4 wv[U][R];
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int r = 0; r < R; ++r) wv[u][r] = __ldcs(reinterpret_cast<const uint4*>(rows[r] + c + u * kStep));
#pragma unroll
    for (int u = 0; u < U; ++u) fma_block(wv[u], c + u * kStep);
  }
  for (; c < k; c += kStep) {
    uint4 wv[R];
#pragma unroll
    for (int r = 0; r < R; ++r) wv[r] = __ldcs(reinterpret_cast<const uint4*>(rows[r] + c));
    fma_block(wv, c);
  }
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int o = 16; o > 0; o /= 2) acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], o);
  if (lane == 0) {
#pragma unroll
    for (int r = 0; r < R; ++r)
      if (n0 + r < n) y[n0 + r] = from_f<T>(acc[r]);
  }
}
using B = __nv_bfloat16;
template <int U, int R, int W>
int run_v(const void* x, const void* w, void* y, int64_t n, int64_t k, void* st) {
  const unsigned blocks = (unsigned)((n + W * R - 1) / (W * R));
  gemv_v<B, U, R, W><<<blocks, W * 32, 0, (cudaStream_t)st>>>((const B*)x, (const B*)w, (B*)y, n, k);
  return (int)cudaGetLastError();
}
}  // namespace
extern "C" int gb_today(const void* x, const void* w, void* y, int64_t n, int64_t k, void* st) {
  return launch_gemv<B>(x, w, nullptr, y, 1, n, k, (cudaStream_t)st);
}
#define V(U, R, W) \
  extern "C" int gb_u##U##_r##R##_w##W(const void* x, const void* w, void* y, int64_t n, int64_t k, void* st) { \
    return run_v<U, R, W>(x, w, y, n, k, st); }
V(4, 2, 8) V(8, 2, 8) V(8, 1, 8) V(16, 1, 8) V(4, 1, 8) V(8, 2, 4) V(8, 1, 4) V(6, 2, 8)
V(4, 4, 8) V(2, 4, 8) V(2, 8, 8) V(4, 4, 4) V(4, 2, 4) V(5, 4, 8) V(5, 2, 8)
