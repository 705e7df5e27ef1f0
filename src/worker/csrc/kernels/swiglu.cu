// SwiGLU's activation in one kernel (launch.h): silu(gate)·up from the fused gate/up
// projection's output [rows, 2f] → [rows, f], replacing silu and the multiply over strided
// halves (two to four libtorch kernels, reports/performance-history.md "Round 2, session 8"). It
// rounds where they round: silu (x / (1 + e^−x) in fp32, as libtorch computes it) is stored in the
// element type, then the product. Calls of at least 2^20 output values (prefills) whose halves
// are whole 16-byte vectors (all of DeepSeek-OCR's) take the vector kernel; smaller calls
// (DeepSeek-OCR's decode steps), other widths and unaligned inputs the element kernel, with the
// same values.
#include "dtype.cuh"
#include "launch.h"
#include "pdl.cuh"

#include <cuda_runtime.h>
#include <math.h>

namespace {

using llmprof_k::from_f;
using llmprof_k::round_to;
using llmprof_k::to_f;

constexpr int kThreads = 256;

template <typename T>
__global__ void silu_mul(const T* __restrict__ gate_up, T* __restrict__ out, int64_t rows,
                         int64_t f) {
  llmprof_k::begin_after_previous_grid();
  const int64_t n = rows * f;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t r = i / f, c = i % f;
    const float g = to_f(gate_up[r * 2 * f + c]);
    const float u = to_f(gate_up[r * 2 * f + f + c]);
    const float silu = round_to<T>(__fdiv_rn(g, __fadd_rn(1.f, expf(-g))));
    out[i] = from_f<T>(__fmul_rn(silu, u));
  }
}

// The same values from 16-byte vectors (V elements of gate and of up per thread), for rows whose
// halves start on 16-byte boundaries: one index division per V elements instead of one per
// element, and 16-byte loads (a prefill's gate/up output is 0.3 GB per MoE layer at batch 8);
// for a prefill's many rows.
template <typename T, int V>
__global__ void silu_mul_vec(const T* __restrict__ gate_up, T* __restrict__ out, int64_t rows,
                             int64_t f) {
  llmprof_k::begin_after_previous_grid();
  using Vt = llmprof_k::Vec<T, V>;
  const int64_t per_row = f / V, n = rows * per_row;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t r = i / per_row, c = (i - r * per_row) * V;
    const T* row = gate_up + r * 2 * f;
    const Vt g = *reinterpret_cast<const Vt*>(row + c);
    const Vt u = *reinterpret_cast<const Vt*>(row + f + c);
    Vt o;
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const float gk = to_f(g.e[k]);
      const float silu = round_to<T>(__fdiv_rn(gk, __fadd_rn(1.f, expf(-gk))));
      o.e[k] = from_f<T>(__fmul_rn(silu, to_f(u.e[k])));
    }
    *reinterpret_cast<Vt*>(out + r * f + c) = o;
  }
}

// Below this many output values (DeepSeek-OCR's decode steps) the element kernel's one value
// per thread spreads the exponentials over more of the GPU and finishes sooner (run HA: 1.9 µs
// a call in vectors against 1.6 per element at batch 8); prefills are far above it.
constexpr int64_t kVectorMinValues = int64_t{1} << 20;

unsigned grid_for(int64_t items) {
  const int64_t blocks = (items + kThreads - 1) / kThreads;
  return (unsigned)(blocks < 65535 * 8 ? blocks : 65535 * 8);
}

// Whether a call takes the vector kernel.
template <typename T>
bool vector_path(const void* gate_up, const void* out, int64_t rows, int64_t f) {
  return rows * f >= kVectorMinValues && f % (16 / sizeof(T)) == 0 &&
         llmprof_k::aligned16(gate_up) && llmprof_k::aligned16(out);
}

template <typename T>
int launch_silu_mul(const void* gate_up, void* out, int64_t rows, int64_t f,
                    cudaStream_t stream) {
  constexpr int V = 16 / sizeof(T);
  const T* in = static_cast<const T*>(gate_up);
  T* o = static_cast<T*>(out);
  if (vector_path<T>(gate_up, out, rows, f)) {
    return (int)llmprof_k::launch(silu_mul_vec<T, V>, grid_for(rows * (f / V)), kThreads, 0,
                                  stream, in, o, rows, f);
  }
  return (int)llmprof_k::launch(silu_mul<T>, grid_for(rows * f), kThreads, 0, stream, in, o, rows,
                                f);
}

template <typename T>
int report_path(const void* gate_up, const void* out, int64_t rows, int64_t f, int* vectors) {
  *vectors = vector_path<T>(gate_up, out, rows, f) ? 1 : 0;
  return 0;
}

}  // namespace

extern "C" int llmprof_k_silu_mul_uses_vectors(int dtype, const void* gate_up, const void* out,
                                               int64_t rows, int64_t f, int* vectors) {
  LLMPROF_K_DISPATCH(dtype, report_path, gate_up, out, rows, f, vectors)
}

extern "C" int llmprof_k_silu_mul(int dtype, const void* gate_up, void* out, int64_t rows,
                                  int64_t f, void* stream) {
  if (rows < 1 || f < 1) return (int)cudaErrorInvalidValue;
  auto st = static_cast<cudaStream_t>(stream);
  LLMPROF_K_DISPATCH(dtype, launch_silu_mul, gate_up, out, rows, f, st)
}
