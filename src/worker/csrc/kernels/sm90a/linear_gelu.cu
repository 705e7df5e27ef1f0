// y = act(x·Wᵀ + b) in one Hopper GEMM (CUTLASS 3's TMA warp-specialized kernel with an epilogue
// that adds the bias to the fp32 accumulator and applies the activation before rounding once
// to bf16): SAM's MLP without the separate GELU pass over its 3,072-wide activations
// (reports/performance-history.md "Round 2, session 12"), and CLIP's with its quickGELU,
// v·σ(1.702·v) (session 18). Built for sm_90a only (build_kernels.rs); the
// model calls it on compute capability 9.0 only (ffi/kernels_gemm.rs says where it runs) and uses
// cuBLAS + libtorch's GELU elsewhere.
//
// The epilogue's GELU is not overlapped with the tensor cores (the cooperative schedule runs it
// in the warps that issue the MMAs), so its instruction count is the kernel's cost: erf from
// Abramowitz & Stegun 7.1.26 (5 FMAs, one reciprocal, one exponential; |Δerf| ≤ 1.5e-7, below
// bf16's rounding by four orders) took 248 µs where CUDA's erff took 263, the GEMM alone 189.
#include "../launch.h"
#include "cutlass_launch.h"

#include <cuda_runtime.h>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/epilogue/thread/activation.h"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/util/packed_stride.hpp"

namespace {

using namespace cute;

using Element = cutlass::bfloat16_t;
using Accumulator = float;
// x [m, k] row-major is A (k-major); W [n, k] row-major is B "column-major" (k-major as well);
// y [m, n] row-major.
using LayoutA = cutlass::layout::RowMajor;
using LayoutB = cutlass::layout::ColumnMajor;
using LayoutD = cutlass::layout::RowMajor;
constexpr int kAlign = 16 / sizeof(Element);

// GELU(v) = v·Φ(v) with erf from Abramowitz & Stegun 7.1.26 (|error| ≤ 1.5e-7):
// erfc(z) = t·(a1 + t·(a2 + … a5·t))·e^(−z²), t = 1 / (1 + p·z), z = |v|/√2 ≥ 0.
__host__ __device__ inline float gelu_as(float v) {
  const float z = fabsf(v) * 0.70710678118654752f;
#ifdef __CUDA_ARCH__
  const float t = __fdividef(1.f, fmaf(0.3275911f, z, 1.f));
  const float e = __expf(-z * z);
#else
  const float t = 1.f / fmaf(0.3275911f, z, 1.f);
  const float e = expf(-z * z);
#endif
  float poly = fmaf(1.061405429f, t, -1.453152027f);
  poly = fmaf(poly, t, 1.421413741f);
  poly = fmaf(poly, t, -0.284496736f);
  poly = fmaf(poly, t, 0.254829592f);
  const float tail = 0.5f * poly * t * e;  // Φ(−|v|)
  return v * (v >= 0.f ? 1.f - tail : tail);
}

// quickGELU(v) = v·σ(1.702·v) = v / (1 + e^(−1.702·v)), as CLIP's fp32 activation.
__host__ __device__ inline float quick_gelu(float v) {
#ifdef __CUDA_ARCH__
  return __fdividef(v, 1.f + __expf(-1.702f * v));
#else
  return v / (1.f + expf(-1.702f * v));
#endif
}

// The activations as CUTLASS epilogue functors, on one value or an array of them.
#define LLMPROF_ACTIVATION(Name, fn)                                                          \
  template <typename T>                                                                      \
  struct Name {                                                                              \
    static const bool kIsHeavy = true;                                                       \
    CUTLASS_HOST_DEVICE T operator()(T const& v) const { return T(fn(float(v))); }           \
  };                                                                                         \
  template <typename T, int N>                                                               \
  struct Name<cutlass::Array<T, N>> {                                                        \
    static const bool kIsHeavy = true;                                                       \
    CUTLASS_HOST_DEVICE cutlass::Array<T, N> operator()(cutlass::Array<T, N> const& v) const { \
      cutlass::Array<T, N> y;                                                                \
      _Pragma("unroll")                                                                      \
      for (int i = 0; i < N; ++i) y[i] = T(fn(float(v[i])));                                 \
      return y;                                                                              \
    }                                                                                        \
  };

LLMPROF_ACTIVATION(GeluAS, gelu_as)
LLMPROF_ACTIVATION(QuickGelu, quick_gelu)
#undef LLMPROF_ACTIVATION

// A GEMM whose epilogue computes Act(alpha·acc + bias) in fp32 and stores bf16 (beta = 0, no
// source tensor).
template <template <class> class Act, class TileShape, class ClusterShape, class MainSchedule,
          class EpiSchedule>
struct Config {
  using Fusion = cutlass::epilogue::fusion::LinCombPerColBiasEltAct<
      Act, Element, Accumulator, Element, Element, Accumulator>;

  using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, Accumulator, Accumulator, void, LayoutD,
      kAlign, Element, LayoutD, kAlign, EpiSchedule, Fusion>::CollectiveOp;

