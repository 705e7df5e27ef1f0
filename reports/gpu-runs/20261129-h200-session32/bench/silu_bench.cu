// Session 32 microbenchmark: swiglu.cu's vector kernel against forms with U vectors a thread
// (every load issued before the first use) at prefill sizes. Built as norm_bench.cu is.
#include "swiglu.cu"
extern "C" int llmprof_k_programmatic_launch(void) { return 0; }
extern "C" void llmprof_k_set_programmatic_launch(int) {}
namespace {
template <typename T, int V, int U>
__global__ void silu_mul_u(const T* __restrict__ gate_up, T* __restrict__ out, int64_t rows, int64_t f) {
  using Vt = llmprof_k::Vec<T, V>;
  const int64_t per_row = f / V, n = rows * per_row;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i0 = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i0 < n; i0 += stride * U) {
    Vt g[U], u[U];
    int64_t r[U], c[U];
#pragma unroll
    for (int j = 0; j < U; ++j) {
      const int64_t i = i0 + j * stride;
      if (i < n) {
        r[j] = i / per_row; c[j] = (i - r[j] * per_row) * V;
        const T* row = gate_up + r[j] * 2 * f;
        g[j] = *reinterpret_cast<const Vt*>(row + c[j]);
        u[j] = *reinterpret_cast<const Vt*>(row + f + c[j]);
      }
    }
#pragma unroll
    for (int j = 0; j < U; ++j) {
      const int64_t i = i0 + j * stride;
      if (i < n) {
        Vt o;
#pragma unroll
        for (int k = 0; k < V; ++k) {
          const float gk = to_f(g[j].e[k]);
          const float silu = round_to<T>(__fdiv_rn(gk, __fadd_rn(1.f, expf(-gk))));
          o.e[k] = from_f<T>(__fmul_rn(silu, to_f(u[j].e[k])));
        }
        *reinterpret_cast<Vt*>(out + r[j] * f + c[j]) = o;
      }
    }
  }
}
using B = __nv_bfloat16;
template <int U, int BPS>
int run_u(const void* gu, void* o, int64_t rows, int64_t f, void* st) {
  int sms = 0; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  silu_mul_u<B, 8, U><<<sms * BPS, 256, 0, (cudaStream_t)st>>>((const B*)gu, (B*)o, rows, f);
  return (int)cudaGetLastError();
}
}  // namespace
extern "C" int sb_today(const void* gu, void* o, int64_t rows, int64_t f, void* st) {
  return launch_silu_mul<B>(gu, o, rows, f, (cudaStream_t)st);
}
extern "C" int sb_u1_g8(const void* gu, void* o, int64_t rows, int64_t f, void* st) { return run_u<1, 8>(gu, o, rows, f, st); }
extern "C" int sb_u2_g8(const void* gu, void* o, int64_t rows, int64_t f, void* st) { return run_u<2, 8>(gu, o, rows, f, st); }
extern "C" int sb_u4_g8(const void* gu, void* o, int64_t rows, int64_t f, void* st) { return run_u<4, 8>(gu, o, rows, f, st); }
extern "C" int sb_u2_g4(const void* gu, void* o, int64_t rows, int64_t f, void* st) { return run_u<2, 4>(gu, o, rows, f, st); }
extern "C" int sb_u4_g4(const void* gu, void* o, int64_t rows, int64_t f, void* st) { return run_u<4, 4>(gu, o, rows, f, st); }
