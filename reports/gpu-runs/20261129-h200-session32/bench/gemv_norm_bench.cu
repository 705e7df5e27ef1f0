// Session 32 microbenchmark: the one-row GEMV with the residual add + RMSNorm before it folded
// into each block's prologue (the normed row computed into shared memory, as add_rms_norm_vec
// computes it, block 0 writing the sum), against the add + RMSNorm kernel then the GEMV, and
// against the GEMV alone (the prologue's cost). Built with gemv.cu; add_rms_norm.cu linked in.
#include "gemv.cu"
extern "C" int llmprof_k_programmatic_launch(void) { return 0; }
extern "C" void llmprof_k_set_programmatic_launch(int) {}
extern "C" int llmprof_k_add_rms_norm(int dtype, const void* x, const void* delta, const void* weight,
                                      void* sum, void* out, int64_t rows, int64_t hidden, float eps, void* stream);
namespace {
constexpr int NT = 256;
template <typename T, int kVecs, int W, int R>
__global__ void __launch_bounds__(W * 32)
    gemv_add_norm(const T* __restrict__ x, const T* __restrict__ delta, const T* __restrict__ nw,
                  float eps, T* __restrict__ sum_out, const T* __restrict__ w, T* __restrict__ y,
                  int64_t n, int64_t k) {
  static_assert(W * 32 == NT, "the norm's thread mapping is add_rms_norm_vec's");
  constexpr int kV = 8, kStep = 32 * kV;
  using Vt = llmprof_k::Vec<T, kV>;
  extern __shared__ uint4 xs_raw[];
  __shared__ float partial[NT / 32];
  T* xs = reinterpret_cast<T*>(xs_raw);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t n0 = ((int64_t)blockIdx.x * W + warp) * R;
  const bool active = n0 < n;
  const T* rows[R];
#pragma unroll
  for (int r = 0; r < R; ++r) rows[r] = w + min(n0 + r, n - 1) * k;
  float acc[R];
#pragma unroll
  for (int r = 0; r < R; ++r) acc[r] = 0.f;
  int64_t c = (int64_t)lane * kV;
  uint4 first[kUnroll][R];
  const bool whole_first = active && c + (kUnroll - 1) * kStep < k;
  if (whole_first) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
#pragma unroll
      for (int r = 0; r < R; ++r) first[u][r] = __ldcs(reinterpret_cast<const uint4*>(rows[r] + c + u * kStep));
  }
  llmprof_k::begin_after_previous_grid();
  // The add + RMSNorm of add_rms_norm_vec, its normed row into shared memory.
  {
    const int64_t nvec = k / kV;
    const Vt* xr = reinterpret_cast<const Vt*>(x);
    const Vt* dr = reinterpret_cast<const Vt*>(delta);
    const Vt* wr = reinterpret_cast<const Vt*>(nw);
    Vt s[kVecs], d[kVecs], wn[kVecs];
#pragma unroll
    for (int j = 0; j < kVecs; ++j) {
      const int64_t i = threadIdx.x + (int64_t)j * NT;
      if (i < nvec) { s[j] = xr[i]; d[j] = dr[i]; wn[j] = wr[i]; }
    }
    float sq = 0.f;
#pragma unroll
    for (int j = 0; j < kVecs; ++j) {
      const int64_t i = threadIdx.x + (int64_t)j * NT;
      if (i < nvec) {
#pragma unroll
        for (int e = 0; e < kV; ++e) {
          const float v = llmprof_k::round_to<T>(__fadd_rn(to_f(s[j].e[e]), to_f(d[j].e[e])));
          s[j].e[e] = from_f<T>(v);
          sq = __fmaf_rn(v, v, sq);
        }
        if (blockIdx.x == 0) reinterpret_cast<Vt*>(sum_out)[i] = s[j];
      }
    }
    for (int o = 16; o > 0; o /= 2) sq += __shfl_xor_sync(0xffffffffu, sq, o);
    if (lane == 0) partial[warp] = sq;
    __syncthreads();
    float total = 0.f;
#pragma unroll
    for (int q = 0; q < NT / 32; ++q) total += partial[q];
    const float rstd = rsqrtf(total / (float)k + eps);
#pragma unroll
    for (int j = 0; j < kVecs; ++j) {
      const int64_t i = threadIdx.x + (int64_t)j * NT;
      if (i < nvec) {
        Vt o;
#pragma unroll
        for (int e = 0; e < kV; ++e) o.e[e] = from_f<T>(__fmul_rn(__fmul_rn(to_f(s[j].e[e]), rstd), to_f(wn[j].e[e])));
        reinterpret_cast<Vt*>(xs)[i] = o;
      }
    }
    __syncthreads();
  }
  if (!active) return;
  auto fma_block = [&](const uint4 (&wv)[R], int64_t cc) {
    const uint4 xv = *reinterpret_cast<const uint4*>(xs + cc);
    const T* xe = reinterpret_cast<const T*>(&xv);
    float xf[kV];
#pragma unroll
    for (int e = 0; e < kV; ++e) xf[e] = to_f(xe[e]);
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const T* we = reinterpret_cast<const T*>(&wv[r]);
#pragma unroll
      for (int e = 0; e < kV; ++e) acc[r] = fmaf(xf[e], to_f(we[e]), acc[r]);
    }
  };
  if (whole_first) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) fma_block(first[u], c + u * kStep);
    c += kUnroll * kStep;
  }
  for (; c + (kUnroll - 1) * kStep < k; c += kUnroll * kStep) {
    uint4 wv[kUnroll][R];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
#pragma unroll
      for (int r = 0; r < R; ++r) wv[u][r] = __ldcs(reinterpret_cast<const uint4*>(rows[r] + c + u * kStep));
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) fma_block(wv[u], c + u * kStep);
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
}  // namespace
#define ARGS const void *x, const void *d, const void *nw, void *sum, void *normed, const void *w, void *y, int64_t n, int64_t k, void *st
extern "C" int gn_gemv_only(ARGS) { return launch_gemv<B>(normed, w, nullptr, y, 1, n, k, (cudaStream_t)st); }
extern "C" int gn_two_kernels(ARGS) {
  int e = llmprof_k_add_rms_norm(1, x, d, nw, sum, normed, 1, k, 1e-5f, st);
  if (e) return e;
  return launch_gemv<B>(normed, w, nullptr, y, 1, n, k, (cudaStream_t)st);
}
extern "C" int gn_fused(ARGS) {
  const unsigned blocks = (unsigned)((n + 15) / 16);
  const size_t smem = (size_t)k * sizeof(B);
  const int pt = (int)((k / 8 + NT - 1) / NT);
  auto* kern = pt <= 1 ? gemv_add_norm<B, 1, 8, 2> : pt <= 2 ? gemv_add_norm<B, 2, 8, 2> : gemv_add_norm<B, 4, 8, 2>;
  if (smem > 48 * 1024) cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
  kern<<<blocks, NT, smem, (cudaStream_t)st>>>((const B*)x, (const B*)d, (const B*)nw, 1e-5f, (B*)sum, (const B*)w, (B*)y, n, k);
  return (int)cudaGetLastError();
}