  using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Element, LayoutA, kAlign, Element,
      LayoutB, kAlign, Accumulator, TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename Epilogue::SharedStorage))>,
      MainSchedule>::CollectiveOp;

  using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, Mainloop,
                                                      Epilogue, cutlass::gemm::PersistentScheduler>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
};

// 128×256 tiles over 2×1 clusters, two consumer warp groups sharing each tile (cooperative): of
// the schedules tried on an H100 (reports/performance-history.md, session 12) the fastest with this
// epilogue, together with 256×128 over 1×2.
template <template <class> class Act>
using Gemm128x256 = Config<Act, Shape<_128, _256, _64>, Shape<_2, _1, _1>,
                           cutlass::gemm::KernelTmaWarpSpecializedCooperative,
                           cutlass::epilogue::TmaWarpSpecializedCooperative>;

template <class C>
typename C::Gemm::Arguments arguments(const void* x, const void* w, const void* b, void* y, int m,
                                      int n, int k) {
  using Kernel = typename C::Kernel;
  using StrideA = typename Kernel::StrideA;
  using StrideB = typename Kernel::StrideB;
  using StrideC = typename Kernel::StrideC;
  using StrideD = typename Kernel::StrideD;
  int device = 0;
  cudaGetDevice(&device);
  cutlass::KernelHardwareInfo hw{};
  hw.device_id = device;
  hw.sm_count = llmprof_cutlass::sm_count(device);
  typename C::Gemm::Arguments args{
      cutlass::gemm::GemmUniversalMode::kGemm,
      {m, n, k, 1},
      {static_cast<const Element*>(x), cutlass::make_cute_packed_stride(StrideA{}, {m, k, 1}),
       static_cast<const Element*>(w), cutlass::make_cute_packed_stride(StrideB{}, {n, k, 1})},
      {{},
       nullptr,
       cutlass::make_cute_packed_stride(StrideC{}, {m, n, 1}),
       static_cast<Element*>(y),
       cutlass::make_cute_packed_stride(StrideD{}, {m, n, 1})},
      hw};
  args.epilogue.thread.alpha = 1.f;
  args.epilogue.thread.beta = 0.f;
  args.epilogue.thread.bias_ptr = static_cast<const Element*>(b);
  return args;
}

template <class C>
int64_t workspace_of(int64_t m, int64_t n, int64_t k) {
  return (int64_t)C::Gemm::get_workspace_size(
      arguments<C>(nullptr, nullptr, nullptr, nullptr, (int)m, (int)n, (int)k));
}

// Returns 0, a cudaError_t or −(CUTLASS status) (cutlass_launch.h).
template <class C>
int run(const void* x, const void* w, const void* b, void* y, int64_t m, int64_t n, int64_t k,
        void* workspace, cudaStream_t stream) {
  return llmprof_cutlass::run<typename C::Gemm>(
      arguments<C>(x, w, b, y, (int)m, (int)n, (int)k), workspace, stream);
}

}  // namespace

// The variants llmprof_k_sm90_linear_gelu runs (launch.h): 0 GELU (erf), 1 quickGELU, both on
// 128×256 tiles (for CLIP's fc1 at 8 pages, 128×128 tiles were slower at 4,848 rows, 0.091
// against 0.077 ms, and within 4 % elsewhere: reports/performance-history.md, session 18).
#define LLMPROF_LINEAR_GELU_VARIANTS(CALL)                                                    \
  switch (variant) {                                                                         \
    case 0: return CALL(Gemm128x256<GeluAS>);                                               \
    case 1: return CALL(Gemm128x256<QuickGelu>);                                            \
    default: break;                                                                          \
  }

extern "C" int64_t llmprof_k_sm90_linear_gelu_workspace(int64_t m, int64_t n, int64_t k,
                                                        int variant) {
#define LLMPROF_WORKSPACE(C) workspace_of<C>(m, n, k)
  LLMPROF_LINEAR_GELU_VARIANTS(LLMPROF_WORKSPACE)
#undef LLMPROF_WORKSPACE
  return -1;
}

extern "C" const char* llmprof_k_sm90_status_string(int status) {
  return cutlass::cutlassGetStatusString(static_cast<cutlass::Status>(status));
}

extern "C" int llmprof_k_sm90_linear_gelu(const void* x, const void* w, const void* b, void* y,
                                          int64_t m, int64_t n, int64_t k, void* workspace,
                                          void* stream, int variant) {
  if (m < 1 || n < 1 || k < 1 || m > INT32_MAX || n > INT32_MAX || k > INT32_MAX ||
      n % kAlign != 0 || k % kAlign != 0) {
    return (int)cudaErrorInvalidValue;
  }
  auto st = static_cast<cudaStream_t>(stream);
#define LLMPROF_RUN(C) run<C>(x, w, b, y, m, n, k, workspace, st)
  LLMPROF_LINEAR_GELU_VARIANTS(LLMPROF_RUN)
#undef LLMPROF_RUN
  return (int)cudaErrorInvalidValue;
}
